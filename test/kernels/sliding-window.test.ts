// Sliding-window attention, attention-logit soft-capping, GELU·up and the logit soft-cap
// (Gemma 2/3), on both kernel implementations: the reference against plain math
// (fixtures/plain-attention.ts: softmax over the window, llama.cpp's LLAMA_SWA_TYPE_STANDARD mask: a query at p
// sees keys p - window + 1 .. p), the native core against the reference. Blocks wholly
// before every window are -1 in the tables, as a sliding-window pool leaves them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nativeSkip, requireNative } from '../fixtures/native.js';
import { referenceKernels as ref } from '../../src/kernels/reference.js';
import { attentionCase, relError, rngFor, RUN_SEED } from '../fixtures/kernel-cases.js';
import type { AttentionCase, SeqPlan } from '../fixtures/kernel-cases.js';
import { plainAttention, runAttention as run } from '../fixtures/plain-attention.js';

const seedNote = `(LOOM_TEST_SEED=${RUN_SEED})`;

/** Marks blocks no token of a sequence can see (all before its earliest window) as freed. */
function dropOutsideWindow(c: AttentionCase, window: number): AttentionCase {
  const tables = c.batch.blockTables.slice();
  const m = c.batch.maxBlocksPerSeq;
  const bs = c.cache.blockSize;
  for (let s = 0; s + 1 < c.batch.seqStarts.length; s++) {
    const first = Math.max(0, c.batch.positions[c.batch.seqStarts[s]!]! - window + 1);
    for (let b = 0; b < Math.floor(first / bs); b++) tables[s * m + b] = -1;
  }
  return { ...c, batch: { ...c.batch, blockTables: tables } };
}

const CASES: { plan: SeqPlan[]; window: number; softcap?: number; blockSize: number }[] = [
  // decode tokens far past the window, a prefill chunk that crosses it, a sequence shorter than it
  { plan: [{ cached: 100, chunk: 1 }, { cached: 20, chunk: 30 }, { cached: 0, chunk: 5 }], window: 12, blockSize: 16 },
  { plan: [{ cached: 41, chunk: 1 }, { cached: 7, chunk: 9 }], window: 5, softcap: 3, blockSize: 4 },
  { plan: [{ cached: 63, chunk: 2 }], window: 16, softcap: 50, blockSize: 16 },
  // windows over 1024 keys are split into chunks across threads
  { plan: [{ cached: 3000, chunk: 1 }, { cached: 1500, chunk: 20 }], window: 2100, softcap: 2, blockSize: 16 },
];
const HEADS = { numHeads: 8, numKvHeads: 2, headDim: 64 };

describe('sliding-window attention', () => {
  it('the reference attends over exactly the window (with soft-capping) on an f32 cache', () => {
    for (const [i, p] of CASES.entries()) {
      const c = dropOutsideWindow(attentionCase(rngFor(`swa plain ${i}`), 'f32', p.plan, HEADS, p.blockSize), p.window);
      const shape = { ...c.shape, window: p.window, softcap: p.softcap };
      const err = relError(run(ref, c, shape), plainAttention(c, shape));
      assert.ok(err < 2e-5, `case ${i}: reference vs plain math ${err.toExponential(2)} ${seedNote}`);
    }
  });

  it('a window covering the whole context is full attention', () => {
    const c = attentionCase(rngFor('swa full'), 'f16', [{ cached: 30, chunk: 3 }], HEADS, 16);
    assert.deepEqual(run(ref, c, { ...c.shape, window: 64 }), run(ref, c, c.shape));
  });

  const native = requireNative();
  const skip = nativeSkip();
  it('native agrees with the reference, f16 and f32 caches; a token alone gives the same bits as in the batch', { skip }, () => {
    for (const dtype of ['f32', 'f16'] as const) {
      for (const [i, p] of CASES.entries()) {
        const c = dropOutsideWindow(attentionCase(rngFor(`swa ${dtype} ${i}`), dtype, p.plan, HEADS, p.blockSize), p.window);
        const shape = { ...c.shape, window: p.window, softcap: p.softcap };
        const all = run(native!, c, shape);
        const err = relError(all, run(ref, c, shape));
        assert.ok(err < (dtype === 'f16' ? 2e-3 : 5e-6), `${dtype} case ${i}: native vs reference ${err.toExponential(2)} ${seedNote}`);
        // the last sequence alone
        const s = p.plan.length - 1;
        const [t0, t1] = [c.batch.seqStarts[s]!, c.batch.seqStarts[s + 1]!];
        const m = c.batch.maxBlocksPerSeq;
        const width = shape.numHeads * shape.headDim;
        const alone: AttentionCase = {
          ...c,
          numTokens: t1 - t0,
          q: c.q.slice(t0 * width, t1 * width),
          batch: { seqStarts: Int32Array.from([0, t1 - t0]), positions: c.batch.positions.slice(t0, t1), blockTables: c.batch.blockTables.slice(s * m, (s + 1) * m), maxBlocksPerSeq: m },
        };
        assert.deepEqual(run(native!, alone, shape), all.slice(t0 * width, t1 * width), `${dtype} case ${i}: alone vs in the batch`);
      }
    }
  });

  it('native refuses a freed block inside a window', { skip }, () => {
    const c = attentionCase(rngFor('swa missing'), 'f32', [{ cached: 40, chunk: 1 }], HEADS, 16);
    const tables = c.batch.blockTables.slice();
    tables[1] = -1; // positions 16..31: inside a window of 20 at position 40
    assert.throws(() => run(native!, { ...c, batch: { ...c.batch, blockTables: tables } }, { ...c.shape, window: 20 }), RangeError);
    assert.doesNotThrow(() => run(native!, { ...c, batch: { ...c.batch, blockTables: tables } }, { ...c.shape, window: 9 }));
  });

  // a symmetric window (EmbeddingGemma's sliding layers) as the encoders give it: every token of a
  // whole sequence at position min(last, i + h), attending from max(0, i − h)
  const symmetric = (rng: ReturnType<typeof rngFor>, dtype: 'f32' | 'f16', lengths: number[], half: number, blockSize: number): AttentionCase => {
    const c = attentionCase(rng, dtype, lengths.map((n) => ({ cached: n - 1, chunk: 1 })), HEADS, blockSize);
    const seqStarts = Int32Array.from(lengths.reduce((a, n) => [...a, a.at(-1)! + n], [0]));
    const positions = Int32Array.from(lengths.flatMap((n) => Array.from({ length: n }, (_, i) => Math.min(n - 1, i + half))));
    const firstPositions = Int32Array.from(lengths.flatMap((n) => Array.from({ length: n }, (_, i) => Math.max(0, i - half))));
    const numTokens = seqStarts.at(-1)!;
    const q = rng.fill(numTokens * HEADS.numHeads * HEADS.headDim, 1);
    return { ...c, numTokens, q, batch: { ...c.batch, seqStarts, positions, firstPositions } };
  };
  it('first positions (a symmetric window): the reference attends from each token\'s own first position, native agrees', () => {
    // sequences shorter than the window, around it and far longer (over 1024 keys: split chunks)
    const plans: [number[], number, number][] = [[[3, 9, 40], 4, 16], [[70], 32, 4], [[1300], 600, 16]];
    for (const [i, [lengths, half, bs]] of plans.entries()) {
      const c = symmetric(rngFor(`symmetric ${i}`), 'f32', lengths, half, bs);
      const err = relError(run(ref, c, c.shape), plainAttention(c, c.shape));
      assert.ok(err < 2e-5, `case ${i}: reference vs plain math ${err.toExponential(2)} ${seedNote}`);
      if (!native) continue;
      for (const dtype of ['f32', 'f16'] as const) {
        const d = symmetric(rngFor(`symmetric ${i}`), dtype, lengths, half, bs);
        const e = relError(run(native, d, d.shape), run(ref, d, d.shape));
        assert.ok(e < (dtype === 'f16' ? 2e-3 : 5e-6), `${dtype} case ${i}: native vs reference ${e.toExponential(2)} ${seedNote}`);
      }
    }
  });

  it('a first position past its token\'s position is refused', () => {
    const c = symmetric(rngFor('symmetric bad'), 'f32', [6], 2, 16);
    const firstPositions = c.batch.firstPositions!.slice();
    firstPositions[0] = c.batch.positions[0]! + 1;
    const bad = { ...c, batch: { ...c.batch, firstPositions } };
    assert.throws(() => run(ref, bad, c.shape), RangeError);
    if (native) assert.throws(() => run(native, bad, c.shape), RangeError);
  });

  for (const [name, k] of [['reference', ref], ['native', native]] as const) {
    it(`${name}: geluMul is gelu times up; softcap is cap·tanh(x/cap)`, { skip: k ? false : skip }, () => {
      const rng = rngFor(`gelu mul ${name}`);
      for (const n of [1, 17, 4099]) {
        const gate = rng.fill(n, 4);
        const up = rng.fill(n, 1);
        gate[0] = 12; // beyond the f16 table's range on both sides
        if (n > 1) gate[1] = -11;
        const expected = new Float32Array(n);
        ref.gelu(expected, gate, n);
        for (let i = 0; i < n; i++) expected[i] = expected[i]! * up[i]!;
        const out = new Float32Array(n);
        k!.geluMul(out, gate, up, n);
        assert.deepEqual(out, expected, `geluMul n=${n}`);
        const x = rng.fill(n, 40);
        const capped = x.slice();
        k!.softcap(capped, n, 30);
        for (let i = 0; i < n; i++) assert.ok(Math.abs(capped[i]! - 30 * Math.tanh(x[i]! / 30)) < 1e-5 * 30, `softcap ${x[i]}`);
      }
    });
  }
});
