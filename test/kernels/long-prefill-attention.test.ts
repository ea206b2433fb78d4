// A prefill chunk at a long context: every token split into key chunks keeps its scores between
// the kernel's two phases, so the native core attends such a batch in groups of tokens whose
// scores fit 2^24 floats (a 2048-token chunk at 32k keys would otherwise hold gigabytes). A
// token's output never depends on its batch: the grouped batch gives the bits of its tokens
// attended in small batches, and of a short sequence attended alone.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nativeSkip, requireNative } from '../fixtures/native.js';
import { attentionCase, rngFor } from '../fixtures/kernel-cases.js';

describe('native attention: a long prefill chunk in groups', () => {
  const k = requireNative();
  it('the same bits as its tokens in small batches (scores 8 heads × ~8.3k keys × 270 tokens > 2^24 floats)', { skip: nativeSkip() }, () => {
    const heads = { numHeads: 8, numKvHeads: 2, headDim: 32 };
    const c = attentionCase(rngFor('long prefill groups'), 'f16', [{ cached: 40, chunk: 1 }, { cached: 8200, chunk: 270 }, { cached: 3000, chunk: 1 }], heads, 16);
    assert.ok(270 * heads.numHeads * 8200 > 2 ** 24, 'the batch is over the bound');
    const width = heads.numHeads * heads.headDim;
    const all = new Float32Array(c.numTokens * width);
    k!.attention(all, c.q, c.layer, c.cache, c.batch, c.shape);
    const m = c.batch.maxBlocksPerSeq;
    // tokens [t0, t1) of sequence s as a batch of their own
    const part = (s: number, t0: number, t1: number): Float32Array => {
      const out = new Float32Array((t1 - t0) * width);
      const batch = { seqStarts: Int32Array.from([0, t1 - t0]), positions: c.batch.positions.slice(t0, t1), blockTables: c.batch.blockTables.slice(s * m, (s + 1) * m), maxBlocksPerSeq: m };
      k!.attention(out, c.q.slice(t0 * width, t1 * width), c.layer, c.cache, batch, c.shape);
      return out;
    };
    const [s0, s1, s2, end] = [...c.batch.seqStarts] as [number, number, number, number];
    assert.deepEqual(part(0, s0, s1), all.slice(s0 * width, s1 * width), 'the short sequence');
    for (let t = s1; t < s2; t += 45) {
      const t1 = Math.min(s2, t + 45);
      assert.deepEqual(part(1, t, t1), all.slice(t * width, t1 * width), `the long chunk's tokens ${t - s1}..${t1 - s1}`);
    }
    assert.deepEqual(part(2, s2, end), all.slice(s2 * width, end * width), 'the decode after it');
    assert.ok(all.every(Number.isFinite));
  });
});
