// Attention sinks (gpt-oss): per query head a learned logit that joins the softmax's maximum and
// denominator but weighs no value row (ggml_soft_max_ext with sinks). The reference against plain
// math (fixtures/plain-attention.ts), the native core against the reference: decode and prefill, a sliding
// window, contexts long enough to be split into chunks across threads, f32 and f16 caches.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nativeSkip, requireNative } from '../fixtures/native.js';
import { referenceKernels as ref } from '../../src/kernels/reference.js';
import { attentionCase, relError, rngFor, RUN_SEED } from '../fixtures/kernel-cases.js';
import type { SeqPlan } from '../fixtures/kernel-cases.js';
import { plainAttention, runAttention as run } from '../fixtures/plain-attention.js';

const seedNote = `(LOOM_TEST_SEED=${RUN_SEED})`;
const HEADS = { numHeads: 8, numKvHeads: 2, headDim: 64 };

/** sinks from far below every score (no effect) to far above (the values nearly vanish) */
const SINKS = Float32Array.from([-30, -2, -0.5, 0, 0.7, 1.5, 3, 12]);

const CASES: { plan: SeqPlan[]; window?: number; blockSize: number }[] = [
  { plan: [{ cached: 0, chunk: 9 }, { cached: 40, chunk: 1 }], blockSize: 16 },
  { plan: [{ cached: 100, chunk: 1 }, { cached: 20, chunk: 30 }], window: 12, blockSize: 16 },
  // over 1024 keys: split into chunks whose partial sums are combined (the sink counted once)
  { plan: [{ cached: 2500, chunk: 1 }, { cached: 1300, chunk: 4 }], blockSize: 16 },
];

describe('attention sinks', () => {
  it('the reference puts each head\'s sink in the denominator only (f32 cache)', () => {
    for (const [i, p] of CASES.entries()) {
      const c = attentionCase(rngFor(`sinks plain ${i}`), 'f32', p.plan, HEADS, p.blockSize);
      const shape = { ...c.shape, window: p.window, sinks: SINKS };
      const want = plainAttention(c, shape);
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
