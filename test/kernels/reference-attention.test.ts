// The reference's q8_0 cache against independent arithmetic: its blocks decode (with ggml's
// dequantizer) to the values llama.cpp's x86 quantize_row_q8_0 gives (the activation rounding
// loom matches bit for bit), and attention over them equals f32 attention over those values.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KvLayer } from '../../src/kernels/index.js';
import { kvBytes } from '../../src/kernels/index.js';
import { referenceKernels as ref } from '../../src/kernels/reference.js';
import { dequantizeQ4_0Block, dequantizeQ8_0Block } from '../../src/tensor/quant/legacy-quants.js';
import { roundActivations } from '../../src/tensor/quant/q8-activations.js';
import { GGMLType } from '../../src/tensor/weight-types.js';
import { Q8_ATTENTION_PLANS, attentionCase, quantBlocks, rngFor } from '../fixtures/kernel-cases.js';

/** ggml's dequantizers (legacy-quants.ts, checked against llama.cpp's goldens) */
function dequantize(blocks: Uint8Array, dtype: 'q8_0' | 'q4_0' = 'q8_0'): Float32Array {
  const bytes = dtype === 'q8_0' ? 34 : 18;
  const out = new Float32Array((blocks.length / bytes) * 32);
  for (let b = 0; b < blocks.length / bytes; b++) (dtype === 'q8_0' ? dequantizeQ8_0Block : dequantizeQ4_0Block)(blocks, bytes * b, out, 32 * b);
  return out;
}

describe('reference attention over a q8_0 or q4_0 cache', () => {
  it('blocks hold the values llama.cpp rounds to (f16 d, int8 q), 34 bytes a 32', () => {
    const x = rngFor('q8 values').fill(32 * 40, 3);
    x.fill(0, 64, 96); // a zero block
    const blocks = quantBlocks('q8_0', x);
    assert.equal(blocks.length, kvBytes('q8_0', x.length));
    const expected = new Float32Array(x.length);
    roundActivations(GGMLType.Q8_0, x, x.length, expected);
    // (-0 and 0 are the same int8 0)
    assert.deepEqual(dequantize(blocks).map((v) => v + 0), expected.map((v) => v + 0));
  });

  it('q4_0 blocks are ggml\'s quantize_row_q4_0_ref: 18 bytes a 32, within a step of the values (half a step, a whole one where the far end clips at −7 steps)', () => {
    const x = rngFor('q4 values').fill(32 * 40, 3);
    const blocks = quantBlocks('q4_0', x);
    assert.equal(blocks.length, kvBytes('q4_0', x.length));
    const back = dequantize(blocks, 'q4_0');
    for (let b = 0; b < 40; b++) {
      const amax = Math.max(...x.subarray(32 * b, 32 * b + 32).map(Math.abs));
      for (let j = 32 * b; j < 32 * b + 32; j++) assert.ok(Math.abs(back[j]! - x[j]!) <= amax / 8 + 1e-3 * amax, `value ${j}: ${back[j]} for ${x[j]}`);
    }
  });

  for (const dtype of ['q8_0', 'q4_0'] as const) {
    it(`${dtype}: writeKv then attention equal f32 attention over the dequantized cache`, () => {
      for (const [i, p] of Q8_ATTENTION_PLANS.entries()) {
        const c = attentionCase(rngFor(`ref ${dtype} ${i}`), dtype, p.plan, p.heads, p.blockSize);
        const rng = rngFor(`ref ${dtype} write ${i}`);
        const width = c.cache.numKvHeads * c.cache.headDim;
        const slots = Int32Array.from([0, 5, c.cache.numBlocks * c.cache.blockSize - 1]);
        ref.writeKv(c.layer, c.cache, rng.fill(slots.length * width, 2), rng.fill(slots.length * width, 2), slots);
        const f32: KvLayer = { k: dequantize(c.layer.k as Uint8Array, dtype), v: dequantize(c.layer.v as Uint8Array, dtype) };
        const size = c.numTokens * c.shape.numHeads * c.shape.headDim;
        const quant = new Float32Array(size);
        ref.attention(quant, c.q, c.layer, c.cache, c.batch, c.shape);
        const plain = new Float32Array(size);
        ref.attention(plain, c.q, f32, { ...c.cache, dtype: 'f32' }, c.batch, c.shape);
        assert.deepEqual(quant, plain, c.description);
      }
    });
  }
});
