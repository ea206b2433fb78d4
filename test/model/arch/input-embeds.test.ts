// Image rows in the residual stream (ForwardBatch.inputEmbeds) and non-causal image spans
// (attentionPositions), with no encoder: an "image" whose embeddings are the token embeddings
// of some prompt tokens (scaled as the family scales its tokens, since image rows are not
// scaled: llama.cpp's gemma3/gemma4 graphs scale `ubatch.token` inputs only) must give the
// logits of the tokens themselves, on every generative family, reference and native kernels.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Kernels } from '../../../src/kernels/index.js';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { createArchitecture } from '../../../src/model/arch/index.js';
import { attentionView } from '../../../src/model/arch/input-embeds.js';
import { buildBatch } from '../../../src/model/batch.js';
import type { SequenceChunk } from '../../../src/model/batch.js';
import { KvCache } from '../../../src/model/kv-cache.js';
import { ModelRunner } from '../../../src/model/runner.js';
import { fixtureModel } from '../../fixtures/engine-run.js';
import { attentionCase, rngFor } from '../../fixtures/kernel-cases.js';
import { requireNative } from '../../fixtures/native.js';
import { plainAttention, runAttention } from '../../fixtures/plain-attention.js';

const BLOCK = 16;
const native = requireNative();
const KERNELS: [string, Kernels | undefined][] = [['reference', referenceKernels], ['native', native]];

/** family fixture → whether its token embeddings are scaled by √hidden (the Gemma families) */
const FAMILIES: [string, boolean][] = [
  ['llama-f32', false], ['gemma2-f16', true], ['gemma3-q8_0', true], ['gemma4-f32', true],
  ['qwen35-f16', false], ['qwen3moe-f32', false], ['gptoss-f32', false],
];

function runner(name: string, k: Kernels): ModelRunner {
  const m = fixtureModel(name);
  return new ModelRunner(createArchitecture(m.config, m.tensors), KvCache.forModel(m.config, 8, BLOCK, 'f32', 0, 2), k);
}

/** the rows of `ids` in the model's token embedding, × √hidden where the family scales tokens */
function tokenRows(name: string, ids: number[], scaled: boolean): Float32Array {
  const m = fixtureModel(name);
  const hidden = m.config.hiddenSize;
  const out = new Float32Array(ids.length * hidden);
  referenceKernels.embedRows(out, m.tensors.get('token_embd.weight'), Int32Array.from(ids));
  if (scaled) {
    const s = Math.fround(Math.sqrt(hidden));
    for (let i = 0; i < out.length; i++) out[i] = out[i]! * s;
  }
  return out;
}

function logits(r: ModelRunner, chunk: Omit<SequenceChunk, 'blockTable' | 'startPos' | 'wantLogits'>): Float32Array {
  return r.execute(buildBatch([{ ...chunk, startPos: 0, blockTable: [0, 1, 2], wantLogits: true, ...(r.kv.recurrent && { stateSlot: 0 }) }], BLOCK)).slice();
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const prompt = Array.from({ length: 21 }, (_, i) => (i * 7919 + 3) % 250 + 1);
const AT = 6, COUNT = 9;

for (const [kernelName, k] of KERNELS) {
  describe(`input embeddings on the ${kernelName} kernels`, { skip: k ? false : 'native core unavailable' }, () => {
    for (const [name, scaled] of FAMILIES) {
      it(`${name}: rows carrying the tokens' embeddings give the tokens' logits`, () => {
        const expected = logits(runner(name, k!), { tokenIds: prompt });
        const data = tokenRows(name, prompt.slice(AT, AT + COUNT), scaled);
        // Gemma 4's per-layer inputs read the row's token id (llama.cpp: token 0's for an image),
        // so there the ids stay; elsewhere they become 0 and only the embeddings carry the tokens
        const ids = name.startsWith('gemma4') ? prompt : prompt.map((t, i) => (i >= AT && i < AT + COUNT ? 0 : t));
        const got = logits(runner(name, k!), { tokenIds: ids, embeds: [{ at: AT, count: COUNT, data, nonCausal: false }] });
        assert.ok(maxAbsDiff(got, expected) < 1e-4, `differs by ${maxAbsDiff(got, expected)}`);
        // and the rows are read: other embeddings give other logits
        const other = logits(runner(name, k!), { tokenIds: ids, embeds: [{ at: AT, count: COUNT, data: data.map((v) => -v), nonCausal: false }] });
        assert.ok(maxAbsDiff(other, expected) > 1e-3);
      });
    }

    it('a non-causal span changes the logits after it (its tokens see the whole span), a causal one does not', () => {
      const name = 'llama-f32';
      const data = tokenRows(name, prompt.slice(AT, AT + COUNT), false);
      const ids = prompt.map((t, i) => (i >= AT && i < AT + COUNT ? 0 : t));
      const causal = logits(runner(name, k!), { tokenIds: ids, embeds: [{ at: AT, count: COUNT, data, nonCausal: false }] });
      const both = logits(runner(name, k!), { tokenIds: ids, embeds: [{ at: AT, count: COUNT, data, nonCausal: true }] });
      assert.ok(maxAbsDiff(causal, both) > 1e-4);
    });
  });
}

describe('non-causal spans in a batch', () => {
  it('buildBatch: a span\'s rows read its embeddings and attend up to its last position; other rows keep theirs', () => {
    const hidden = 2;
    const data = Float32Array.from([1, 2, 3, 4, 5, 6]);
    const batch = buildBatch([
      { tokenIds: [5, 6], startPos: 3, blockTable: [0], wantLogits: true },
      { tokenIds: [1, 0, 0, 0, 2], startPos: 10, blockTable: [1], wantLogits: true, embeds: [{ at: 1, count: 3, data, nonCausal: true }] },
    ], BLOCK);
    assert.deepEqual([...batch.inputEmbeds!.rows], [3, 4, 5]);
    assert.deepEqual([...batch.inputEmbeds!.data], [...data]);
    assert.equal(batch.inputEmbeds!.data.length, 3 * hidden);
    assert.deepEqual([...batch.positions], [3, 4, 10, 11, 12, 13, 14]);
    assert.deepEqual([...batch.attentionPositions!], [3, 4, 10, 13, 13, 13, 14]);
  });

  for (const [kernelName, k] of KERNELS) {
    it(`attention over a non-causal span is softmax over every key up to the span's end (${kernelName})`, { skip: k ? false : 'native core unavailable' }, () => {
      const c = attentionCase(rngFor('non-causal'), 'f32', [{ cached: 5, chunk: 12 }, { cached: 0, chunk: 4 }], { numHeads: 4, numKvHeads: 2, headDim: 16 }, 4);
      // the first sequence's tokens 3..8 (positions 8..13) are an image: each sees keys 0..13
      const attend = c.batch.positions.slice();
      attend.fill(13, 3, 9);
      const expected = plainAttention({ ...c, batch: { ...c.batch, positions: attend } }, c.shape);
      const got = runAttention(k!, { ...c, batch: attentionView({ ...c.batch, attentionPositions: attend }) }, c.shape);
      assert.ok(maxAbsDiff(got, expected) < 1e-5, `differs by ${maxAbsDiff(got, expected)}`);
      const causal = runAttention(k!, c, c.shape);
      assert.ok(maxAbsDiff(got, causal) > 1e-3);
    });

    it(`in a sliding-window layer, a non-causal span's token sees the whole span and the window back from its own position (${kernelName})`, { skip: k ? false : 'native core unavailable' }, () => {
      const c = attentionCase(rngFor('non-causal-window'), 'f32', [{ cached: 9, chunk: 12 }], { numHeads: 4, numKvHeads: 2, headDim: 16 }, 4);
      const window = 5;
      // tokens 2..9 (positions 11..18) are an image: token at p sees keys p − 4 .. 18 (llama.cpp: p − k < window, any k ≤ 18)
      const attend = c.batch.positions.slice();
      attend.fill(18, 2, 10);
      const got = runAttention(k!, { ...c, batch: attentionView({ ...c.batch, attentionPositions: attend }) }, { ...c.shape, window });
      // by hand: a token at p attending up to L with window w sees keys L − (L − p + w) + 1 .. L
      const expected = new Float32Array(got.length);
      const width = c.shape.numHeads * c.shape.headDim;
      for (let t = 0; t < c.numTokens; t++) {
        const own = c.batch.positions[t]!;
        const rows = plainAttention({ ...c, batch: { ...c.batch, positions: attend } }, { ...c.shape, window: attend[t]! - own + window });
        expected.set(rows.subarray(t * width, (t + 1) * width), t * width);
      }
      assert.ok(maxAbsDiff(got, expected) < 1e-5, `differs by ${maxAbsDiff(got, expected)}`);
    });
  }
});
