// The reference's q8_0 cache against independent arithmetic: its blocks decode (with ggml's
// dequantizer) to the values llama.cpp's x86 quantize_row_q8_0 gives (the activation rounding
// loom matches bit for bit), and attention over them equals f32 attention over those values.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KvLayer } from '../../src/kernels/index.js';
import { kvBytes } from '../../src/kernels/index.js';
import { referenceKernels as ref } from '../../src/kernels/reference.js';
import { dequantizeQ8_0Block } from '../../src/tensor/quant/legacy-quants.js';
import { roundActivations } from '../../src/tensor/quant/q8-activations.js';
import { GGMLType } from '../../src/tensor/weight-types.js';
import { Q8_ATTENTION_PLANS, attentionCase, q8Blocks, rngFor } from '../fixtures/kernel-cases.js';

function dequantize(blocks: Uint8Array): Float32Array {
  const out = new Float32Array((blocks.length / 34) * 32);
  for (let b = 0; b < blocks.length / 34; b++) dequantizeQ8_0Block(blocks, 34 * b, out, 32 * b);
  return out;
}

describe('reference attention over a q8_0 cache', () => {
  it('blocks hold the values llama.cpp rounds to (f16 d, int8 q), 34 bytes a 32', () => {
    const x = rngFor('q8 values').fill(32 * 40, 3);
    x.fill(0, 64, 96); // a zero block
    const blocks = q8Blocks(x);
    assert.equal(blocks.length, kvBytes('q8_0', x.length));
    const expected = new Float32Array(x.length);
    roundActivations(GGMLType.Q8_0, x, x.length, expected);
    // (-0 and 0 are the same int8 0)
    assert.deepEqual(dequantize(blocks).map((v) => v + 0), expected.map((v) => v + 0));
  });

  it('writeKv then attention equal f32 attention over the dequantized cache', () => {
    for (const [i, p] of Q8_ATTENTION_PLANS.entries()) {
      const c = attentionCase(rngFor(`ref q8 ${i}`), 'q8_0', p.plan, p.heads, p.blockSize);
      const f32: KvLayer = { k: dequantize(c.layer.k as Uint8Array), v: dequantize(c.layer.v as Uint8Array) };
      const width = c.numTokens * c.shape.numHeads * c.shape.headDim;
      const q8 = new Float32Array(width);
      ref.attention(q8, c.q, c.layer, c.cache, c.batch, c.shape);
      const plain = new Float32Array(width);
      ref.attention(plain, c.q, f32, { ...c.cache, dtype: 'f32' }, c.batch, c.shape);
      assert.deepEqual(q8, plain, c.description);
    }
  });
});
