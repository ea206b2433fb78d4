// Qwen3.5's M-RoPE in the text model: the GGUF's rope.dimension_sections read into the config,
// a batch's ropePositions (section-major, as llama.cpp's M-RoPE batches) consumed by the full-
// attention layers with IMROPE. A text batch whose M-RoPE positions are (p, p, p, p) must give
// exactly the logits of the same batch without them (llama.cpp broadcasts a text token's
// position to every section), and image-like positions must change them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Kernels } from '../../../src/kernels/index.js';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { createArchitecture } from '../../../src/model/arch/index.js';
import { buildBatch } from '../../../src/model/batch.js';
import type { ForwardBatch } from '../../../src/model/batch.js';
import { KvCache } from '../../../src/model/kv-cache.js';
import { ModelRunner } from '../../../src/model/runner.js';
import { fixtureModel } from '../../fixtures/engine-run.js';
import { QWEN35_FIXTURE_CONFIG } from '../../fixtures/recipe.js';
import { nativeSkip, requireNative } from '../../fixtures/native.js';

const BLOCK = 16;
const PROMPT = [5, 17, 3, 40, 41, 42, 43, 44, 45, 9, 11];

/** the prompt's logits after every token, with `rope` as the batch's M-RoPE positions (or none) */
function logits(name: string, kernels: Kernels, rope?: (n: number) => Int32Array): Float32Array {
  const model = fixtureModel(name);
  const runner = new ModelRunner(createArchitecture(model.config, model.tensors), KvCache.forModel(model.config, 1, BLOCK), kernels);
  const batch: ForwardBatch = buildBatch([{ tokenIds: PROMPT, startPos: 0, blockTable: [0], stateSlot: 0, wantLogits: true, allLogits: true }], BLOCK);
  return runner.execute(rope ? { ...batch, ropePositions: rope(PROMPT.length) } : batch).slice();
}

/** text positions: (p, p, p, p) */
const textPositions = (n: number): Int32Array => {
  const out = new Int32Array(4 * n);
  for (let c = 0; c < 4; c++) for (let t = 0; t < n; t++) out[c * n + t] = t;
  return out;
};

/** tokens 2..7 an image of 2 × 3 at p0 = 2 (mtmd: (p0, p0 + y, p0 + x, 0)); the text after it at p0 + max(2, 3) */
const imagePositions = (n: number): Int32Array => {
  const out = textPositions(n);
  for (let i = 0; i < 6; i++) {
    const t = 2 + i;
    out[t] = 2;
    out[n + t] = 2 + Math.floor(i / 3);
    out[2 * n + t] = 2 + (i % 3);
    out[3 * n + t] = 0;
  }
  for (let t = 8; t < n; t++) for (let c = 0; c < 3; c++) out[c * n + t] = 5 + (t - 8);
  for (let t = 8; t < n; t++) out[3 * n + t] = 5 + (t - 8);
  return out;
};

describe('qwen35: M-RoPE sections and positions', () => {
  it('rope.dimension_sections is read into the config', () => {
    for (const name of ['qwen35-f16', 'qwen35moe-q8_0']) {
      assert.deepEqual(fixtureModel(name).config.ropeSections, QWEN35_FIXTURE_CONFIG.ropeSections, name);
    }
  });

  for (const [kernelName, get, skip] of [['reference', () => referenceKernels, false], ['native', () => requireNative()!, nativeSkip()]] as const) {
    for (const name of ['qwen35-f16', 'qwen35moe-q8_0']) {
      it(`${name} (${kernelName}): text M-RoPE positions leave the logits exactly as they were; image positions move them`, { skip }, () => {
        const k = get();
        const plain = logits(name, k);
        assert.deepEqual(logits(name, k, textPositions), plain);
        const image = logits(name, k, imagePositions);
        const vocab = fixtureModel(name).config.vocabSize;
        // the first two tokens see no image; every later row does
        assert.deepEqual(image.subarray(0, 2 * vocab), plain.subarray(0, 2 * vocab));
        for (let t = 3; t < PROMPT.length; t++) {
          assert.notDeepEqual(image.subarray(t * vocab, (t + 1) * vocab), plain.subarray(t * vocab, (t + 1) * vocab), `row ${t}`);
        }
      });
    }
  }

  it('a batch whose ropePositions do not hold 4 per token is refused', () => {
    const model = fixtureModel('qwen35-f16');
    const runner = new ModelRunner(createArchitecture(model.config, model.tensors), KvCache.forModel(model.config, 1, BLOCK), referenceKernels);
    const batch = buildBatch([{ tokenIds: [1, 2], startPos: 0, blockTable: [0], stateSlot: 0, wantLogits: true }], BLOCK);
    assert.throws(() => runner.execute({ ...batch, ropePositions: new Int32Array(6) }), /ropePositions must be \[4/);
  });
});
