// `loom bench peer`: loom and llama.cpp on the same GGUF file with the same thread count, one
// after the other in one process: prefill tokens/s of one long prompt (time to first token),
// decode tokens/s of one sequence after it, and tokens/s of N sequences decoding together.
// Both sides get the same token ids. Each figure is measured `repeat` times, the sides
// alternating (loom, llama.cpp, loom, …) so a noisy machine disturbs both alike; the report
// gives median, min and max, and the ratio loom / llama.cpp of the medians.
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError } from '../errors.js';
import { loadModel } from '../model/load.js';
import type { LoadOptions } from '../model/load.js';
import { Rng } from '../engine/rng.js';
import { vocabularyIds } from './datasets.js';
import { BENCH_MODELS_DIR, ensureBenchModel } from './make-model.js';
import type { BenchShapeName, BenchWeightType } from './make-model.js';
import { LLAMA_CPP_SETTINGS, LlamaCppSide, importNodeLlamaCpp } from './peer-llamacpp.js';
import { LoomSide } from './peer-loom.js';
import type { ExpertUse, PeerSide, Profile, TimedTokens } from './peer-types.js';
import { percentile } from './stats.js';
import { decodeWeightBytes } from './weight-traffic.js';
import { probeReadBandwidth } from '../kernels/native.js';

export interface PeerBenchOptions {
  readonly model?: string;
  readonly makeModel?: { readonly shape: BenchShapeName; readonly type: BenchWeightType; readonly layers?: number };
  readonly threads?: number;
  readonly promptLen: number;
  readonly decodeTokens: number;
  readonly sequences: readonly number[];
  /** prompt length of each batched sequence */
  readonly batchPromptLen: number;
  /** unmeasured decode steps before each window */
  readonly warmup: number;
  readonly repeat: number;
  readonly seed: number;
  /** --no-mmap, --mlock: how both sides hold the weights */
  readonly load?: LoadOptions;
}

export interface Measure {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly runs: readonly number[];
}

export interface PeerSideFigures {
  readonly tokensPerSec: Measure;
  /** forward calls per decode step (llama.cpp: llama_decode calls; 1 = every sequence in one call) */
  readonly callsPerStep?: number;
  /** where the wall time of the last run's window went */
  readonly profile?: Profile;
  /** MoE models: the experts the last run's window ran */
  readonly experts?: ExpertUse;
}

export interface PeerRow {
  /** 'prefill' | 'decode' | 'batched' */
  readonly kind: string;
  readonly label: string;
  readonly sequences: number;
  readonly loom: PeerSideFigures;
  readonly llamaCpp: PeerSideFigures;
  /** median loom / median llama.cpp */
  readonly ratio: number;
  readonly goal?: number;
  readonly met?: boolean;
}

/** One-sequence decode against the memory: the weights a token reads and the read bandwidth probed in the run. */
export interface DecodeTraffic {
  /** weight bytes read per decoded token (weight-traffic.ts) */
  readonly weightBytes: number;
  /** median of the read-bandwidth probes (GB/s), one before each round of runs */
  readonly readGBs: number;
  readonly probes: readonly number[];
  /** GB/s of weights at each side's median decode tokens/s, and as a fraction of readGBs */
  readonly loom: { readonly gbs: number; readonly fraction: number };
  readonly llamaCpp: { readonly gbs: number; readonly fraction: number };
  readonly goalFraction: number;
}

export interface PeerReport {
  readonly settings: PeerBenchOptions & { readonly model: string; readonly threads: number; readonly llamaCpp: string; readonly loom: string };
  /** 1-minute load average of the machine before and after (other work on it skews both sides, llama.cpp's spinning pool most) */
  readonly loadAverage: { readonly before: number; readonly after: number };
  readonly rows: PeerRow[];
  readonly decodeTraffic?: DecodeTraffic;
}

/** the read probe: a buffer larger than any cache, for about half a second per round */
const PROBE_BYTES = 512 * 2 ** 20;
const PROBE_SECONDS = 0.5;
/** one-sequence decode should read its weights at this fraction of the probed bandwidth (issue 18) */
const DECODE_BANDWIDTH_GOAL = 0.8;

export function measure(runs: readonly number[]): Measure {
  return { median: percentile(runs, 50), min: Math.min(...runs), max: Math.max(...runs), runs };
}

interface Case {
  readonly kind: 'prefill' | 'decode' | 'batched';
  readonly label: string;
  readonly sequences: number;
  readonly goal?: number;
  readonly run: (side: PeerSide) => Promise<TimedTokens>;
}

function cases(o: PeerBenchOptions, prompt: Int32Array, batchPrompts: (n: number) => Int32Array[]): Case[] {
  return [
    {
      kind: 'prefill', label: `prefill, ${o.promptLen}-token prompt`, sequences: 1, goal: 1,
      run: async (side) => ({ tokens: prompt.length, ms: await side.prefill(prompt), calls: 1 }),
    },
    {
      kind: 'decode', label: 'decode, 1 sequence', sequences: 1, goal: 1,
      run: (side) => side.decode(prompt, o.warmup, o.decodeTokens),
    },
    ...o.sequences.map((n): Case => ({
      kind: 'batched', label: `${n} sequences together`, sequences: n, ...(n >= 16 && { goal: 2 }),
      run: (side) => side.batched(batchPrompts(n), o.warmup, o.decodeTokens),
    })),
  ];
}

function randomPrompt(vocab: Int32Array, length: number, rng: Rng): Int32Array {
  const p = new Int32Array(length);
  for (let i = 0; i < length; i++) p[i] = vocab[Math.floor(rng.next() * vocab.length)]!;
  return p;
}

export function resolvePeerModel(o: Pick<PeerBenchOptions, 'model' | 'makeModel'>, log: (line: string) => void): string {
  if (o.model !== undefined && o.makeModel !== undefined) throw new InvalidArgumentError('give --model or --make-model, not both');
  if (o.model !== undefined) return o.model;
  if (o.makeModel === undefined) throw new InvalidArgumentError('give --model FILE.gguf or --make-model SHAPE');
  const { path, made } = ensureBenchModel(BENCH_MODELS_DIR, { ...o.makeModel, seed: 0 }, log);
  log(`${made ? 'made' : 'using cached'} ${path}`);
  return path;
}

export async function runPeerBench(o: PeerBenchOptions, log: (line: string) => void = () => {}): Promise<PeerReport> {
  const path = resolvePeerModel(o, log);
  const loadBefore = loadavg()[0]!;
  const threads = o.threads ?? availableParallelism();
  const model = loadModel(path, o.load);
  const vocab = vocabularyIds(model.tokenizer, model.config.vocabSize);
  const rng = new Rng(o.seed);
  const prompt = randomPrompt(vocab, o.promptLen, rng);
  const maxSeqs = Math.max(1, ...o.sequences);
  const shortPrompts = Array.from({ length: maxSeqs }, () => randomPrompt(vocab, o.batchPromptLen, rng));
  const perSeq = Math.max(o.promptLen, o.batchPromptLen) + 1 + o.warmup + o.decodeTokens + 16;
  if (perSeq > model.config.contextLength) throw new InvalidArgumentError(`prompt + decode tokens (${perSeq}) exceed the model's context of ${model.config.contextLength}`);

  log(`loading ${path} for loom (native, ${threads} threads) and llama.cpp (${threads} threads)…`);
  const nlc = await importNodeLlamaCpp(fileURLToPath(new URL('../../../', import.meta.url)));
  const sides: PeerSide[] = [new LoomSide(model, threads, maxSeqs, perSeq), await LlamaCppSide.open(nlc, path, threads, o.load)];
  const all = cases(o, prompt, (n) => shortPrompts.slice(0, n));
  const results = sides.map(() => all.map(() => [] as TimedTokens[]));
  const weightBytes = decodeWeightBytes(model);
  const probes: number[] = [];
  try {
    for (const side of sides) await side.prefill(prompt); // warm: first-use allocations
    for (let rep = 0; rep < o.repeat; rep++) {
      if (weightBytes !== undefined) probes.push(probeReadBandwidth(PROBE_BYTES, PROBE_SECONDS));
      for (const [s, side] of sides.entries()) {
        for (const [c, kase] of all.entries()) {
          const r = await kase.run(side);
          results[s]![c]!.push(r);
          log(`run ${rep + 1}/${o.repeat} ${side.name.padEnd(9)} ${kase.label}: ${((r.tokens * 1000) / r.ms).toFixed(1)} tok/s`);
        }
      }
    }
  } finally {
    for (const side of sides) await side.close();
  }
  const figures = (runs: readonly TimedTokens[], kase: Case): PeerSideFigures => {
    const last = runs.at(-1);
    const steps = kase.kind === 'prefill' ? undefined : o.decodeTokens;
    return {
      tokensPerSec: measure(runs.map((r) => (r.tokens * 1000) / r.ms)),
      ...(steps !== undefined && last && { callsPerStep: last.calls / steps }),
      ...(last?.profile && { profile: last.profile }),
      ...(last?.experts && { experts: last.experts }),
    };
  };
  const rows = all.map((kase, c): PeerRow => {
    const loom = figures(results[0]![c]!, kase);
    const llamaCpp = figures(results[1]![c]!, kase);
    const ratio = loom.tokensPerSec.median / llamaCpp.tokensPerSec.median;
    return { kind: kase.kind, label: kase.label, sequences: kase.sequences, loom, llamaCpp, ratio, ...(kase.goal !== undefined && { goal: kase.goal, met: ratio >= kase.goal }) };
  });
  const decode = rows.find((r) => r.kind === 'decode');
  const traffic = (tokensPerSec: number, readGBs: number) => ({ gbs: (weightBytes! * tokensPerSec) / 1e9, fraction: (weightBytes! * tokensPerSec) / 1e9 / readGBs });
  const readGBs = percentile(probes, 50);
  const decodeTraffic: DecodeTraffic | undefined =
    weightBytes !== undefined && decode && probes.length > 0
      ? {
          weightBytes, readGBs, probes, goalFraction: DECODE_BANDWIDTH_GOAL,
          loom: traffic(decode.loom.tokensPerSec.median, readGBs),
          llamaCpp: traffic(decode.llamaCpp.tokensPerSec.median, readGBs),
        }
      : undefined;
  return {
    ...(decodeTraffic && { decodeTraffic }),
    settings: { ...o, model: path, threads, llamaCpp: LLAMA_CPP_SETTINGS, loom: 'EngineCore stepped in-process, native kernels, f16 KV cache, prefix cache off, greedy, ignore_eos' },
    rows,
    loadAverage: { before: loadBefore, after: loadavg()[0]! },
  };
}
