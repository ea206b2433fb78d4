// Random inputs for the kernel conformance suite: weights of every compute type, paged KV
// caches with scattered block tables, and batches mixing decode tokens with prefill chunks.
import type { AttentionBatch, AttentionShape, KvCacheShape, KvDtype, KvLayer } from '../src/kernels/index.js';
import { GGMLType } from '../src/model/ggml-types.js';
import { f32ArrayToF16 } from '../src/model/half.js';
import { dequantizeTensorRow } from '../src/model/quant/dequantize.js';
import { quantize } from '../src/model/quant/quantize.js';
import type { WeightTensor } from '../src/model/weights.js';
import { GaussianRng } from './fixtures/random.js';

/** A seed per run (LOOM_TEST_SEED to replay one); every failure message names it. */
export const RUN_SEED = Number(process.env.LOOM_TEST_SEED ?? Date.now() % 1_000_000_007);

export function rngFor(label: string): GaussianRng {
  let h = RUN_SEED >>> 0;
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x9e3779b1) >>> 0;
  return new GaussianRng(h);
}

/** max |a − b| / max |b| over the first n values (0 when both are all zero) */
export function relError(a: ArrayLike<number>, b: ArrayLike<number>, n = b.length): number {
  let diff = 0, scale = 0;
  for (let i = 0; i < n; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    if (!(d <= diff)) diff = d; // NaN propagates as a failure
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return scale === 0 ? diff : diff / scale;
}

/**
 * Error of a matmul's outputs against the reference, relative to the largest Σ|w||x| of an
 * output: summation order moves a dot product by a fraction of that sum, not of its result,
 * which cancellation can make arbitrarily small (a single output of rows 1 × 544 was 2e-5
 * "wrong" against its own tiny value).
 */
export function matmulRelError(actual: ArrayLike<number>, expected: ArrayLike<number>, x: Float32Array, w: WeightTensor, rows: number): number {
  const [inF, outF] = [w.dims[0]!, w.dims[1]!];
  let diff = 0, scale = 0;
  const wRow = new Float32Array(inF);
  for (let j = 0; j < outF; j++) {
    dequantizeTensorRow(w, j, wRow);
    for (let r = 0; r < rows; r++) {
      let magnitude = 0;
      for (let k = 0; k < inF; k++) magnitude += Math.abs(wRow[k]! * x[r * inF + k]!);
      scale = Math.max(scale, magnitude);
      const d = Math.abs(actual[r * outF + j]! - expected[r * outF + j]!);
      if (!(d <= diff)) diff = d; // NaN propagates as a failure
    }
  }
  return scale === 0 ? diff : diff / scale;
}

export const MATMUL_TYPES = [
  'F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'IQ4_NL', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K', 'IQ4_XS',
] as const;
export type MatmulType = (typeof MATMUL_TYPES)[number];

/** Row lengths per type: awkward, but whole blocks as the formats require. (The longest rows
 *  meet 131 outputs at one row: a single dot product's relative error is unbounded when the
 *  sum happens to cancel, so the outputs are many where the rows are long.) */
export const MATMUL_IN: Record<MatmulType, readonly number[]> = {
  F32: [1, 37, 577, 4099],
  F16: [1, 37, 577, 4099],
  BF16: [1, 37, 577, 4099],
  Q8_0: [32, 96, 544, 4128],
  Q4_0: [32, 96, 544, 992, 4128], // 992: AVX-512 takes 4 blocks a step, in runs of 16, 8 and 4
  Q4_1: [32, 96, 544, 4128],
  Q5_0: [32, 96, 544, 992, 4128],
  Q5_1: [32, 96, 544, 4128],
  IQ4_NL: [32, 96, 544, 992, 4128],
  Q2_K: [256, 768, 2304],
  Q3_K: [256, 768, 2304],
  Q4_K: [256, 768, 2304],
  Q5_K: [256, 768, 2304],
  IQ4_XS: [256, 768, 2304],
  Q6_K: [256, 768, 2304],
};

export function randomWeight(rng: GaussianRng, type: MatmulType, inF: number, outF: number): WeightTensor {
  const values = rng.fill(inF * outF, 0.5);
  return { name: `w.${type}`, type: GGMLType[type], dims: [inF, outF], data: quantize(GGMLType[type], values, inF) };
}

export interface AttentionCase {
  readonly cache: KvCacheShape;
  readonly layer: KvLayer;
  readonly batch: AttentionBatch;
  readonly shape: AttentionShape;
  readonly q: Float32Array;
  readonly numTokens: number;
  readonly description: string;
}

/** A sequence in a batch: `cached` positions already in the cache, then `chunk` new tokens. */
export interface SeqPlan {
  readonly cached: number;
  readonly chunk: number;
}

export function attentionCase(
  rng: GaussianRng,
  dtype: KvDtype,
  plan: readonly SeqPlan[],
  heads: { numHeads: number; numKvHeads: number; headDim: number },
  blockSize: number,
): AttentionCase {
  const lengths = plan.map((s) => s.cached + s.chunk);
  const blocksPer = lengths.map((l) => Math.ceil(l / blockSize));
  const maxBlocksPerSeq = Math.max(...blocksPer) + 1; // a spare column stays -1
  const numBlocks = blocksPer.reduce((a, b) => a + b, 0) + 3; // a few blocks nobody owns
  // scattered block ids: a shuffled permutation dealt out to the sequences
  const ids = Array.from({ length: numBlocks }, (_, i) => i);
  for (let i = ids.length - 1; i > 0; i--) {
    const j = Math.floor(rng.uniform() * (i + 1));
    [ids[i], ids[j]] = [ids[j]!, ids[i]!];
  }
  const blockTables = new Int32Array(plan.length * maxBlocksPerSeq).fill(-1);
  let next = 0;
  plan.forEach((_, s) => {
    for (let b = 0; b < blocksPer[s]!; b++) blockTables[s * maxBlocksPerSeq + b] = ids[next++]!;
  });
  const seqStarts = new Int32Array(plan.length + 1);
  plan.forEach((s, i) => (seqStarts[i + 1] = seqStarts[i]! + s.chunk));
  const numTokens = seqStarts[plan.length]!;
  const positions = new Int32Array(numTokens);
  plan.forEach((s, i) => {
    for (let j = 0; j < s.chunk; j++) positions[seqStarts[i]! + j] = s.cached + j;
  });
  const cache: KvCacheShape = { dtype, numBlocks, blockSize, numKvHeads: heads.numKvHeads, headDim: heads.headDim };
  const size = numBlocks * blockSize * heads.numKvHeads * heads.headDim;
  // every slot holds random K/V (as if written earlier): what the batch may read is the test
  const fill = (): Float32Array | Uint16Array => (dtype === 'f16' ? f32ArrayToF16(rng.fill(size, 1)) : rng.fill(size, 1));
  const layer: KvLayer = { k: fill(), v: fill() };
  const shape: AttentionShape = { ...heads, scale: 1 / Math.sqrt(heads.headDim) };
  const q = rng.fill(numTokens * heads.numHeads * heads.headDim, 1.5);
  const description = `${dtype} cache, block ${blockSize}, ${heads.numHeads}/${heads.numKvHeads} heads of ${heads.headDim}, seqs ${plan
    .map((s) => `${s.cached}+${s.chunk}`)
    .join(' ')}`;
  return { cache, layer, batch: { seqStarts, positions, blockTables, maxBlocksPerSeq }, shape, q, numTokens, description };
}

/** The batches the suite attends over: decode tokens, prefill from 0, chunks after cached context, long contexts. */
export const ATTENTION_PLANS: readonly { plan: SeqPlan[]; heads: { numHeads: number; numKvHeads: number; headDim: number }; blockSize: number }[] = [
  { plan: [{ cached: 0, chunk: 1 }], heads: { numHeads: 1, numKvHeads: 1, headDim: 8 }, blockSize: 16 },
  { plan: [{ cached: 37, chunk: 1 }, { cached: 20, chunk: 9 }, { cached: 0, chunk: 13 }, { cached: 0, chunk: 1 }], heads: { numHeads: 6, numKvHeads: 2, headDim: 40 }, blockSize: 16 },
  { plan: [{ cached: 5, chunk: 1 }, { cached: 70, chunk: 1 }, { cached: 3, chunk: 17 }], heads: { numHeads: 4, numKvHeads: 4, headDim: 64 }, blockSize: 5 },
  { plan: [{ cached: 1500, chunk: 1 }, { cached: 211, chunk: 33 }], heads: { numHeads: 8, numKvHeads: 2, headDim: 128 }, blockSize: 32 },
  { plan: [{ cached: 0, chunk: 67 }], heads: { numHeads: 9, numKvHeads: 3, headDim: 72 }, blockSize: 16 },
  // query heads sharing a KV head worked together (head_dim a multiple of 16 up to 64):
  // 6 per KV head (a group of 4 and one of 2), and 3 per KV head with 7-slot blocks (key tails)
  { plan: [{ cached: 40, chunk: 1 }, { cached: 0, chunk: 5 }, { cached: 17, chunk: 3 }], heads: { numHeads: 12, numKvHeads: 2, headDim: 64 }, blockSize: 16 },
  { plan: [{ cached: 3, chunk: 2 }, { cached: 30, chunk: 1 }, { cached: 0, chunk: 7 }], heads: { numHeads: 6, numKvHeads: 2, headDim: 48 }, blockSize: 7 },
  // contexts over 1024 keys are split across threads in chunks: a decode token three chunks
  // deep, and a prefill chunk whose tokens cross from one chunk into two
  { plan: [{ cached: 2500, chunk: 1 }, { cached: 1000, chunk: 40 }], heads: { numHeads: 9, numKvHeads: 3, headDim: 64 }, blockSize: 16 },
  // heads wider than 128 (Gemma's 256 and 512): keys 4 at a time with q read from memory, V
  // summed 128 columns at a time; 272 leaves a last column chunk of 16, 7-slot blocks key tails
  { plan: [{ cached: 45, chunk: 1 }, { cached: 0, chunk: 6 }, { cached: 20, chunk: 3 }], heads: { numHeads: 4, numKvHeads: 1, headDim: 256 }, blockSize: 16 },
  { plan: [{ cached: 9, chunk: 2 }, { cached: 30, chunk: 1 }], heads: { numHeads: 2, numKvHeads: 1, headDim: 272 }, blockSize: 7 },
  { plan: [{ cached: 21, chunk: 1 }, { cached: 0, chunk: 4 }], heads: { numHeads: 4, numKvHeads: 2, headDim: 512 }, blockSize: 16 },
];
