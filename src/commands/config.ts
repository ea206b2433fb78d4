// Every option of a command also from the environment (`--max-num-seqs` ← LOOM_MAX_NUM_SEQS)
// and from `--config FILE.yaml` (`max-num-seqs: 64`, or `maxNumSeqs`). The command line wins,
// then the environment, then the file, then the defaults. Values go through the option's own
// parser and choices, so `LOOM_PORT=abc` fails the way `--port abc` does.
import { readFileSync } from 'node:fs';
import { Option } from 'commander';
import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { InvalidArgumentError } from '../errors.js';

const TRUE = /^(1|true|yes|on)$/i;
const FALSE = /^(0|false|no|off)$/i;

/** `--no-enable-prefix-caching` → `enable-prefix-caching` */
function baseName(opt: Option): string {
  return (opt.long ?? '').replace(/^--(no-)?/, '');
}

export function envName(opt: Option): string {
  return 'LOOM_' + baseName(opt).toUpperCase().replace(/-/g, '_');
}

function settable(cmd: Command): Option[] {
  return cmd.options.filter((o) => o.long && o.long !== '--config' && o.long !== '--help');
}

function toBoolean(raw: unknown, where: string): boolean {
  if (typeof raw === 'boolean') return raw;
  if (typeof raw === 'string' && TRUE.test(raw)) return true;
  if (typeof raw === 'string' && FALSE.test(raw)) return false;
  throw new InvalidArgumentError(`${where}: expected true or false, got ${JSON.stringify(raw)}`);
}

/** `negated`: the name said `no-…`, so true means off */
function toValue(opt: Option, raw: unknown, where: string, negated = false): unknown {
  if (!opt.required && !opt.optional) return toBoolean(raw, where) !== negated; // a switch (isBoolean() leaves out --no-…)
  if (typeof raw !== 'string' && typeof raw !== 'number') throw new InvalidArgumentError(`${where}: expected a string or a number, got ${JSON.stringify(raw)}`);
  const text = String(raw);
  if (opt.argChoices && !opt.argChoices.includes(text)) {
    throw new InvalidArgumentError(`${where}: "${text}" is not one of ${opt.argChoices.join(', ')}`);
  }
  return opt.parseArg ? opt.parseArg(text, undefined) : text;
}

function readConfig(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InvalidArgumentError(`--config ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (err) {
    throw new InvalidArgumentError(`--config ${path}: not valid YAML (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`);
  }
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data)) throw new InvalidArgumentError(`--config ${path}: expected a mapping of option names to values`);
  return data as Record<string, unknown>;
}

function unset(cmd: Command, opt: Option): boolean {
  const source = cmd.getOptionValueSource(opt.attributeName());
  return source === undefined || source === 'default';
}

/** Adds `--config FILE` and the LOOM_… variables to every option of `cmd`. */
export function withEnvAndConfig(cmd: Command): Command {
  cmd.addOption(new Option('--config <file>', 'read options from a YAML file (keys are option names: port: 8080)'));
  cmd.addHelpText('after', '\nEvery option can also come from the environment, LOOM_ and its name in capitals (--max-num-seqs: LOOM_MAX_NUM_SEQS=64;\nswitches take 1/0 or true/false), or from --config FILE.yaml (LOOM_CONFIG). The command line wins, then the\nenvironment, then the file.');
  cmd.hook('preAction', () => {
    const options = settable(cmd);
    for (const opt of options) {
      const name = envName(opt);
      const raw = process.env[name];
      if (raw === undefined || !unset(cmd, opt)) continue;
      cmd.setOptionValueWithSource(opt.attributeName(), toValue(opt, raw, name), 'env');
    }
    const file = (cmd.getOptionValue('config') as string | undefined) ?? process.env.LOOM_CONFIG;
    if (!file) return;
    for (const [key, raw] of Object.entries(readConfig(file))) {
      const opt = options.find((o) => baseName(o) === key || o.long === `--${key}` || o.attributeName() === key);
      if (!opt) throw new InvalidArgumentError(`--config ${file}: unknown option "${key}" (see loom ${cmd.name()} --help)`);
      if (!unset(cmd, opt)) continue;
      // `no-enable-prefix-caching: true` says the opposite of `enable-prefix-caching: true`
      const negated = opt.negate && key === `no-${baseName(opt)}`;
      cmd.setOptionValueWithSource(opt.attributeName(), toValue(opt, raw, `${file}: ${key}`, negated), 'config');
    }
  });
  return cmd;
}
