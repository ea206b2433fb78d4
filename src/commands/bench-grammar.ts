// `loom bench grammar [DIR]`: JSON Schema coverage and mask cost, MaskBench's method.
import { Command, Option } from 'commander';
import { formatGrammarReport, runGrammarBench } from '../bench/grammar.js';
import { intArg } from './bench-args.js';

interface GrammarFlags {
  model?: string;
  separators: 'compact' | 'spaced';
  timeout: number;
  filter?: string;
  verbose?: boolean;
  json?: boolean;
}

export function benchGrammarCommand(): Command {
  return new Command('grammar')
    .description(
      'MaskBench on a folder of JSONSchemaBench files: compile each schema, force every valid instance through the token mask ' +
        'and check every invalid one is rejected; passing, compile / validation / invalidation errors, compile and mask time',
    )
    .argument('[dir]', 'folder of {"schema", "tests"} files', '../shared/jsonschema')
    .option('-m, --model <path>', 'the vocabulary of this GGUF file or Hugging Face folder (default: a 32 Ki byte-level BPE one)')
    .addOption(new Option('--separators <style>', 'how instances are written').choices(['compact', 'spaced']).default('compact'))
    .addOption(new Option('--timeout <ms>', 'per schema').default(30000).argParser(intArg('timeout')))
    .option('--filter <text>', 'only files whose name contains this')
    .option('-v, --verbose', 'a line per failing schema on stderr')
    .option('--json', 'print one JSON object with every figure and each schema\'s outcome')
    .action(async (dir: string, f: GrammarFlags) => {
      const report = await runGrammarBench(
        { dir, separators: f.separators, timeoutMs: f.timeout, ...(f.model !== undefined && { model: f.model }), ...(f.filter !== undefined && { filter: f.filter }) },
        f.verbose ? (line) => process.stderr.write(line + '\n') : undefined,
      );
      process.stdout.write((f.json ? JSON.stringify(report) : formatGrammarReport(report)) + '\n');
    });
}
