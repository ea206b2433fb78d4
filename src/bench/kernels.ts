// `loom bench kernels`: this machine's limits (f32 FMA peak, memory read bandwidth, both
// probed by the native core on its own pool in this run) and the native kernels against
// them: matmul per weight type at 1 row (GB/s of weight bytes: a matrix well past the
// last-level cache, so the weights stream from memory) and at many rows (GFLOP/s), and
// paged attention decode (GB/s of KV bytes) at two context lengths, 1 and 16 sequences.
// Each figure is the median of repeated calls (after one warm call). The 1-row share of
// bandwidth is taken against reads of a buffer of the same size probed in alternation with
// the matmul (best of each per round, the median over rounds): on a shared machine the
// bandwidth moves by half within a minute, and a probe from another moment says little.
import type { KvCacheShape, Kernels } from '../kernels/index.js';
import { allocateLarge, cpuFeatures, nativeKernelInfo, nativeR16Interleaver, nativeThreads, probeFmaPeak, probeInt8Peak, probeReadBandwidth } from '../kernels/native.js';
import type { FmaPeak, Int8Peak } from '../kernels/native.js';
import { r16TypeFor } from '../tensor/quant/r16.js';
import { selectKernels } from '../kernels/select.js';
import { GGMLType, rowBytes, typeName } from '../tensor/weight-types.js';
import { f32ToF16 } from '../tensor/half.js';
import { quantize } from '../tensor/quant/quantize.js';
import type { WeightTensor } from '../tensor/weight-tensor.js';
import { Rng } from '../engine/rng.js';
import { percentile } from './stats.js';

export const BENCH_TYPES = [
  GGMLType.F32, GGMLType.F16, GGMLType.BF16, GGMLType.Q8_0, GGMLType.Q4_0, GGMLType.Q4_1, GGMLType.Q5_0, GGMLType.Q5_1,
  GGMLType.IQ4_NL, GGMLType.Q2_K, GGMLType.Q3_K, GGMLType.Q4_K, GGMLType.Q5_K, GGMLType.Q6_K, GGMLType.IQ4_XS,
  GGMLType.MXFP4,
] as const;
/** one-row matmul must reach this share of the read bandwidth for these types */
export const ONE_ROW_GOAL = {
  pct: 80,
  types: ['F16', 'Q8_0', 'Q4_K', 'Q5_K', 'Q5_0', 'Q3_K', 'Q2_K', 'IQ4_XS', 'IQ4_NL', 'Q4_1', 'Q5_1'] as readonly string[],
};
/** many-row matmul must reach this share of the f32 FMA peak (every type) */
export const MANY_ROWS_GOAL_PCT = 70;

export interface KernelBenchOptions {
  readonly threads?: number;
  /** tiny sizes and few repetitions (tests) */
  readonly quick: boolean;
  /** matmul weight types to measure (names as typeName gives them); default all of BENCH_TYPES */
  readonly types?: readonly string[];
}

/** ms per call: median and extremes of `samples` calls */
export interface Timing {
  readonly medianMs: number;
  readonly minMs: number;
  readonly maxMs: number;
  readonly samples: number;
}

export type OneRowFigures = Timing & {
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly weightBytes: number;
  /** weight bytes / median ms */
  readonly gbps: number;
  /** rounds of (read probe of a same-size buffer, matmul calls): best of each per round */
  readonly rounds: readonly { readonly readGBs: number; readonly matmulGBs: number }[];
  /** median over rounds of matmul / read */
  readonly pctBandwidth: number;
};

export interface MatmulFigures {
  readonly type: string;
  /** the load-time layout the weights were measured in, as a loaded model has them (Q8_0_R16), if any */
  readonly layout?: string;
  readonly oneRow: OneRowFigures & { readonly goalPct?: number; readonly met?: boolean };
  /** one row of a small model's width (896 or 1536 inputs): per-row costs and block tails show here */
  readonly shortRow: OneRowFigures;
  readonly manyRows: Timing & { readonly rows: number; readonly inFeatures: number; readonly outFeatures: number; readonly gflops: number; readonly pctPeak: number; readonly goalPct: number; readonly met: boolean;
    /** integer-activation types: share of the int8 product peak */
    readonly pctInt8Peak?: number };
}

export interface AttentionFigures extends Timing {
  readonly context: number;
  readonly sequences: number;
  /** distinct K+V bytes one call reads (GQA: each KV head once) */
  readonly kvBytes: number;
  /** layers rotated through so the KV set exceeds the last-level cache */
  readonly layers: number;
  readonly gbps: number;
  readonly pctBandwidth: number;
}

export interface KernelReport {
  readonly settings: { readonly threads: number; readonly quick: boolean; readonly kernels: string };
  /** peak and bandwidth: the larger of the probes before and after the kernels */
  readonly machine: {
    readonly fmaPeakGflops: number;
    readonly fmaBits: number;
    readonly fmaPeak256Gflops?: number;
    /** integer multiply-add peak (GOP/s) and the instruction it was measured with */
    readonly int8PeakGops: number;
    readonly int8Instruction: string;
    readonly readBandwidthGBs: number;
    readonly bandwidthBufferBytes: number;
    readonly probes: readonly { readonly fmaGflops: number; readonly int8Gops: number; readonly readGBs: number }[];
  };
  readonly matmul: MatmulFigures[];
  readonly attention: AttentionFigures[];
}

interface Sizes {
  probeSeconds: number;
  bandwidthBytes: number;
  /** 1 row: inFeatures and the weight bytes to reach (well past the last-level cache) */
  k1: number;
  oneRowBytes: number;
  /** rounds of (read probe, matmul calls) for the 1-row share of bandwidth; seconds per probe */
  oneRowRounds: number;
  roundReadSeconds: number;
  manyRows: number;
  manyOut: number;
  /** per measurement: at least minReps calls, until `seconds` are spent */
  minReps: number;
  seconds: number;
  contexts: readonly number[];
  sequences: readonly number[];
  kvTargetBytes: number;
}

const FULL: Sizes = {
  probeSeconds: 1, bandwidthBytes: 512 * 2 ** 20, k1: 4096, oneRowBytes: 128 * 2 ** 20, oneRowRounds: 7, roundReadSeconds: 0.1,
  manyRows: 512, manyOut: 2048,
  minReps: 7, seconds: 1, contexts: [1024, 4096], sequences: [1, 16], kvTargetBytes: 128 * 2 ** 20,
};
const QUICK: Sizes = {
  probeSeconds: 0.02, bandwidthBytes: 4 * 2 ** 20, k1: 256, oneRowBytes: 2 ** 20, oneRowRounds: 2, roundReadSeconds: 0.005,
  manyRows: 32, manyOut: 64,
  minReps: 2, seconds: 0.01, contexts: [64, 256], sequences: [1, 4], kvTargetBytes: 2 ** 20,
};

/** SmolLM2-135M's attention: 9 query heads over 3 KV heads of 64, f16 cache, 16-token blocks */
const ATTN = { numHeads: 9, numKvHeads: 3, headDim: 64, blockSize: 16 } as const;
const TILE_ROWS = 64;

export function time(fn: () => void, minReps: number, seconds: number): Timing {
  fn(); // warm: caches, page faults, the pool's first wake
  return timing(samples(fn, minReps, seconds));
}

/** ms of calls of fn: at least minReps, until `seconds` are spent */
function samples(fn: () => void, minReps: number, seconds: number): number[] {
  const ms: number[] = [];
  let spent = 0;
  while (ms.length < minReps || spent < seconds * 1000) {
    const t0 = performance.now();
    fn();
    const t = performance.now() - t0;
    ms.push(t);
    spent += t;
  }
  return ms;
}

function timing(ms: readonly number[]): Timing {
  return { medianMs: percentile(ms, 50), minMs: Math.min(...ms), maxMs: Math.max(...ms), samples: ms.length };
}

function randomF32(n: number, rng: Rng, scale = 1): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (rng.next() * 2 - 1) * scale;
  return out;
}

/**
 * [outFeatures, inFeatures] weights of `type`: TILE_ROWS random rows quantized once, then
 * repeated. They live where a loaded model's do (allocateLarge: huge pages), so a one-row
 * matmul and the read probe, which reads such a buffer, stream from the same kind of memory.
 */
function weights(type: GGMLType, inFeatures: number, outFeatures: number, rng: Rng): WeightTensor {
  const tileRows = Math.min(TILE_ROWS, outFeatures);
  const tile = quantize(type, randomF32(tileRows * inFeatures, rng, 0.05), inFeatures);
  const row = rowBytes(type, inFeatures)!;
  const data = new Uint8Array(allocateLarge(row * outFeatures));
  for (let r = 0; r < outFeatures; r += tileRows) data.set(tile.subarray(0, Math.min(tileRows, outFeatures - r) * row), r * row);
  // in the layout loading gives such a matrix on this machine (tensor/quant/r16.ts)
  const interleave = nativeR16Interleaver();
  const r16 = interleave ? r16TypeFor(type, [inFeatures, outFeatures]) : undefined;
  if (r16 !== undefined) interleave!(r16, data, inFeatures, outFeatures);
  return { name: `bench.${typeName(type)}`, type: r16 ?? type, dims: [inFeatures, outFeatures], data };
}

/** The 1-row figures of a [n, inFeatures] matrix of about s.oneRowBytes against same-size read probes. */
function benchOneRow(k: Kernels, type: GGMLType, inFeatures: number, s: Sizes, rng: Rng): OneRowFigures {
  const row = rowBytes(type, inFeatures)!;
  // whole groups of 16 rows, so a type with a 16-row layout is measured in it (weights())
  const n1 = Math.max(s.manyOut, Math.ceil(s.oneRowBytes / row / 16) * 16);
  const w = weights(type, inFeatures, n1, rng);
  const x1 = randomF32(inFeatures, rng);
  const o1 = new Float32Array(n1);
  const bytes = w.data.length;
  const oneRow = () => k.matmul(o1, x1, w, 1);
  oneRow(); // warm
  const all: number[] = [];
  const rounds: { readGBs: number; matmulGBs: number }[] = [];
  for (let i = 0; i < s.oneRowRounds; i++) {
    const readGBs = probeReadBandwidth(bytes, s.roundReadSeconds);
    const ms = samples(oneRow, Math.ceil(s.minReps / 2), s.seconds / s.oneRowRounds);
    all.push(...ms);
    rounds.push({ readGBs, matmulGBs: bytes / (Math.min(...ms) * 1e6) });
  }
  const t1 = timing(all);
  const pctBandwidth = percentile(rounds.map((r) => (100 * r.matmulGBs) / r.readGBs), 50);
  return { ...t1, inFeatures, outFeatures: n1, weightBytes: bytes, gbps: bytes / (t1.medianMs * 1e6), rounds, pctBandwidth };
}

/** the short row of a type: a small model's hidden width that is whole blocks of it (Qwen2.5-0.5B's 896, else 1.5B's 1536) */
function shortRowWidth(type: GGMLType, s: Sizes): number {
  if (s === QUICK) return s.k1;
  return rowBytes(type, 896) !== undefined ? 896 : 1536;
}

function benchMatmul(k: Kernels, type: GGMLType, s: Sizes, peak: number, rng: Rng): MatmulFigures {
  const name = typeName(type);
  const one = benchOneRow(k, type, s.k1, s, rng);
  const oneGoal = ONE_ROW_GOAL.types.includes(name) ? ONE_ROW_GOAL.pct : undefined;
  const shortRow = benchOneRow(k, type, shortRowWidth(type, s), s, rng);
  // many rows: manyOut output rows of s.k1 inputs
  const wm = weights(type, s.k1, s.manyOut, rng);
  const xm = randomF32(s.manyRows * s.k1, rng);
  const om = new Float32Array(s.manyRows * s.manyOut);
  const tm = time(() => k.matmul(om, xm, wm, s.manyRows), s.minReps, s.seconds);
  const gflops = (2 * s.manyRows * s.k1 * s.manyOut) / (tm.medianMs * 1e6);
  const pctPeak = (100 * gflops) / peak;
  return {
    type: name,
    ...(wm.type !== type && { layout: typeName(wm.type) }),
    oneRow: { ...one, ...(oneGoal !== undefined && { goalPct: oneGoal, met: one.pctBandwidth >= oneGoal }) },
    shortRow,
    manyRows: { ...tm, rows: s.manyRows, inFeatures: s.k1, outFeatures: s.manyOut, gflops, pctPeak, goalPct: MANY_ROWS_GOAL_PCT, met: pctPeak >= MANY_ROWS_GOAL_PCT },
  };
}

/** Decode attention of `sequences` sequences at `context`, rotating over enough cache layers to exceed the LLC. */
function benchAttention(k: Kernels, context: number, sequences: number, s: Sizes, bw: number, rng: Rng): AttentionFigures {
  const { numHeads, numKvHeads, headDim, blockSize } = ATTN;
  const blocksPerSeq = Math.ceil(context / blockSize);
  const numBlocks = blocksPerSeq * sequences;
  const layerElems = numBlocks * blockSize * numKvHeads * headDim;
  const kvBytes = 2 * 2 * context * numKvHeads * headDim * sequences;
  const layers = Math.max(1, Math.min(64, Math.ceil(s.kvTargetBytes / kvBytes)));
  const pattern = new Uint16Array(4096);
  for (let i = 0; i < pattern.length; i++) pattern[i] = f32ToF16((rng.next() * 2 - 1) * 0.5);
  const cache = Array.from({ length: layers }, () => {
    const k = new Uint16Array(layerElems);
    const v = new Uint16Array(layerElems);
    for (let o = 0; o < layerElems; o += pattern.length) {
      k.set(pattern.subarray(0, Math.min(pattern.length, layerElems - o)), o);
      v.set(pattern.subarray(0, Math.min(pattern.length, layerElems - o)), o);
    }
    return { k, v };
  });
  const shape: KvCacheShape = { dtype: 'f16', numBlocks, blockSize, numKvHeads, headDim };
  const blockTables = new Int32Array(numBlocks);
  for (let i = 0; i < numBlocks; i++) blockTables[i] = i; // sequence q owns blocks q·blocksPerSeq …
  const batch = {
    seqStarts: Int32Array.from({ length: sequences + 1 }, (_, i) => i),
    positions: new Int32Array(sequences).fill(context - 1),
    blockTables,
    maxBlocksPerSeq: blocksPerSeq,
  };
  const attn = { numHeads, numKvHeads, headDim, scale: 1 / Math.sqrt(headDim) };
  const q = randomF32(sequences * numHeads * headDim, rng);
  const out = new Float32Array(q.length);
  const t = time(() => {
    for (const layer of cache) k.attention(out, q, layer, shape, batch, attn);
  }, s.minReps, s.seconds);
  const perCall = t.medianMs / layers;
  const gbps = kvBytes / (perCall * 1e6);
  return {
    medianMs: perCall, minMs: t.minMs / layers, maxMs: t.maxMs / layers, samples: t.samples,
    context, sequences, kvBytes, layers, gbps, pctBandwidth: (100 * gbps) / bw,
  };
}

/** the many-row shares (and goal) against the final peaks (the 1-row share has its own probes);
 *  the int8 share for types whose activations are rounded to integers */
function rescale(m: MatmulFigures, peak: number, int8Gops: number): MatmulFigures {
  const pctPeak = (100 * m.manyRows.gflops) / peak;
  const act = nativeKernelInfo(GGMLType[m.type as keyof typeof GGMLType])?.act;
  const int8 = act === 'q8_0' || act === 'q8_k';
  return { ...m, manyRows: { ...m.manyRows, pctPeak, met: pctPeak >= m.manyRows.goalPct, ...(int8 && { pctInt8Peak: (100 * m.manyRows.gflops) / int8Gops }) } };
}

export function runKernelBench(o: KernelBenchOptions, log: (line: string) => void = () => {}): KernelReport {
  const k = selectKernels('native', o.threads);
  const s = o.quick ? QUICK : FULL;
  const threads = nativeThreads() ?? 1;
  // Peaks only fall under interference, so each probe runs before and after the kernels and
  // the larger figure counts (both are in the JSON).
  const probe = (): { fma: FmaPeak; fma256?: number; int8: Int8Peak; bw: number } => {
    log(`probing FMA and int8 peaks and read bandwidth (${threads} threads)…`);
    const fma = probeFmaPeak(s.probeSeconds);
    const int8 = probeInt8Peak(s.probeSeconds);
    return {
      fma,
      ...(fma.bits === 512 && { fma256: probeFmaPeak(s.probeSeconds / 2, 256).gflops }),
      int8,
      bw: probeReadBandwidth(s.bandwidthBytes, s.probeSeconds),
    };
  };
  const first = probe();
  const fma = first.fma;
  const bw = first.bw;
  const rng = new Rng(1);
  const matmul: MatmulFigures[] = [];
  for (const type of BENCH_TYPES) {
    if (o.types && !o.types.includes(typeName(type))) continue;
    log(`matmul ${typeName(type)}…`);
    matmul.push(benchMatmul(k, type, s, fma.gflops, rng));
  }
  const attention: AttentionFigures[] = [];
  for (const sequences of s.sequences) {
    for (const context of s.contexts) {
      log(`attention ${sequences} × ${context}…`);
      attention.push(benchAttention(k, context, sequences, s, bw, rng));
    }
  }
  const last = probe();
  const peak = Math.max(first.fma.gflops, last.fma.gflops);
  const bandwidth = Math.max(first.bw, last.bw);
  const fma256 = Math.max(first.fma256 ?? 0, last.fma256 ?? 0);
  const int8 = Math.max(first.int8.gops, last.int8.gops);
  return {
    settings: { threads, quick: o.quick, kernels: cpuFeatures()?.kernels ?? 'unknown' },
    machine: {
      fmaPeakGflops: peak,
      fmaBits: fma.bits,
      ...(fma256 > 0 && { fmaPeak256Gflops: fma256 }),
      int8PeakGops: int8,
      int8Instruction: first.int8.instruction,
      readBandwidthGBs: bandwidth,
      bandwidthBufferBytes: s.bandwidthBytes,
      probes: [first, last].map((p) => ({ fmaGflops: p.fma.gflops, int8Gops: p.int8.gops, readGBs: p.bw })),
    },
    matmul: matmul.map((m) => rescale(m, peak, int8)),
    attention: attention.map((a) => ({ ...a, pctBandwidth: (100 * a.gbps) / bandwidth })),
  };
}
