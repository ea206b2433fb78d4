// `loom bench structured`: the cost of constrained decoding (JSON schema vs none).
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { ENGINE_DEFAULTS } from '../engine/options.js';
import type { Backend } from '../engine/options.js';
import { formatStructuredReport, runStructuredBench } from '../bench/structured.js';
import { addLoadFlags, loadOptionsOf } from './load-flags.js';
import type { LoadFlags } from './load-flags.js';
import { intArg } from './bench-args.js';

interface StructuredFlags extends LoadFlags {
  model: string;
  streams: number;
  inputLen: number;
  outputLen: number;
  repeatRuns: number;
  backend: Backend;
  threads?: number;
  seed: number;
  schema?: string;
  json?: boolean;
}

export function benchStructuredCommand(): Command {
  const cmd = new Command('structured')
    .description(
      'TPOT of concurrent greedy streams with a JSON schema against the same streams without one (alternating runs, ' +
        'in-process engine), and the schema compile time, first and cached',
    )
    .requiredOption('-m, --model <path>', 'GGUF file or Hugging Face model folder')
    .addOption(new Option('--streams <n>', 'concurrent requests').default(16).argParser(intArg('streams')))
    .addOption(new Option('--input-len <n>', 'prompt tokens').default(32).argParser(intArg('input-len')))
    .addOption(new Option('--output-len <n>', 'generated tokens per stream').default(64).argParser(intArg('output-len', 2)))
    .addOption(new Option('--repeat-runs <n>', 'reported runs of each kind').default(3).argParser(intArg('repeat-runs')))
    .addOption(new Option('--backend <name>', 'kernels').choices(['auto', 'native', 'reference']).default(ENGINE_DEFAULTS.backend))
    .addOption(new Option('--threads <n>', 'compute threads of the native core').argParser(intArg('threads')))
    .addOption(new Option('--seed <s>', 'seed of the prompts').default(0).argParser(intArg('seed', 0)))
    .option('--schema <file>', 'a JSON Schema file to run under (default: 64+ typed records, longer than the output)')
    .option('--json', 'print one JSON object with every figure and the settings')
    .action(async (f: StructuredFlags) => {
      const report = await runStructuredBench(
        {
          model: f.model,
          streams: f.streams,
          inputLen: f.inputLen,
          outputLen: f.outputLen,
          repeatRuns: f.repeatRuns,
          backend: f.backend,
          seed: f.seed,
          ...(f.threads !== undefined && { threads: f.threads }),
          load: loadOptionsOf(f),
          ...(f.schema !== undefined && { schema: JSON.parse(readFileSync(f.schema, 'utf8')) as unknown }),
        },
        f.json ? undefined : (line) => process.stderr.write(line + '\n'),
      );
      process.stdout.write((f.json ? JSON.stringify(report) : formatStructuredReport(report)) + '\n');
    });
  return addLoadFlags(cmd);
}
