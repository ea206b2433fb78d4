// Gemma 4 26B-A4B's MoE layers (gemma4 with experts): in every layer the dense MLP (its output
// RMSNorm'd) plus GeGLU experts over their own RMSNorm of the residual, routed from
// RMSNorm(x)/√hidden·scale, each expert's output scaled by its per-expert down scale, the
// experts' sum RMSNorm'd; gate and up fused per expert as the converter writes them.
// The fixtures gemma4moe-f32/-q8_0 agree with llama.cpp in the suite-wide tests (reference and
// native); here: the config, and llama.cpp's greedy tokens inside a batch of others.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Kernels } from '../../../src/kernels/index.js';
import { loadNativeKernels } from '../../../src/kernels/native.js';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { fixtureModel } from '../../fixtures/engine-run.js';
import { batchedAgreesWithLlamaCpp } from '../../fixtures/moe-cases.js';
import { GEMMA4_MOE_FIXTURE_CONFIG } from '../../fixtures/recipe.js';

const native = loadNativeKernels();
const KERNELS: [string, Kernels | undefined][] = [['reference', referenceKernels], ['native', native]];

describe('gemma4 MoE layers: config', () => {
  it('reads the experts keys; the file holds gate and up fused and the per-expert down scale', () => {
    const m = fixtureModel('gemma4moe-q8_0');
    const x = GEMMA4_MOE_FIXTURE_CONFIG;
    assert.equal(m.config.arch, 'gemma4');
    assert.deepEqual(m.config.moe, { numExperts: x.expertCount, numExpertsUsed: x.expertUsedCount, expertFfnSize: x.expertFfnSize, normTopK: true });
    assert.ok(m.tensors.has('blk.0.ffn_gate_up_exps.weight') && !m.tensors.has('blk.0.ffn_gate_exps.weight'));
    assert.ok(m.tensors.has('blk.5.ffn_down_exps.scale'));
  });

  it("26B-A4B's build: no per-layer inputs, no shared KV, the global layers' V from K (no attn_v)", () => {
    const m = fixtureModel('gemma4moe-26b-q8_0');
    assert.equal(m.config.gemma4?.perLayerInput, 0);
    assert.equal(m.config.kvSource, undefined);
    assert.deepEqual(m.config.slidingWindow?.layers, [true, true, false, true, true, false]);
    assert.ok(!m.tensors.has('blk.2.attn_v.weight') && m.tensors.has('blk.1.attn_v.weight'));
  });
});

describe('gemma4 MoE layers under batching', () => {
  for (const [fixture, budgets] of [['gemma4moe-q8_0', [2048, 7]], ['gemma4moe-26b-q8_0', [7]]] as const) {
    for (const [name, kernels] of KERNELS) {
      for (const budget of budgets) {
        it(`${fixture}, ${name}: llama.cpp's greedy tokens inside a batch of 7 others (token budget ${budget})`, { skip: kernels ? false : 'native core unavailable' }, () =>
          batchedAgreesWithLlamaCpp(fixture, kernels!, budget, 6));
      }
    }
  }
});
