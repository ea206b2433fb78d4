// `loom bench peer`: loom and llama.cpp on the same GGUF file with the same thread count, one
// after the other in one process: prefill tokens/s of one long prompt (time to first token),
// decode tokens/s of one sequence after it, and tokens/s of N sequences decoding together;
// with --context, one sequence at each long context: its prefill, then its decode there.
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
import type { BenchWeightType } from './bench-types.js';
import type { BenchShapeName } from './bench-shapes.js';
import { LlamaCppSide, importNodeLlamaCpp, llamaCppSettings } from './peer-llamacpp.js';
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
  /** long contexts: for each, one prompt of that many tokens prefilled, then decoded at that context (computed once for both rows) */
  readonly context?: readonly number[];
  /** only the --context cases (not the prompt-len prefill and decode nor the batched ones) */
  readonly contextOnly?: boolean;
  /** llama.cpp with flash attention (its CPU default is auto: on) */
  readonly llamaFlashAttention?: boolean;
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
  /** 'prefill' | 'decode' | 'batched' | 'context prefill' | 'context decode' */
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

interface CaseRow {
  readonly kind: 'prefill' | 'decode' | 'batched' | 'context prefill' | 'context decode';
  readonly label: string;
  readonly sequences: number;
  readonly goal?: number;
}

/** one run on a side, giving one figure per row (a long context: its prefill and its decode) */
interface Case {
  readonly rows: readonly CaseRow[];
  readonly run: (side: PeerSide) => Promise<TimedTokens[]>;
}

const one = (row: CaseRow, run: (side: PeerSide) => Promise<TimedTokens>): Case => ({ rows: [row], run: async (side) => [await run(side)] });

function cases(o: PeerBenchOptions, prompt: Int32Array, batchPrompts: (n: number) => Int32Array[], longPrompt: (n: number) => Int32Array): Case[] {
  const short = o.contextOnly ? [] : [
    one({ kind: 'prefill', label: `prefill, ${o.promptLen}-token prompt`, sequences: 1, goal: 1 },
      async (side) => ({ tokens: prompt.length, ms: await side.prefill(prompt), calls: 1 })),
    one({ kind: 'decode', label: 'decode, 1 sequence', sequences: 1, goal: 1 }, (side) => side.decode(prompt, o.warmup, o.decodeTokens)),
    ...o.sequences.map((n) => one({ kind: 'batched', label: `${n} sequences together`, sequences: n, ...(n >= 16 && { goal: 2 }) },
      (side) => side.batched(batchPrompts(n), o.warmup, o.decodeTokens))),
  ];
  const long = (o.context ?? []).map((n): Case => ({
    rows: [
      { kind: 'context prefill', label: `prefill, ${n}-token context`, sequences: 1 },
      { kind: 'context decode', label: `decode at ${n} tokens of context`, sequences: 1 },
    ],
    run: async (side) => {
      const r = await side.longContext(longPrompt(n), o.warmup, o.decodeTokens);
      return [r.prefill, r.decode];
    },
  }));
  return [...short, ...long];
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
  if (o.contextOnly && !o.context?.length) throw new InvalidArgumentError('--context-only needs --context');
  const path = resolvePeerModel(o, log);
  const loadBefore = loadavg()[0]!;
  const threads = o.threads ?? availableParallelism();
  const model = loadModel(path, o.load);
  const vocab = vocabularyIds(model.tokenizer, model.config.vocabSize);
  const rng = new Rng(o.seed);
  const prompt = randomPrompt(vocab, o.promptLen, rng);
  const maxSeqs = Math.max(1, ...o.sequences);
  const shortPrompts = Array.from({ length: maxSeqs }, () => randomPrompt(vocab, o.batchPromptLen, rng));
  const perSeq = Math.max(o.promptLen, o.batchPromptLen, ...(o.context ?? [])) + 1 + o.warmup + o.decodeTokens + 16;
  if (perSeq > model.config.contextLength) throw new InvalidArgumentError(`prompt + decode tokens (${perSeq}) exceed the model's context of ${model.config.contextLength}`);
  // each long context's prompt: the same ids on both sides and in every run
  const longPrompts = new Map((o.context ?? []).map((n) => [n, randomPrompt(vocab, n, rng)]));

  log(`loading ${path} for loom (native, ${threads} threads) and llama.cpp (${threads} threads)…`);
  const nlc = await importNodeLlamaCpp(fileURLToPath(new URL('../../../', import.meta.url)));
  const sides: PeerSide[] = [new LoomSide(model, threads, maxSeqs, perSeq), await LlamaCppSide.open(nlc, path, threads, o.load, o.llamaFlashAttention === true)];
  const all = cases(o, prompt, (n) => shortPrompts.slice(0, n), (n) => longPrompts.get(n)!);
  // [side][case][run] → one figure per row of the case
  const results = sides.map(() => all.map(() => [] as TimedTokens[][]));
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
          kase.rows.forEach((row, i) => log(`run ${rep + 1}/${o.repeat} ${side.name.padEnd(9)} ${row.label}: ${((r[i]!.tokens * 1000) / r[i]!.ms).toFixed(1)} tok/s`));
        }
      }
    }
  } finally {
    for (const side of sides) await side.close();
  }
  const figures = (runs: readonly TimedTokens[], row: CaseRow): PeerSideFigures => {
    const last = runs.at(-1);
    const steps = row.kind === 'prefill' || row.kind === 'context prefill' ? undefined : o.decodeTokens;
    return {
      tokensPerSec: measure(runs.map((r) => (r.tokens * 1000) / r.ms)),
      ...(steps !== undefined && last && { callsPerStep: last.calls / steps }),
      ...(last?.profile && { profile: last.profile }),
      ...(last?.experts && { experts: last.experts }),
    };
  };
  const rows = all.flatMap((kase, c) => kase.rows.map((row, i): PeerRow => {
    const loom = figures(results[0]![c]!.map((r) => r[i]!), row);
    const llamaCpp = figures(results[1]![c]!.map((r) => r[i]!), row);
    const ratio = loom.tokensPerSec.median / llamaCpp.tokensPerSec.median;
    return { kind: row.kind, label: row.label, sequences: row.sequences, loom, llamaCpp, ratio, ...(row.goal !== undefined && { goal: row.goal, met: ratio >= row.goal }) };
  }));
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
    settings: { ...o, model: path, threads, llamaCpp: llamaCppSettings(o.llamaFlashAttention === true), loom: 'EngineCore stepped in-process, native kernels, f16 KV cache, prefix cache off, greedy, ignore_eos' },
    rows,
    loadAverage: { before: loadBefore, after: loadavg()[0]! },
  };
}
