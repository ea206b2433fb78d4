// Attention sinks (gpt-oss): per query head a learned logit that joins the softmax's maximum and
// denominator but weighs no value row (ggml_soft_max_ext with sinks). The reference against plain
// math written here, the native core against the reference: decode and prefill, a sliding
// window, contexts long enough to be split into chunks across threads, f32 and f16 caches.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttentionShape, Kernels } from '../../src/kernels/index.js';
import { nativeSkip, requireNative } from '../fixtures/native.js';
import { referenceKernels as ref } from '../../src/kernels/reference.js';
import { attentionCase, relError, rngFor, RUN_SEED } from '../fixtures/kernel-cases.js';
import type { AttentionCase, SeqPlan } from '../fixtures/kernel-cases.js';

const seedNote = `(LOOM_TEST_SEED=${RUN_SEED})`;
const HEADS = { numHeads: 8, numKvHeads: 2, headDim: 64 };

/** e^s_p / (e^sink + Σ e^s_q) · v_p over the attended keys, in f64 from an f32 cache */
function plainAttention(c: AttentionCase, shape: AttentionShape, sinks: Float32Array): Float32Array {
  const { numHeads, numKvHeads, headDim: d, scale } = shape;
  const out = new Float32Array(c.numTokens * numHeads * d);
  const k = c.layer.k as Float32Array;
  const v = c.layer.v as Float32Array;
  const m = c.batch.maxBlocksPerSeq;
  const bs = c.cache.blockSize;
  for (let s = 0; s + 1 < c.batch.seqStarts.length; s++) {
    for (let t = c.batch.seqStarts[s]!; t < c.batch.seqStarts[s + 1]!; t++) {
      const pos = c.batch.positions[t]!;
      const keys: number[] = [];
      for (let p = 0; p <= pos; p++) if (!shape.window || pos - p < shape.window) keys.push(p);
      const row = (p: number, kv: number): number => ((c.batch.blockTables[s * m + Math.floor(p / bs)]! * numKvHeads + kv) * bs + (p % bs)) * d;
      for (let h = 0; h < numHeads; h++) {
        const kvHead = Math.floor(h / (numHeads / numKvHeads));
        const scores = keys.map((p) => {
          let dot = 0;
          for (let i = 0; i < d; i++) dot += c.q[(t * numHeads + h) * d + i]! * k[row(p, kvHead) + i]!;
          return dot * scale;
        });
        const max = Math.max(sinks[h]!, ...scores);
        const w = scores.map((x) => Math.exp(x - max));
        const sum = w.reduce((a, b) => a + b, Math.exp(sinks[h]! - max));
        for (let i = 0; i < d; i++) {
          let acc = 0;
          keys.forEach((p, j) => (acc += (w[j]! / sum) * v[row(p, kvHead) + i]!));
          out[(t * numHeads + h) * d + i] = acc;
        }
      }
    }
  }
  return out;
}

/** sinks from far below every score (no effect) to far above (the values nearly vanish) */
const SINKS = Float32Array.from([-30, -2, -0.5, 0, 0.7, 1.5, 3, 12]);

const CASES: { plan: SeqPlan[]; window?: number; blockSize: number }[] = [
  { plan: [{ cached: 0, chunk: 9 }, { cached: 40, chunk: 1 }], blockSize: 16 },
  { plan: [{ cached: 100, chunk: 1 }, { cached: 20, chunk: 30 }], window: 12, blockSize: 16 },
  // over 1024 keys: split into chunks whose partial sums are combined (the sink counted once)
  { plan: [{ cached: 2500, chunk: 1 }, { cached: 1300, chunk: 4 }], blockSize: 16 },
];

function run(k: Kernels, c: AttentionCase, shape: AttentionShape): Float32Array {
  const out = new Float32Array(c.numTokens * shape.numHeads * shape.headDim);
  k.attention(out, c.q, c.layer, c.cache, c.batch, shape);
  return out;
}

describe('attention sinks', () => {
  it('the reference puts each head\'s sink in the denominator only (f32 cache)', () => {
    for (const [i, p] of CASES.entries()) {
      const c = attentionCase(rngFor(`sinks plain ${i}`), 'f32', p.plan, HEADS, p.blockSize);
      const shape = { ...c.shape, window: p.window, sinks: SINKS };
      const want = plainAttention(c, shape, SINKS);
      const err = relError(run(ref, c, shape), want);
      assert.ok(err < 2e-5, `case ${i}: reference vs plain math ${err.toExponential(2)} ${seedNote}`);
      // and the sinks matter: without them the output is another one
      assert.ok(relError(run(ref, c, { ...shape, sinks: undefined }), want) > 1e-2, `case ${i}: sinks change the output`);
    }
  });

  const native = requireNative();
  it('native agrees with the reference, f32 and f16 caches', { skip: nativeSkip() }, () => {
    for (const dtype of ['f32', 'f16'] as const) {
      for (const [i, p] of CASES.entries()) {
        const c = attentionCase(rngFor(`sinks ${dtype} ${i}`), dtype, p.plan, HEADS, p.blockSize);
        const shape = { ...c.shape, window: p.window, sinks: SINKS };
        const err = relError(run(native!, c, shape), run(ref, c, shape));
        assert.ok(err < (dtype === 'f16' ? 2e-3 : 5e-6), `${dtype} case ${i}: native vs reference ${err.toExponential(2)} ${seedNote}`);
      }
    }
  });
});
