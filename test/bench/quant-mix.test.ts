// llama-quantize's Q4_K_M / Q5_K_M type choices (llama_tensor_get_type in llama.cpp's
// src/llama-quant.cpp): cases worked out by hand from that code, then every bench shape
// against llama-quantize's own answers (goldens of its --dry-run, scripts/quant-mix-goldens.mjs).
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { benchModelContents } from '../../src/bench/make-model.js';
import { matrixType } from '../../src/bench/bench-types.js';
import type { BenchWeightType } from '../../src/bench/bench-types.js';
import type { BenchShapeName } from '../../src/bench/bench-shapes.js';
import { GOLDEN_DIR } from '../fixtures/index.js';
import { mixType, useMoreBits } from '../../src/bench/quant-mix.js';
import { GGMLType, typeName } from '../../src/tensor/weight-types.js';

const T = GGMLType;

describe('Q4_K_M / Q5_K_M mixes', () => {
  it('use_more_bits picks the first and last eighth and every third layer between', () => {
    const picked = (n: number) => Array.from({ length: n }, (_, i) => i).filter((i) => useMoreBits(i, n));
    assert.deepEqual(picked(30), [0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 26, 27, 28, 29]);
    assert.deepEqual(picked(16), [0, 1, 4, 7, 10, 13, 14, 15]);
  });

  it('SmolLM2-135M shape: Q5_0 / Q5_1 / Q8_0 fallbacks for rows of 576', () => {
    const m = (f: 'q4_k_m' | 'q5_k_m', name: string, rowLength: number) => mixType(f, name, rowLength, 30, true);
    assert.equal(m('q4_k_m', 'token_embd.weight', 576), T.Q8_0);
    assert.equal(m('q4_k_m', 'blk.0.attn_q.weight', 576), T.Q5_0);
    assert.equal(m('q4_k_m', 'blk.0.attn_v.weight', 576), T.Q8_0); // Q6_K, then its fallback
    assert.equal(m('q4_k_m', 'blk.3.attn_v.weight', 576), T.Q5_0);
    assert.equal(m('q4_k_m', 'blk.0.ffn_down.weight', 1536), T.Q6_K);
    assert.equal(m('q4_k_m', 'blk.3.ffn_down.weight', 1536), T.Q4_K);
    assert.equal(m('q4_k_m', 'blk.5.ffn_down.weight', 1536), T.Q6_K);
    assert.equal(m('q5_k_m', 'blk.3.attn_q.weight', 576), T.Q5_1);
    assert.equal(m('q5_k_m', 'blk.3.ffn_down.weight', 1536), T.Q5_K);
    assert.equal(m('q5_k_m', 'blk.29.ffn_down.weight', 1536), T.Q6_K);
  });

  it('Llama-3.2-1B shape: Q6_K output and promoted attn_v / ffn_down, the rest Q4_K / Q5_K', () => {
    const m = (f: 'q4_k_m' | 'q5_k_m', name: string, rowLength: number) => mixType(f, name, rowLength, 16, true);
    assert.equal(m('q4_k_m', 'token_embd.weight', 2048), T.Q6_K);
    assert.equal(m('q4_k_m', 'blk.4.attn_v.weight', 2048), T.Q6_K);
    assert.equal(m('q4_k_m', 'blk.3.attn_v.weight', 2048), T.Q4_K);
    assert.equal(m('q4_k_m', 'blk.3.ffn_gate.weight', 2048), T.Q4_K);
    assert.equal(m('q5_k_m', 'blk.3.attn_k.weight', 2048), T.Q5_K);
    assert.equal(m('q5_k_m', 'blk.15.ffn_down.weight', 8192), T.Q6_K);
    assert.equal(mixType('q4_k_m', 'token_embd.weight', 2048, 16, false), T.Q4_K); // untied: not the output
    assert.equal(mixType('q4_k_m', 'output.weight', 2048, 16, false), T.Q6_K);
    // a fused qkv (Phi-3, Qwen3.5's DeltaNet layers) counts as an attn_v (category_is_attn_v)
    assert.equal(mixType('q4_k_m', 'blk.3.attn_qkv.weight', 3072, 32, true), T.Q6_K);
    assert.equal(mixType('q4_k_m', 'blk.5.attn_qkv.weight', 3072, 32, true), T.Q4_K);
    assert.equal(mixType('q5_k_m', 'blk.5.attn_qkv.weight', 3072, 32, true), T.Q5_K);
    // its position among the attn_v-like matrices, where not every layer has one
    assert.equal(mixType('q4_k_m', 'blk.5.attn_v.weight', 2048, 16, true, { index: 3, count: 8 }), T.Q6_K);
    assert.equal(mixType('q4_k_m', 'blk.3.attn_v.weight', 2048, 16, true, { index: 2, count: 8 }), T.Q4_K);
    // experts' and shared experts' down projections are ffn_down
    assert.equal(mixType('q4_k_m', 'blk.0.ffn_down_exps.weight', 768, 48, true), T.Q6_K);
    assert.equal(mixType('q4_k_m', 'blk.6.ffn_down_shexp.weight', 512, 40, true), T.Q4_K);
  });

  it('make-model uses the mix for q4_k_m / q5_k_m and plain types otherwise', () => {
    assert.equal(matrixType('q4_k_m', 'blk.0.attn_q.weight', 576, 30), T.Q5_0);
    assert.equal(matrixType('q5_k_m', 'blk.3.ffn_up.weight', 576, 30), T.Q5_1);
    assert.equal(matrixType('q4_k', 'blk.0.attn_q.weight', 576, 30), T.Q8_0);
    assert.equal(matrixType('q8_0', 'blk.0.ffn_down.weight', 1536, 30), T.Q8_0);
  });
});

describe('the mixes of the bench shapes, against llama-quantize', () => {
  // goldens: llama-quantize --dry-run on each shape's F16 file (scripts/quant-mix-goldens.mjs)
  const dir = join(GOLDEN_DIR, 'quant-mix');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    it(file, () => {
      const golden = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { shape: BenchShapeName; layers: number | null; ftype: string; types: Record<string, string> };
      const type = golden.ftype.toLowerCase() as BenchWeightType;
      const { tensors } = benchModelContents({ shape: golden.shape, type, seed: 1, ...(golden.layers !== null && { layers: golden.layers }) });
      const wrong = tensors.filter((t) => typeName(t.type) !== golden.types[t.name]).map((t) => `${t.name}: ${typeName(t.type)}, llama-quantize ${golden.types[t.name]}`);
      assert.deepEqual(wrong, []);
      assert.equal(tensors.length, Object.keys(golden.types).length);
    });
  }
});
