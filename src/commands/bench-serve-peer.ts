// `loom bench serve-peer`: bench serve's scenario against loom serve and llama.cpp's llama-server, alternating.
import { appendFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { InvalidArgumentError } from '../errors.js';
import { BENCH_TYPES } from '../bench/bench-types.js';
import { BENCH_SHAPES } from '../bench/bench-shapes.js';
import type { BenchWeightType } from '../bench/bench-types.js';
import type { BenchShapeName } from '../bench/bench-shapes.js';
import { resolvePeerModel } from '../bench/peer.js';
import { SERVE_PEER_DEFAULTS, runServePeer } from '../bench/serve-peer.js';
import { formatServePeer, servePeerJson } from '../bench/serve-peer-report.js';
import { parseRates } from '../bench/serve-sweep.js';
import { intArg } from './bench-args.js';

interface ServePeerFlags {
  model?: string;
  makeModel?: BenchShapeName;
  type: BenchWeightType;
  threads?: number;
  rounds: number;
  requestRate: number[];
  numPrompts: number;
  maxConcurrency: number;
  randomInputLen: number;
  randomOutputLen: number;
  seed: number;
  loomArgs?: string;
  json?: boolean;
  outputFile?: string;
}

export function benchServePeerCommand(): Command {
  const d = SERVE_PEER_DEFAULTS;
  return new Command('serve-peer')
    .description(
      "bench serve's scenario (default: the standard one, random 128 in / 128 out, 256 prompts, concurrency 64) against loom serve " +
        "and llama.cpp's llama-server on the same GGUF with the same threads, alternating runs; llama-server is built once from the " +
        'source node-llama-cpp ships (oracle/; needs cmake, git and a C++ compiler, no network) and cached in $LOOM_CACHE/llama-server/ ' +
        '(-np = max concurrency, -cb, -t/-tb threads, a slot holds prompt + output + 64). Prints every run, then per rate the medians and ratios.',
    )
    .option('-m, --model <file>', 'GGUF file')
    .addOption(new Option('--make-model <shape>', 'a random-weight GGUF of this shape (made once, cached in dist/bench-models/)').choices(Object.keys(BENCH_SHAPES)).default('smollm2-135m'))
    .addOption(new Option('--type <type>', 'weight type of --make-model').choices([...BENCH_TYPES]).default('q8_0'))
    .addOption(new Option('--threads <n>', 'compute threads of both servers (default: hardware threads)').argParser(intArg('threads')))
    .addOption(new Option('--rounds <n>', 'runs of every rate on each server').default(d.rounds).argParser(intArg('rounds')))
    .addOption(
      new Option('--request-rate <list>', 'request rates, comma-separated (Poisson arrivals); inf = all at once').default([Infinity], 'inf').argParser((v) => {
        try {
          return parseRates(v);
        } catch (e) {
          throw new InvalidArgumentError((e as Error).message);
        }
      }),
    )
    .addOption(new Option('--num-prompts <n>', 'requests per run').default(d.numPrompts).argParser(intArg('num-prompts')))
    .addOption(new Option('--max-concurrency <n>', 'most requests in flight (and llama-server slots)').default(d.maxConcurrency).argParser(intArg('max-concurrency')))
    .addOption(new Option('--random-input-len <n>', 'prompt tokens').default(d.inputLen).argParser(intArg('random-input-len')))
    .addOption(new Option('--random-output-len <n>', 'output tokens').default(d.outputLen).argParser(intArg('random-output-len')))
    .addOption(new Option('--seed <s>', 'seed of the prompts and arrivals').default(0).argParser(intArg('seed', 0)))
    .option('--loom-args <flags>', 'more loom serve flags, space-separated (e.g. "--step-time-factor 3")')
    .option('--json', 'print one JSON object with every run and the summary')
    .option('--output-file <file>', 'append that JSON object as one line')
    .action(async (f: ServePeerFlags) => {
      const log = (line: string): void => void process.stderr.write(line + '\n');
      const model = resolvePeerModel(f.model !== undefined ? { model: f.model } : { makeModel: { shape: f.makeModel!, type: f.type } }, log);
      const r = await runServePeer(
        {
          model,
          ...(f.threads !== undefined && { threads: f.threads }),
          rounds: f.rounds,
          rates: f.requestRate,
          numPrompts: f.numPrompts,
          maxConcurrency: f.maxConcurrency,
          inputLen: f.randomInputLen,
          outputLen: f.randomOutputLen,
          seed: f.seed,
          loomArgs: f.loomArgs?.trim() ? f.loomArgs.trim().split(/\s+/) : [],
        },
        log,
      );
      const json = JSON.stringify(servePeerJson(r));
      if (f.outputFile !== undefined) appendFileSync(f.outputFile, json + '\n');
      process.stdout.write((f.json ? json : formatServePeer(r)) + '\n');
    });
}
