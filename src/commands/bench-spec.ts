// `loom bench spec`: one stream with and without speculative decoding (prompt lookup or a draft model).
import { Command, Option } from 'commander';
import { ENGINE_DEFAULTS } from '../engine/options.js';
import type { Backend } from '../engine/options.js';
import { DEFAULT_MODEL_PATH } from '../model/model-arg.js';
import { formatSpecReport, runSpecBench } from '../bench/spec.js';
import { addLoadFlags, loadOptionsOf } from './load-flags.js';
import type { LoadFlags } from './load-flags.js';
import { intArg, intListArg } from './bench-args.js';

interface SpecFlags extends LoadFlags {
  model: string;
  verifyModel?: string;
  draftModel?: string;
  numSpeculativeTokens: number;
  promptLookupMax: number;
  promptLookupMin: number;
  outputLen: number;
  repeatRuns: number;
  batchSizes: number[];
  context: number;
  backend: Backend;
  threads?: number;
  json?: boolean;
}

export function benchSpecCommand(): Command {
  const cmd = new Command('spec')
    .description(
      'speculative decoding (ngram prompt lookup, or --draft-model) for one greedy stream: acceptance and tokens/s with and without it on ' +
        'prompts that invite copying (retell, continue a list, edit a passage); with --verify-model, the forward cost of ' +
        'K+1 tokens per sequence against 1 at several batch sizes and the speedup those drafts would give there',
    )
    .option('-m, --model <path>', 'the model that drafts are measured on (default: the built-in stories260K)', DEFAULT_MODEL_PATH)
    .option('--draft-model <path>', 'draft with this model (same vocabulary as --model: vLLM\'s "draft_model") instead of prompt lookup, and time its K draft steps + verify against plain decode')
    .option('--verify-model <path>', 'a bandwidth-bound model (e.g. `loom bench make-model --shape qwen2.5-0.5b`) to time the verify step on')
    .addOption(new Option('-k, --num-speculative-tokens <k>', 'draft tokens per step').default(4).argParser(intArg('num-speculative-tokens')))
    .addOption(new Option('--prompt-lookup-max <n>', 'longest suffix n-gram looked up').default(4).argParser(intArg('prompt-lookup-max')))
    .addOption(new Option('--prompt-lookup-min <n>', 'shortest suffix n-gram looked up').default(2).argParser(intArg('prompt-lookup-min')))
    .addOption(new Option('--output-len <n>', 'generated tokens per run').default(200).argParser(intArg('output-len', 2)))
    .addOption(new Option('--repeat-runs <n>', 'measured runs of each kind (after one warm-up)').default(3).argParser(intArg('repeat-runs')))
    .addOption(new Option('--batch-sizes <list>', 'running sequences at which the verify step is timed').default([1, 2, 4, 8, 16]).argParser(intListArg('batch-sizes')))
    .addOption(new Option('--context <n>', 'context length the verify step is timed at').default(256).argParser(intArg('context')))
    .addOption(new Option('--backend <name>', 'kernels').choices(['auto', 'native', 'reference']).default(ENGINE_DEFAULTS.backend))
    .addOption(new Option('--threads <n>', 'compute threads of the native core').argParser(intArg('threads')))
    .option('--json', 'print one JSON object with every figure and the settings')
    .action((f: SpecFlags) => {
      const report = runSpecBench(
        {
          model: f.model,
          ...(f.verifyModel !== undefined && { verifyModel: f.verifyModel }),
          ...(f.draftModel !== undefined && { draftModel: f.draftModel }),
          numSpeculativeTokens: f.numSpeculativeTokens,
          promptLookupMax: f.promptLookupMax,
          promptLookupMin: f.promptLookupMin,
          outputLen: f.outputLen,
          repeatRuns: f.repeatRuns,
          batchSizes: f.batchSizes,
          context: f.context,
          backend: f.backend,
          ...(f.threads !== undefined && { threads: f.threads }),
          load: loadOptionsOf(f),
        },
        f.json ? undefined : (line) => process.stderr.write(line + '\n'),
      );
      process.stdout.write((f.json ? JSON.stringify(report) : formatSpecReport(report)) + '\n');
    });
  return addLoadFlags(cmd);
}
