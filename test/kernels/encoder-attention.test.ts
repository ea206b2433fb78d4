// Encoder (bidirectional) attention: every token of a sequence attends all of its positions,
// so the tokens of a sequence share one context. On AVX-512 and AVX2 with an f32 cache
// (pooling models' default) such runs of tokens are attended 16 at a time, lanes = tokens
// (native/simd.h AttendTokens); elsewhere token by token. Both against the reference, and a
// sequence's bits the same alone as in a batch with causal sequences beside it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttentionBatch } from '../../src/kernels/index.js';
import { referenceKernels as ref } from '../../src/kernels/reference.js';
import { nativeSkip, requireNative } from '../fixtures/native.js';
import { attentionCase, relError, rngFor } from '../fixtures/kernel-cases.js';
import type { KvDtype } from '../../src/kernels/index.js';

/** the conformance suite's bounds (test/kernels/conformance.test.ts) */
const BOUND: Record<string, number> = { f32: 5e-6, f16: 2e-3 };

/** sequences: [cached, chunk, whole]; a whole one is chunk tokens from 0 that all sit at the last position */
function encoderCase(dtype: KvDtype, seqs: readonly (readonly [number, number, boolean])[], heads: { numHeads: number; numKvHeads: number; headDim: number }, blockSize: number) {
  const c = attentionCase(rngFor(`encoder attn ${dtype} ${heads.numHeads}/${heads.numKvHeads}x${heads.headDim} ${blockSize} ${seqs.join(' ')}`), dtype, seqs.map(([cached, chunk]) => ({ cached, chunk })), heads, blockSize);
  const positions = c.batch.positions.slice();
  seqs.forEach(([, , whole], s) => {
    if (whole) positions.fill(positions[c.batch.seqStarts[s + 1]! - 1]!, c.batch.seqStarts[s]!, c.batch.seqStarts[s + 1]!);
  });
  return { ...c, batch: { ...c.batch, positions } };
}

const SEQS = [[0, 40, true], [20, 9, false], [0, 1, true], [0, 2, true], [0, 17, true], [0, 300, true], [37, 1, false]] as const;
const SHAPES = [
  { heads: { numHeads: 12, numKvHeads: 12, headDim: 32 }, blockSize: 16 }, // bge-small
  { heads: { numHeads: 6, numKvHeads: 2, headDim: 64 }, blockSize: 7 }, // GQA, key blocks that end mid-group
  { heads: { numHeads: 3, numKvHeads: 1, headDim: 16 }, blockSize: 16 },
  { heads: { numHeads: 2, numKvHeads: 2, headDim: 48 }, blockSize: 32 },
  { heads: { numHeads: 4, numKvHeads: 2, headDim: 24 }, blockSize: 16 }, // not whole vectors: token by token
] as const;

describe('encoder attention (whole sequences)', { skip: nativeSkip() }, () => {
  const k = requireNative()!;
  for (const dtype of ['f32', 'f16'] as const) {
    it(`agrees with the reference: ${dtype} cache, runs of 1..300 tokens beside causal ones, GQA, awkward blocks`, () => {
      for (const { heads, blockSize } of SHAPES) {
        const c = encoderCase(dtype, SEQS, heads, blockSize);
        const width = heads.numHeads * heads.headDim;
        const expected = new Float32Array(c.numTokens * width);
        ref.attention(expected, c.q, c.layer, c.cache, c.batch, c.shape);
        const out = new Float32Array(c.numTokens * width);
        k.attention(out, c.q, c.layer, c.cache, c.batch, c.shape);
        const err = relError(out, expected);
        assert.ok(err <= BOUND[dtype]!, `${c.description}: relative error ${err.toExponential(2)}`);
        assert.ok(out.every(Number.isFinite), 'finite');
      }
    });
  }

  it('a sequence gives the same bits alone as in a batch (which tokens ride together depends on their sequence only)', () => {
    for (const { heads, blockSize } of SHAPES) {
      const c = encoderCase('f32', SEQS, heads, blockSize);
      const width = heads.numHeads * heads.headDim;
      const all = new Float32Array(c.numTokens * width);
      k.attention(all, c.q, c.layer, c.cache, c.batch, c.shape);
      const m = c.batch.maxBlocksPerSeq;
      for (let s = 0; s < SEQS.length; s++) {
        const t0 = c.batch.seqStarts[s]!, t1 = c.batch.seqStarts[s + 1]!;
        const alone: AttentionBatch = { seqStarts: Int32Array.from([0, t1 - t0]), positions: c.batch.positions.slice(t0, t1), blockTables: c.batch.blockTables.slice(s * m, (s + 1) * m), maxBlocksPerSeq: m };
        const out = new Float32Array((t1 - t0) * width);
        k.attention(out, c.q.slice(t0 * width, t1 * width), c.layer, c.cache, alone, c.shape);
        assert.deepEqual(out, all.slice(t0 * width, t1 * width), `${c.description}: sequence ${s} alone vs in the batch`);
      }
    }
  });
});
