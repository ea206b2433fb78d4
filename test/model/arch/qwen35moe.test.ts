// Qwen3.5-MoE (qwen35moe): the Gated DeltaNet hybrid with routed experts and a sigmoid-gated
// shared expert in every layer. The GGUF fixtures agree with llama.cpp in the suite-wide tests
// (test/model/llama-cpp-agreement.test.ts: reference; test/kernels/native-generate.test.ts:
// native); here: the multi-token-prediction block of the Q8_0 file skipped, the HF folder on
// both kernel sets, and in the engine llama.cpp's greedy tokens inside a batch of other
// sequences (batch invariance) whatever the token budget, every router margin above 1.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Kernels } from '../../../src/kernels/index.js';
import { loadNativeKernels } from '../../../src/kernels/native.js';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { fixtureModel } from '../../fixtures/engine-run.js';
import { agreesWithLlamaCpp, batchedAgreesWithLlamaCpp } from '../../fixtures/moe-cases.js';
import { HF_FIXTURES, QWEN35MOE_FIXTURE_CONFIG } from '../../fixtures/recipe.js';
import { hfFixturePaths } from '../../fixtures/index.js';
import { loadModel } from '../../../src/model/load.js';

const native = loadNativeKernels();
const KERNELS: [string, Kernels | undefined][] = [['reference', referenceKernels], ['native', native]];

describe('qwen35moe: config', () => {
  it('the Q8_0 file has 5 blocks, the last a multi-token-prediction block, which loom skips', () => {
    const c = fixtureModel('qwen35moe-q8_0').config;
    assert.equal(c.arch, 'qwen35moe');
    assert.equal(c.numLayers, 4);
    assert.deepEqual(c.linearAttention?.layers, [true, true, true, false]);
    const x = QWEN35MOE_FIXTURE_CONFIG;
    assert.deepEqual(c.moe, { numExperts: x.expertCount, numExpertsUsed: x.expertUsedCount, expertFfnSize: x.expertFfnSize, normTopK: true, sharedFfnSize: x.sharedFfnSize });
  });
});

describe('qwen35moe from a Hugging Face folder (transformers\' 3-D fused experts, BF16)', () => {
  const f = HF_FIXTURES.find((x) => x.name === 'hf-qwen35moe')!;
  for (const [name, kernels] of KERNELS) {
    it(`${f.name} (${name}): llama.cpp's tokens and logits of the GGUF twin`, { skip: kernels ? false : 'native core unavailable' }, (t) => {
      const model = loadModel(hfFixturePaths(f).folder);
      assert.equal(model.config.arch, 'qwen35moe');
      agreesWithLlamaCpp(t, f.name, f.dtype, kernels!, model);
    });
  }
});

describe('qwen35moe under batching (qwen35moe-q8_0: tokens of several sequences share experts)', () => {
  for (const [name, kernels] of KERNELS) {
    for (const budget of [2048, 7]) {
      it(`${name}: llama.cpp's greedy tokens inside a batch of 7 others (token budget ${budget})`, { skip: kernels ? false : 'native core unavailable' }, () =>
        batchedAgreesWithLlamaCpp('qwen35moe-q8_0', kernels!, budget, 4));
    }
  }
});
