// gpt-oss (llama.cpp's openai-moe graph): attention sinks, sliding-window layers alternating with
// full ones, biases on q/k/v/o, the router and the experts, top k on the raw router logits with
// a softmax over the k, OpenAI's clamped SwiGLU, YaRN. The GGUF fixtures gptoss-f32 and
// gptoss-mxfp4 (MXFP4 experts, Q8_0 elsewhere: llama-quantize's MXFP4_MOE) agree with llama.cpp
// in the suite-wide tests (test/model/llama-cpp-agreement.test.ts: reference;
// test/kernels/native-generate.test.ts: native, and again with the wider SIMD paths off in
// simd-paths.test.ts); here: the config, the two expert pieces against plain math,
// llama.cpp's greedy tokens inside a batch of other sequences, and the Hugging Face folder
// (OpenAI's MXFP4 experts repacked to ggml's) against llama.cpp on its GGUF twin.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Kernels } from '../../../src/kernels/index.js';
import { loadNativeKernels } from '../../../src/kernels/native.js';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { fixtureModel } from '../../fixtures/engine-run.js';
import { agreesWithLlamaCpp, batchedAgreesWithLlamaCpp } from '../../fixtures/moe-cases.js';
import { GPTOSS_FIXTURE_CONFIG, HF_FIXTURES } from '../../fixtures/recipe.js';
import { hfFixturePaths } from '../../fixtures/index.js';
import { loadModel } from '../../../src/model/load.js';
import { repackMxfp4 } from '../../../src/model/hf-gptoss.js';
import { writeSafetensors } from '../../../src/model/safetensors-writer.js';
import { UnsupportedModelError } from '../../../src/errors.js';
import { GGMLType } from '../../../src/tensor/weight-types.js';
import { routeTopKSoftmax, swigluOai } from '../../../src/model/arch/oai-moe.js';

const native = loadNativeKernels();
const KERNELS: [string, Kernels | undefined][] = [['reference', referenceKernels], ['native', native]];

describe('gpt-oss: config', () => {
  it('reads the experts, the window on layers 0 and 2, YaRN; the MXFP4_MOE file keeps its experts in MXFP4', () => {
    const m = fixtureModel('gptoss-mxfp4');
    const x = GPTOSS_FIXTURE_CONFIG;
    assert.equal(m.config.arch, 'gpt-oss');
    assert.deepEqual(m.config.moe, { numExperts: x.expertCount, numExpertsUsed: x.expertUsedCount, expertFfnSize: x.expertFfnSize, normTopK: false });
    assert.deepEqual(m.config.slidingWindow, { size: 12, layers: [true, false, true, false], ropeBase: x.ropeTheta });
    assert.equal(m.config.ropeScaling?.type, 'yarn');
    assert.equal(m.config.ropeStyle, 'neox');
    assert.equal(m.tensors.get('blk.0.ffn_gate_exps.weight').type, GGMLType.MXFP4);
    assert.equal(m.tensors.get('blk.3.ffn_down_exps.weight').type, GGMLType.MXFP4);
    assert.equal(m.tensors.get('blk.0.attn_sinks.weight').type, GGMLType.F32);
  });
});

describe('gpt-oss: the experts\' pieces', () => {
  it('swigluOai is min(g, 7)·σ(1.702·min(g, 7))·(clamp(u, ±7) + 1)', () => {
    const gate = Float32Array.from([-20, -3, -0.5, 0, 0.5, 3, 6.99, 7, 9, 40]);
    const up = Float32Array.from([-9, -7.5, -1, 0, 1, 2, 6.5, 7.5, -0.25, 100]);
    const out = new Float32Array(gate.length);
    swigluOai(out, gate, up, gate.length);
    gate.forEach((g, i) => {
      const x = Math.min(g, 7);
      const y = Math.min(Math.max(up[i]!, -7), 7);
      const want = (x / (1 + Math.exp(-1.702 * x))) * (y + 1);
      assert.ok(Math.abs(out[i]! - want) <= 1e-6 * Math.max(1, Math.abs(want)), `gate ${g}, up ${up[i]}: ${out[i]} vs ${want}`);
    });
  });

  it('routeTopKSoftmax takes the k largest logits (lowest id among equals), weights a softmax over those k', () => {
    const p = { numExperts: 6, numExpertsUsed: 3, expertFfnSize: 32, normTopK: false };
    const logits = Float32Array.from([0.5, 2, -1, 2, 1.5, 0, /* token 2 */ -3, -2, -1, 5, 4, 3.5]);
    const routing = { experts: new Int32Array(6), weights: new Float32Array(6) };
    const gap = routeTopKSoftmax(logits, 2, p, routing);
    assert.deepEqual([...routing.experts], [1, 3, 4, 3, 4, 5]);
    const soft = (xs: number[]): number[] => xs.map((x) => Math.exp(x) / xs.reduce((a, b) => a + Math.exp(b), 0));
    const want = [...soft([2, 2, 1.5]), ...soft([5, 4, 3.5])];
    routing.weights.forEach((w, i) => assert.ok(Math.abs(w - want[i]!) < 1e-6, `weight ${i}: ${w} vs ${want[i]}`));
    assert.equal(gap, 1); // token 1: 1.5 (3rd) against 0.5 (4th); token 2: 3.5 against −1
  });
});

describe('gpt-oss under batching (gptoss-mxfp4: tokens of several sequences share experts)', () => {
  for (const [name, kernels] of KERNELS) {
    for (const budget of [2048, 7]) {
      it(`${name}: llama.cpp's greedy tokens inside a batch of 7 others (token budget ${budget})`, { skip: kernels ? false : 'native core unavailable' }, () =>
        batchedAgreesWithLlamaCpp('gptoss-mxfp4', kernels!, budget, 4));
    }
  }
});

describe('gpt-oss from a Hugging Face folder (MXFP4 experts as *_blocks / *_scales, BF16 elsewhere)', () => {
  const f = HF_FIXTURES.find((x) => x.name === 'hf-gptoss')!;
  for (const [name, kernels] of KERNELS) {
    it(`${f.name} (${name}): llama.cpp's tokens and logits of the GGUF twin`, { skip: kernels ? false : 'native core unavailable' }, (t) => {
      const model = loadModel(hfFixturePaths(f).folder);
      assert.equal(model.config.arch, 'gpt-oss');
      assert.equal(model.tensors.get('blk.1.ffn_up_exps.weight').type, GGMLType.MXFP4);
      // the experts are MXFP4 (their activations rounded to Q8_0), so the bound is MXFP4_MOE's, not BF16's
      agreesWithLlamaCpp(t, f.name, 'MXFP4_MOE', kernels!, model);
    });
  }

  it('repackMxfp4 puts HF value 2i / 2i + 1 (byte i, low / high nibble) at ggml value j / j + 16 (byte j), gate rows even, up rows odd', () => {
    // one expert, 2 rows (gate, up), one block each: values v[r][k] = (k + r) % 16, scales 120 and 121
    const blocks = new Uint8Array(32);
    for (let r = 0; r < 2; r++) for (let i = 0; i < 16; i++) blocks[r * 16 + i] = ((2 * i + r) % 16) | (((2 * i + 1 + r) % 16) << 4);
    const scales = Uint8Array.from([120, 121]);
    for (const [which, r] of [['gate', 0], ['up', 1]] as const) {
      const out = repackMxfp4(blocks, scales, 1, 2, 1, which);
      assert.equal(out[0], 120 + r);
      for (let j = 0; j < 16; j++) assert.equal(out[1 + j], ((j + r) % 16) | (((j + 16 + r) % 16) << 4), `${which} byte ${j}`);
    }
  });
});

describe('gpt-oss folders loom refuses', () => {
  it('experts dequantized to BF16 (mlp.experts.gate_up_proj, no *_blocks): one line naming the tensor', () => {
    const src = hfFixturePaths(HF_FIXTURES.find((x) => x.name === 'hf-gptoss')!).folder;
    const dir = mkdtempSync(join(tmpdir(), 'loom-gptoss-bf16-'));
    try {
      for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json']) copyFileSync(join(src, f), join(dir, f));
      writeSafetensors(join(dir, 'model.safetensors'), [{ name: 'model.layers.0.mlp.experts.gate_up_proj', dtype: 'BF16', shape: [8, 256, 512], data: new Uint8Array(8 * 256 * 512 * 2) }]);
      assert.throws(() => loadModel(dir), (e: Error) => e instanceof UnsupportedModelError && /dequantized to BF16 \(model\.layers\.0\.mlp\.experts\.gate_up_proj\)/.test(e.message));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
