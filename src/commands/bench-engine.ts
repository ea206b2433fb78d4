// `loom bench engine`: throughput and latency of the engine behind its worker boundary.
import { Command, Option } from 'commander';
import { InvalidArgumentError } from '../errors.js';
import type { Backend } from '../engine/options.js';
import { ENGINE_DEFAULTS } from '../engine/options.js';
import { runEngineBench } from '../bench/engine.js';
import type { BenchMode } from '../bench/engine.js';
import { formatEngineReport } from '../bench/engine-report.js';
import { intArg, numberArg } from './bench-args.js';
import { kvCacheDtypeOption } from './parse.js';
import type { KvCacheDtypeOption } from './parse.js';
import { addLoadFlags, loadOptionsOf } from './load-flags.js';
import type { LoadFlags } from './load-flags.js';

interface EngineFlags extends LoadFlags {
  model: string;
  mode: BenchMode;
  numRequests: number;
  inputLen: number;
  outputLen: number;
  rangeRatio: number;
  requestRate: number;
  warmupRuns: number;
  repeatRuns: number;
  prefixCache: 'on' | 'off';
  keepPrefixCache?: boolean;
  backend: Backend;
  threads?: number;
  maxNumSeqs?: number;
  maxNumBatchedTokens?: number;
  kvCacheMemory?: string;
  kvCacheDtype: KvCacheDtypeOption;
  seed: number;
  json?: boolean;
}

const rate = (value: string): number => {
  if (value.trim().toLowerCase() === 'inf') return Infinity;
  const n = Number(value);
  if (!(n > 0) || !Number.isFinite(n)) throw new InvalidArgumentError(`--request-rate expects a number > 0 or "inf", got "${value}"`);
  return n;
};

export function benchEngineCommand(): Command {
  const cmd = new Command('engine')
    .description(
      'throughput and latency of the engine behind its worker boundary on random prompts (uniform, seeded, from the ' +
        "model's non-special vocabulary); every request is greedy with ignore_eos and max_tokens = its output length. " +
        'Lengths are uniform integers in [ceil(L·R), L] for L = --input-len / --output-len and R = --range-ratio.',
    )
    .requiredOption('-m, --model <path>', 'GGUF file or Hugging Face model folder')
    .addOption(new Option('--mode <mode>', 'offline: every request at once; online: Poisson arrivals at --request-rate').choices(['offline', 'online']).default('offline'))
    .addOption(new Option('--num-requests <n>', 'requests per run').default(64).argParser(intArg('num-requests')))
    .addOption(new Option('--input-len <n>', 'prompt tokens (upper end of the range)').default(64).argParser(intArg('input-len')))
    .addOption(new Option('--output-len <n>', 'generated tokens (upper end of the range)').default(64).argParser(intArg('output-len')))
    .addOption(new Option('--range-ratio <r>', 'lengths drawn in [ceil(L·R), L]; 1 = fixed lengths').default(1).argParser(numberArg('range-ratio', Number.MIN_VALUE, 1)))
    .addOption(new Option('--request-rate <rps>', 'requests/s of the Poisson arrivals (online mode)').default(Infinity, 'inf').argParser(rate))
    .addOption(new Option('--warmup-runs <n>', 'unreported runs first').default(1).argParser(intArg('warmup-runs', 0)))
    .addOption(new Option('--repeat-runs <n>', 'reported runs').default(3).argParser(intArg('repeat-runs')))
    .addOption(new Option('--prefix-cache <on|off>', 'automatic prefix caching').choices(['on', 'off']).default('on'))
    .option('--keep-prefix-cache', 'do not empty the prefix cache before each run')
    .addOption(new Option('--backend <name>', 'kernels').choices(['auto', 'native', 'reference']).default(ENGINE_DEFAULTS.backend))
    .addOption(new Option('--threads <n>', 'compute threads of the native core (default: hardware threads)').argParser(intArg('threads')))
    .addOption(new Option('--max-num-seqs <n>', `most sequences per step (engine default ${ENGINE_DEFAULTS.maxNumSeqs})`).argParser(intArg('max-num-seqs')))
    .addOption(new Option('--max-num-batched-tokens <n>', `token budget per step (engine default ${ENGINE_DEFAULTS.maxNumBatchedTokens})`).argParser(intArg('max-num-batched-tokens')))
    .addOption(new Option('--kv-cache-memory <size>', `KV cache: bytes ("2GiB") or a fraction of free memory (engine default ${ENGINE_DEFAULTS.kvCacheMemory})`))
    .addOption(kvCacheDtypeOption())
    .addOption(new Option('--seed <s>', 'seed of the prompts, lengths and arrivals').default(0).argParser(intArg('seed', 0)))
    .option('--json', 'print one JSON object with every figure and the settings')
    .action(async (f: EngineFlags) => {
      const report = await runEngineBench(
        {
          model: f.model,
          mode: f.mode,
          numRequests: f.numRequests,
          inputLen: f.inputLen,
          outputLen: f.outputLen,
          rangeRatio: f.rangeRatio,
          requestRate: f.requestRate,
          warmupRuns: f.warmupRuns,
          repeatRuns: f.repeatRuns,
          prefixCache: f.prefixCache === 'on',
          keepPrefixCache: f.keepPrefixCache ?? false,
          seed: f.seed,
          backend: f.backend,
          ...(f.threads !== undefined && { threads: f.threads }),
          ...(f.maxNumSeqs !== undefined && { maxNumSeqs: f.maxNumSeqs }),
          ...(f.maxNumBatchedTokens !== undefined && { maxNumBatchedTokens: f.maxNumBatchedTokens }),
          ...(f.kvCacheMemory !== undefined && { kvCacheMemory: f.kvCacheMemory }),
          kvCacheDtype: f.kvCacheDtype,
          load: loadOptionsOf(f),
        },
        f.json ? undefined : (line) => process.stderr.write(line + '\n'),
      );
      process.stdout.write((f.json ? JSON.stringify(report) : formatEngineReport(report)) + '\n');
    });
  return addLoadFlags(cmd);
}
