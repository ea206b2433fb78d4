// RoPE scaling parameters against values worked out by hand from their definitions
// (ggml_rope_yarn_corr_dims, Phi-3's longrope attention factor) and llama.cpp's choice of
// longrope factors by context size.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { longropeAttnFactor, ropeScalingAt, yarnCorrDims, yarnScaling } from '../../src/tensor/rope-scaling.js';
import type { ModelRopeScaling } from '../../src/tensor/rope-scaling.js';

describe('RoPE scaling parameters', () => {
  it('YaRN correction dims: Qwen2.5 with factor 4 over 32k (128 dims, base 1e6) ramps between pairs 23 and 40', () => {
    // n_dims·ln(n_ctx_orig / (β·2π)) / (2·ln base): β = 32 → 23.6 (floor), β = 1 → 39.65 (ceil)
    assert.deepEqual(yarnCorrDims(128, 32768, 1e6, 32, 1), [23, 40]);
    // β = 32 gives a negative dim (clamped to 0); β = 1: 64·ln(64/2π)/(2·ln 1e4) = 8.06 → 9
    assert.deepEqual(yarnCorrDims(64, 64, 10000, 32, 1), [0, 9]);
    const s = yarnScaling(4, 128, 1e6, 32768);
    assert.equal(s.freqScale, 0.25);
    assert.equal(s.extFactor, 1);
  });

  it("longrope attention factor: Phi-3.5-mini's 128k over 4k is sqrt(1 + ln 32 / ln 4096)", () => {
    assert.ok(Math.abs(longropeAttnFactor(131072, 4096) - 1.1902380714238083) < 1e-12);
    assert.equal(longropeAttnFactor(4096, 4096), 1);
  });

  it('longrope: the long factors only when the served context exceeds the original one', () => {
    const short = { freqScale: 1, extFactor: 0, attnFactor: 1.19, corrDims: [0, 0] as const, freqFactors: new Float32Array([1, 1]) };
    const long = { ...short, freqFactors: new Float32Array([2, 9]) };
    const model: ModelRopeScaling = { type: 'longrope', origContext: 4096, scaling: short, long };
    assert.equal(ropeScalingAt(model, 4096), short);
    assert.equal(ropeScalingAt(model, 4097), long);
    assert.equal(ropeScalingAt(undefined, 4097), undefined);
  });
});
