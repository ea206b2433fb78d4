// The forward pass gives the same logits for a sequence however it is batched: alone or
// beside others, prefilled at once or in chunks, with any block ids. This is what lets
// the engine batch freely later.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { referenceKernels } from '../../src/kernels/reference.js';
import { createArchitecture } from '../../src/model/arch/index.js';
import { buildBatch } from '../../src/model/batch.js';
import type { SequenceChunk } from '../../src/model/batch.js';
import { KvCache } from '../../src/model/kv-cache.js';
import { loadModel } from '../../src/model/load.js';
import { ModelRunner } from '../../src/model/runner.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const BLOCK = 16;

function runnerFor(name: string, numBlocks = 16): ModelRunner {
  const fixture = GGUF_FIXTURES.find((f) => f.name === name)!;
  const model = loadModel(ggufFixturePath(fixture));
  return new ModelRunner(createArchitecture(model.config, model.tensors), KvCache.forModel(model.config, numBlocks, BLOCK), referenceKernels);
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** logits after each chunk boundary of one sequence, fed in the given chunk sizes */
function prefillInChunks(runner: ModelRunner, ids: number[], sizes: number[], blockTable: number[]): Float32Array {
  let pos = 0;
  let logits: Float32Array = new Float32Array();
  for (const size of sizes) {
    const chunk: SequenceChunk = { tokenIds: ids.slice(pos, pos + size), startPos: pos, blockTable, wantLogits: true };
    logits = runner.execute(buildBatch([chunk], BLOCK));
    pos += size;
  }
  return logits;
}

const prompt = Array.from({ length: 37 }, (_, i) => (i * 7919 + 3) % 300);

for (const name of ['llama-f32', 'qwen2-f32', 'qwen3-f32', 'gpt2-f32']) {
  describe(`forward pass of ${name}`, () => {
    it('prefill at once, in chunks, and token by token agree', () => {
      const table = [0, 1, 2];
      const whole = prefillInChunks(runnerFor(name), prompt, [37], table);
      const chunked = prefillInChunks(runnerFor(name), prompt, [5, 16, 1, 15], table);
      const single = prefillInChunks(runnerFor(name), prompt, Array(37).fill(1), table);
      assert.ok(maxAbsDiff(whole, chunked) < 1e-4, `chunked differs by ${maxAbsDiff(whole, chunked)}`);
      assert.ok(maxAbsDiff(whole, single) < 1e-4, `token by token differs by ${maxAbsDiff(whole, single)}`);
    });

    it('a sequence batched with another, in scattered blocks, gives its logits alone', () => {
      const other = Array.from({ length: 20 }, (_, i) => (i * 31 + 11) % 300);
      const alone = prefillInChunks(runnerFor(name), prompt, [37], [0, 1, 2]);
      const otherAlone = prefillInChunks(runnerFor(name), other, [20], [0, 1]);
      const runner = runnerFor(name);
      const tables = { a: [9, 3, 12], b: [5, 0] };
      const together = runner.execute(
        buildBatch(
          [
            { tokenIds: other, startPos: 0, blockTable: tables.b, wantLogits: true },
            { tokenIds: prompt, startPos: 0, blockTable: tables.a, wantLogits: true },
          ],
          BLOCK,
        ),
      );
      const vocab = runner.arch.config.vocabSize;
      assert.ok(maxAbsDiff(together.subarray(vocab), alone) < 1e-4);
      assert.ok(maxAbsDiff(together.subarray(0, vocab), otherAlone) < 1e-4);
      // and a decode step of one beside a prefill chunk of the other
      const next = runner.execute(
        buildBatch(
          [
            { tokenIds: [42], startPos: 37, blockTable: tables.a, wantLogits: true },
            { tokenIds: [7, 8], startPos: 20, blockTable: tables.b, wantLogits: true },
          ],
          BLOCK,
        ),
      );
      const decodeAlone = prefillInChunks(runnerFor(name), [...prompt, 42], [37, 1], [0, 1, 2]);
      assert.ok(maxAbsDiff(next.subarray(0, vocab), decodeAlone) < 1e-4);
    });
  });
}
