// `loom bench peer`: loom against llama.cpp (node-llama-cpp from oracle/) on one GGUF file.
import { Command, Option } from 'commander';
import { BENCH_TYPES } from '../bench/bench-types.js';
import { BENCH_SHAPES } from '../bench/bench-shapes.js';
import type { BenchWeightType } from '../bench/bench-types.js';
import type { BenchShapeName } from '../bench/bench-shapes.js';
import { runPeerBench } from '../bench/peer.js';
import { formatPeerReport } from '../bench/peer-report.js';
import { intArg, intListArg } from './bench-args.js';
import { addLoadFlags, loadOptionsOf } from './load-flags.js';
import type { LoadFlags } from './load-flags.js';

interface PeerFlags extends LoadFlags {
  model?: string;
  makeModel?: BenchShapeName;
  type: BenchWeightType;
  layers?: number;
  threads?: number;
  promptLen: number;
  decodeTokens: number;
  sequences: number[];
  context?: number[];
  contextOnly?: boolean;
  llamaFlashAttention?: boolean;
  batchPromptLen: number;
  warmup: number;
  repeat: number;
  seed: number;
  json?: boolean;
}

export function benchPeerCommand(): Command {
  const cmd = new Command('peer')
    .description(
      'loom and llama.cpp (node-llama-cpp, installed into oracle/ by `npm run bench:peer`) on the same GGUF file with the ' +
        'same threads, one after the other: prefill tokens/s of one prompt, decode tokens/s of one sequence, and ' +
        'tokens/s of N sequences decoding together (llama.cpp: all N in one llama_decode per step); ratios loom/llama.cpp',
    )
    .option('-m, --model <file>', 'GGUF file')
    .addOption(new Option('--make-model <shape>', 'measure a random-weight GGUF of this shape (made once, cached in dist/bench-models/)').choices(Object.keys(BENCH_SHAPES)))
    .addOption(new Option('--type <type>', 'weight type of --make-model').choices([...BENCH_TYPES]).default('q8_0'))
    .addOption(new Option('--layers <n>', "--make-model with fewer layers than the shape's own (a token's cost is linear in them)").argParser(intArg('layers')))
    .addOption(new Option('--threads <n>', 'compute threads of both (default: hardware threads)').argParser(intArg('threads')))
    .addOption(new Option('--prompt-len <n>', 'prompt tokens of the prefill and single-decode cases').default(512).argParser(intArg('prompt-len', 2)))
    .addOption(new Option('--decode-tokens <n>', 'measured decode steps per case').default(64).argParser(intArg('decode-tokens')))
    .addOption(new Option('--sequences <list>', 'batched cases: sequences decoding together').default([4, 16, 64], '4,16,64').argParser(intListArg('sequences')))
    .addOption(new Option('--context <list>', 'long contexts, e.g. 16384,32768: for each, one prompt of that many tokens prefilled (prefill tok/s), then --decode-tokens decoded at that context (decode tok/s); the prompt computed once for both').argParser(intListArg('context', 2)))
    .option('--context-only', 'run only the --context cases')
    .option('--llama-flash-attention', "llama.cpp with flash attention on (its CPU default, -fa auto, turns it on; off by default here as before)")
    .addOption(new Option('--batch-prompt-len <n>', 'prompt tokens of each batched sequence').default(16).argParser(intArg('batch-prompt-len', 2)))
    .addOption(new Option('--warmup <n>', 'unmeasured decode steps before each window').default(4).argParser(intArg('warmup', 0)))
    .addOption(new Option('--repeat <n>', 'runs of every case on each side (alternating)').default(3).argParser(intArg('repeat')))
    .addOption(new Option('--seed <s>', 'seed of the prompt token ids').default(0).argParser(intArg('seed', 0)))
    .option('--json', 'print one JSON object with every figure and the settings')
    .action(async (f: PeerFlags) => {
      const report = await runPeerBench(
        {
          ...(f.model !== undefined && { model: f.model }),
          ...(f.makeModel !== undefined && { makeModel: { shape: f.makeModel, type: f.type, ...(f.layers !== undefined && { layers: f.layers }) } }),
          ...(f.threads !== undefined && { threads: f.threads }),
          promptLen: f.promptLen,
          decodeTokens: f.decodeTokens,
          sequences: f.sequences,
          ...(f.context !== undefined && { context: f.context }),
          ...(f.contextOnly === true && { contextOnly: true }),
          ...(f.llamaFlashAttention === true && { llamaFlashAttention: true }),
          batchPromptLen: f.batchPromptLen,
          warmup: f.warmup,
          repeat: f.repeat,
          seed: f.seed,
          load: loadOptionsOf(f),
        },
        f.json ? undefined : (line) => process.stderr.write(line + '\n'),
      );
      process.stdout.write((f.json ? JSON.stringify(report) : formatPeerReport(report)) + '\n');
    });
  return addLoadFlags(cmd);
}
