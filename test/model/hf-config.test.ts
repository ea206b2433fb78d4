import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ModelFormatError, UnsupportedModelError } from '../../src/errors.js';
import { readHFConfig } from '../../src/model/hf-config.js';
import type { ModelConfig } from '../../src/model/weights.js';

const root = mkdtempSync(join(tmpdir(), 'loom-hfc-'));
after(() => rmSync(root, { recursive: true, force: true }));
let serial = 0;

/** a folder holding config.json with `text` (string) or `json` (object) */
function folder(content: unknown): string {
  const dir = join(root, String(serial++));
  mkdirSync(dir);
  writeFileSync(join(dir, 'config.json'), typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return dir;
}

function throwsWith(fn: () => unknown, type: new (...args: never[]) => Error, ...parts: string[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof type, `expected ${type.name}, got ${String(e)}`);
    for (const p of parts) assert.ok(e.message.includes(p), `message ${JSON.stringify(e.message)} lacks ${JSON.stringify(p)}`);
    return true;
  });
}

// Real config.json contents of published checkpoints (fields as released).
const SMOLLM2_135M = {
  architectures: ['LlamaForCausalLM'], attention_bias: false, attention_dropout: 0.0, bos_token_id: 0, eos_token_id: 0,
  hidden_act: 'silu', hidden_size: 576, initializer_range: 0.041666666666666664, intermediate_size: 1536,
  is_llama_config: true, max_position_embeddings: 8192, model_type: 'llama', num_attention_heads: 9,
  num_hidden_layers: 30, num_key_value_heads: 3, pretraining_tp: 1, rms_norm_eps: 1e-5, rope_interleaved: false,
  rope_scaling: null, rope_theta: 100000, tie_word_embeddings: true, torch_dtype: 'bfloat16',
  transformers_version: '4.42.3', use_cache: true, vocab_size: 49152,
};
const TINYLLAMA_CHAT = {
  architectures: ['LlamaForCausalLM'], attention_bias: false, bos_token_id: 1, eos_token_id: 2, hidden_act: 'silu',
  hidden_size: 2048, initializer_range: 0.02, intermediate_size: 5632, max_position_embeddings: 2048,
  model_type: 'llama', num_attention_heads: 32, num_hidden_layers: 22, num_key_value_heads: 4, pretraining_tp: 1,
  rms_norm_eps: 1e-5, rope_scaling: null, rope_theta: 10000.0, tie_word_embeddings: false, torch_dtype: 'bfloat16',
  transformers_version: '4.35.0', use_cache: true, vocab_size: 32000,
};
const QWEN25_05B = {
  architectures: ['Qwen2ForCausalLM'], attention_dropout: 0.0, bos_token_id: 151643, eos_token_id: 151643,
  hidden_act: 'silu', hidden_size: 896, initializer_range: 0.02, intermediate_size: 4864,
  max_position_embeddings: 32768, max_window_layers: 24, model_type: 'qwen2', num_attention_heads: 14,
  num_hidden_layers: 24, num_key_value_heads: 2, rms_norm_eps: 1e-6, rope_theta: 1000000.0, sliding_window: 32768,
  tie_word_embeddings: true, torch_dtype: 'bfloat16', transformers_version: '4.40.1', use_cache: true,
  use_sliding_window: false, vocab_size: 151936,
};
const QWEN3_06B = {
  architectures: ['Qwen3ForCausalLM'], attention_bias: false, attention_dropout: 0.0, bos_token_id: 151643,
  eos_token_id: 151645, head_dim: 128, hidden_act: 'silu', hidden_size: 1024, initializer_range: 0.02,
  intermediate_size: 3072, max_position_embeddings: 40960, max_window_layers: 28, model_type: 'qwen3',
  num_attention_heads: 16, num_hidden_layers: 28, num_key_value_heads: 8, rms_norm_eps: 1e-6, rope_scaling: null,
  rope_theta: 1000000, sliding_window: null, tie_word_embeddings: true, torch_dtype: 'bfloat16',
  transformers_version: '4.51.0', use_cache: true, use_sliding_window: false, vocab_size: 151936,
};
const GPT2 = {
  activation_function: 'gelu_new', architectures: ['GPT2LMHeadModel'], attn_pdrop: 0.1, bos_token_id: 50256,
  embd_pdrop: 0.1, eos_token_id: 50256, initializer_range: 0.02, layer_norm_epsilon: 1e-5, model_type: 'gpt2',
  n_ctx: 1024, n_embd: 768, n_head: 12, n_layer: 12, n_positions: 1024, resid_pdrop: 0.1, summary_activation: null,
  summary_first_dropout: 0.1, summary_proj_to_labels: true, summary_type: 'cls_index', summary_use_proj: true,
  task_specific_params: { 'text-generation': { do_sample: true, max_length: 50 } }, vocab_size: 50257,
};
const MISTRAL_7B_V01 = {
  architectures: ['MistralForCausalLM'], bos_token_id: 1, eos_token_id: 2, hidden_act: 'silu', hidden_size: 4096,
  initializer_range: 0.02, intermediate_size: 14336, max_position_embeddings: 32768, model_type: 'mistral',
  num_attention_heads: 32, num_hidden_layers: 32, num_key_value_heads: 8, rms_norm_eps: 1e-5, rope_theta: 10000.0,
  sliding_window: 4096, tie_word_embeddings: false, torch_dtype: 'bfloat16', transformers_version: '4.34.0.dev0',
  use_cache: true, vocab_size: 32000,
};
const MISTRAL_7B_INSTRUCT_V02 = { ...MISTRAL_7B_V01, rope_theta: 1000000.0, sliding_window: null };
const LLAMA32_1B_ROPE_SCALING = {
  factor: 32.0, high_freq_factor: 4.0, low_freq_factor: 1.0, original_max_position_embeddings: 8192, rope_type: 'llama3',
};

describe('readHFConfig: real configs', () => {
  const cases: [string, unknown, ModelConfig][] = [
    ['SmolLM2-135M', SMOLLM2_135M, {
      arch: 'llama', vocabSize: 49152, hiddenSize: 576, numLayers: 30, numHeads: 9, numKvHeads: 3, headDim: 64,
      ffnSize: 1536, contextLength: 8192, normEps: 1e-5, ropeBase: 100000, ropeDim: 64, ropeStyle: 'neox', tiedEmbeddings: true,
    }],
    ['TinyLlama-1.1B-Chat', TINYLLAMA_CHAT, {
      arch: 'llama', vocabSize: 32000, hiddenSize: 2048, numLayers: 22, numHeads: 32, numKvHeads: 4, headDim: 64,
      ffnSize: 5632, contextLength: 2048, normEps: 1e-5, ropeBase: 10000, ropeDim: 64, ropeStyle: 'neox', tiedEmbeddings: false,
    }],
    ['Qwen2.5-0.5B', QWEN25_05B, {
      arch: 'qwen2', vocabSize: 151936, hiddenSize: 896, numLayers: 24, numHeads: 14, numKvHeads: 2, headDim: 64,
      ffnSize: 4864, contextLength: 32768, normEps: 1e-6, ropeBase: 1e6, ropeDim: 64, ropeStyle: 'neox', tiedEmbeddings: true,
    }],
    ['Qwen3-0.6B (head_dim 128 ≠ 1024/16)', QWEN3_06B, {
      arch: 'qwen3', vocabSize: 151936, hiddenSize: 1024, numLayers: 28, numHeads: 16, numKvHeads: 8, headDim: 128,
      ffnSize: 3072, contextLength: 40960, normEps: 1e-6, ropeBase: 1e6, ropeDim: 128, ropeStyle: 'neox', tiedEmbeddings: true,
    }],
    ['GPT-2 (n_* names, no n_inner, tied by default)', GPT2, {
      arch: 'gpt2', vocabSize: 50257, hiddenSize: 768, numLayers: 12, numHeads: 12, numKvHeads: 12, headDim: 64,
      ffnSize: 3072, contextLength: 1024, normEps: 1e-5, ropeBase: 10000, ropeDim: 64, ropeStyle: 'normal', tiedEmbeddings: true,
    }],
    ['Mistral-7B-Instruct-v0.2 (no sliding window)', MISTRAL_7B_INSTRUCT_V02, {
      arch: 'llama', vocabSize: 32000, hiddenSize: 4096, numLayers: 32, numHeads: 32, numKvHeads: 8, headDim: 128,
      ffnSize: 14336, contextLength: 32768, normEps: 1e-5, ropeBase: 1e6, ropeDim: 128, ropeStyle: 'neox', tiedEmbeddings: false,
    }],
  ];
  for (const [name, json, expected] of cases) {
    test(name, () => assert.deepEqual(readHFConfig(folder(json)), expected));
  }
});

describe('readHFConfig: defaults and variants', () => {
  const base = { ...TINYLLAMA_CHAT };

  test('llama defaults: kv heads = heads, rope_theta 10000, rms eps 1e-6, untied', () => {
    const { num_key_value_heads: _kv, rope_theta: _t, rms_norm_eps: _e, tie_word_embeddings: _tie, ...rest } = base;
    const c = readHFConfig(folder(rest));
    assert.equal(c.numKvHeads, 32);
    assert.equal(c.ropeBase, 10000);
    assert.equal(c.normEps, 1e-6);
    assert.equal(c.tiedEmbeddings, false);
  });

  test('model_type alone selects the family', () => {
    const { architectures: _a, ...rest } = QWEN25_05B;
    assert.equal(readHFConfig(folder(rest)).arch, 'qwen2');
  });

  test('head_dim null falls back to hidden/heads', () => {
    assert.equal(readHFConfig(folder({ ...base, head_dim: null })).headDim, 64);
  });

  test('partial_rotary_factor sets the rotated dims', () => {
    assert.equal(readHFConfig(folder({ ...base, partial_rotary_factor: 0.5 })).ropeDim, 32);
  });

  test('rope_scaling {rope_type: "default"} is no scaling', () => {
    assert.equal(readHFConfig(folder({ ...base, rope_scaling: { rope_type: 'default' } })).ropeBase, 10000);
  });

  test('newer transformers rope_parameters', () => {
    const { rope_theta: _t, rope_scaling: _s, ...rest } = base;
    const c = readHFConfig(folder({ ...rest, rope_parameters: { rope_type: 'default', rope_theta: 500000.0 } }));
    assert.equal(c.ropeBase, 500000);
  });

  test('GPT-2 n_inner when given', () => {
    assert.equal(readHFConfig(folder({ ...GPT2, n_inner: 1000 })).ffnSize, 1000);
    assert.equal(readHFConfig(folder({ ...GPT2, n_inner: null })).ffnSize, 3072);
  });

  test('Mistral with a window at least the context is plain attention', () => {
    assert.equal(readHFConfig(folder({ ...MISTRAL_7B_V01, sliding_window: 32768 })).arch, 'llama');
  });
});

describe('readHFConfig: errors name the config file and the problem', () => {
  test('Mistral-7B-v0.1 sliding window 4096 is rejected', () => {
    const dir = folder(MISTRAL_7B_V01);
    throwsWith(() => readHFConfig(dir), UnsupportedModelError, join(dir, 'config.json'), 'sliding', '4096');
  });

  test('Mistral without sliding_window gets the HF default 4096, rejected', () => {
    const { sliding_window: _w, ...rest } = MISTRAL_7B_V01;
    throwsWith(() => readHFConfig(folder(rest)), UnsupportedModelError, 'sliding_window 4096');
  });

  test('Qwen2 with use_sliding_window is rejected', () => {
    throwsWith(() => readHFConfig(folder({ ...QWEN25_05B, use_sliding_window: true })), UnsupportedModelError, 'use_sliding_window');
  });

  test('Llama 3.2-style llama3 rope_scaling becomes per-pair frequency divisors', () => {
    const c = readHFConfig(folder({ ...TINYLLAMA_CHAT, rope_theta: 500000, rope_scaling: LLAMA32_1B_ROPE_SCALING }));
    assert.equal(c.ropeScaling?.type, 'llama3');
    const f = c.ropeScaling!.scaling.freqFactors!;
    assert.equal(f.length, c.ropeDim / 2);
    // Llama 3.1's rule: wavelengths under 8192/4 keep their frequency, over 8192/1 are divided by factor 32,
    // smoothly in between (so divisors only grow with the pair index)
    assert.equal(f[0], 1);
    assert.equal(f[f.length - 1], 32);
    for (let i = 1; i < f.length; i++) assert.ok(f[i]! >= f[i - 1]!, `divisor ${i} ${f[i]} < ${f[i - 1]}`);
    assert.ok(f.some((v) => v > 1 && v < 32), 'some pairs in the smooth band');
  });

  test('old-style {type: "linear"} scaling squeezes angles by the factor', () => {
    const c = readHFConfig(folder({ ...TINYLLAMA_CHAT, rope_scaling: { type: 'linear', factor: 2 } }));
    assert.equal(c.ropeScaling?.type, 'linear');
    assert.equal(c.ropeScaling?.scaling.freqScale, 0.5);
  });

  test('yarn: factor, original context, correction dims', () => {
    const c = readHFConfig(folder({ ...TINYLLAMA_CHAT, rope_scaling: { rope_type: 'yarn', factor: 4, original_max_position_embeddings: 32768 } }));
    assert.equal(c.ropeScaling?.type, 'yarn');
    assert.equal(c.ropeScaling?.origContext, 32768);
    assert.equal(c.ropeScaling?.scaling.freqScale, 0.25);
    assert.equal(c.ropeScaling?.scaling.extFactor, 1);
  });

  test('dynamic NTK rope_scaling is refused by name', () => {
    throwsWith(() => readHFConfig(folder({ ...TINYLLAMA_CHAT, rope_scaling: { type: 'dynamic', factor: 2 } })), UnsupportedModelError, 'dynamic');
  });

  test('unknown architecture', () => {
    const dir = folder({ ...TINYLLAMA_CHAT, architectures: ['GemmaForCausalLM'], model_type: 'gemma' });
    throwsWith(() => readHFConfig(dir), UnsupportedModelError, join(dir, 'config.json'), 'GemmaForCausalLM');
  });

  test('unknown model_type without architectures', () => {
    const { architectures: _a, ...rest } = { ...TINYLLAMA_CHAT, model_type: 'mamba' };
    throwsWith(() => readHFConfig(folder(rest)), UnsupportedModelError, 'mamba');
  });

  test('missing config.json', () => {
    const dir = join(root, 'no-config');
    mkdirSync(dir);
    throwsWith(() => readHFConfig(dir), ModelFormatError, join(dir, 'config.json'), 'no such file');
  });

  test('invalid JSON', () => {
    const dir = folder('{"architectures": ["LlamaForCausalLM"],');
    throwsWith(() => readHFConfig(dir), ModelFormatError, join(dir, 'config.json'), 'not valid JSON');
  });

  test('missing and mistyped fields are named', () => {
    const { hidden_size: _h, ...rest } = TINYLLAMA_CHAT;
    throwsWith(() => readHFConfig(folder(rest)), ModelFormatError, 'missing "hidden_size"');
    throwsWith(() => readHFConfig(folder({ ...TINYLLAMA_CHAT, vocab_size: '32000' })), ModelFormatError, '"vocab_size"', 'positive integer');
    throwsWith(() => readHFConfig(folder({ ...TINYLLAMA_CHAT, tie_word_embeddings: 'yes' })), ModelFormatError, '"tie_word_embeddings"');
  });

  test('heads not a multiple of kv heads', () => {
    throwsWith(() => readHFConfig(folder({ ...TINYLLAMA_CHAT, num_key_value_heads: 5 })), ModelFormatError, 'num_key_value_heads 5');
  });

  test('things the forward pass would silently get wrong', () => {
    throwsWith(() => readHFConfig(folder({ ...TINYLLAMA_CHAT, attention_bias: true })), UnsupportedModelError, 'attention_bias');
    throwsWith(() => readHFConfig(folder({ ...TINYLLAMA_CHAT, mlp_bias: true })), UnsupportedModelError, 'mlp_bias');
    throwsWith(() => readHFConfig(folder({ ...TINYLLAMA_CHAT, hidden_act: 'gelu' })), UnsupportedModelError, 'hidden_act');
    throwsWith(() => readHFConfig(folder({ ...GPT2, activation_function: 'relu' })), UnsupportedModelError, 'relu');
  });
});

// Qwen3_5TextConfig fields (transformers' names) of a Qwen3.5-2B-shaped model
const QWEN35_2B = {
  architectures: ['Qwen3_5ForCausalLM'], model_type: 'qwen3_5_text', vocab_size: 248320, hidden_size: 2048,
  intermediate_size: 6144, num_hidden_layers: 24, num_attention_heads: 8, num_key_value_heads: 2, head_dim: 256,
  hidden_act: 'silu', max_position_embeddings: 262144, rms_norm_eps: 1e-6, tie_word_embeddings: true,
  attn_output_gate: true, attention_bias: false, full_attention_interval: 4,
  layer_types: Array.from({ length: 24 }, (_, i) => ((i + 1) % 4 === 0 ? 'full_attention' : 'linear_attention')),
  linear_conv_kernel_dim: 4, linear_key_head_dim: 128, linear_value_head_dim: 128, linear_num_key_heads: 16, linear_num_value_heads: 16,
  rope_parameters: { rope_type: 'default', rope_theta: 10000000, partial_rotary_factor: 0.25, mrope_section: [11, 11, 10], mrope_interleaved: true },
};

describe('readHFConfig: Qwen3.5 (Qwen3_5ForCausalLM)', () => {
  test('the hybrid layout, the linear layers and RoPE from rope_parameters', () => {
    const c = readHFConfig(folder(QWEN35_2B));
    assert.equal(c.arch, 'qwen35');
    assert.deepEqual([c.numHeads, c.numKvHeads, c.headDim, c.ropeDim, c.ropeBase, c.ropeStyle, c.tiedEmbeddings], [8, 2, 256, 64, 10000000, 'neox', true]);
    // mrope_section padded to four, as llama.cpp's converter writes rope.dimension_sections
    assert.deepEqual(c.ropeSections, [11, 11, 10, 0]);
    assert.deepEqual(c.linearAttention, {
      layers: QWEN35_2B.layer_types.map((t) => t === 'linear_attention'),
      convKernel: 4, headDim: 128, numKHeads: 16, numVHeads: 16,
    });
  });

  test('without layer_types every full_attention_interval-th layer attends; model_type alone selects it', () => {
    const { layer_types: _, architectures: __, ...rest } = QWEN35_2B;
    const c = readHFConfig(folder({ ...rest, num_hidden_layers: 6, full_attention_interval: 3 }));
    assert.deepEqual(c.linearAttention?.layers, [true, true, false, true, true, false]);
  });

  test('what the loader cannot map is refused by name', () => {
    throwsWith(() => readHFConfig(folder({ ...QWEN35_2B, linear_value_head_dim: 64 })), UnsupportedModelError, 'linear_value_head_dim');
    throwsWith(() => readHFConfig(folder({ ...QWEN35_2B, linear_num_value_heads: 24 })), ModelFormatError, 'linear_num_value_heads');
    throwsWith(() => readHFConfig(folder({ ...QWEN35_2B, layer_types: ['linear_attention'] })), ModelFormatError, 'layer_types');
    throwsWith(() => readHFConfig(folder({ ...QWEN35_2B, attn_output_gate: false })), UnsupportedModelError, 'attn_output_gate');
    throwsWith(() => readHFConfig(folder({ ...QWEN35_2B, rope_parameters: { rope_type: 'yarn', factor: 4 } })), UnsupportedModelError, 'yarn');
    throwsWith(() => readHFConfig(folder({ ...QWEN35_2B, rope_parameters: { ...QWEN35_2B.rope_parameters, mrope_section: [11, -1, 10] } })), ModelFormatError, 'mrope_section');
  });
});

// google/gemma-3-4b-it's config.json as released: text_config states only what differs from
// transformers' Gemma3TextConfig defaults.
const GEMMA3_4B_IT = {
  architectures: ['Gemma3ForConditionalGeneration'], boi_token_index: 255999, eoi_token_index: 256000, eos_token_id: [1, 106],
  image_token_index: 262144, initializer_range: 0.02, mm_tokens_per_image: 256, model_type: 'gemma3',
  text_config: { hidden_size: 2560, intermediate_size: 10240, model_type: 'gemma3_text', num_hidden_layers: 34, rope_scaling: { factor: 8.0, rope_type: 'linear' }, sliding_window: 1024 },
  torch_dtype: 'bfloat16', transformers_version: '4.50.0.dev0',
  vision_config: { hidden_size: 1152, image_size: 896, intermediate_size: 4304, model_type: 'siglip_vision_model', num_attention_heads: 16, num_hidden_layers: 27, patch_size: 14, vision_use_head: false },
};

describe('readHFConfig: Gemma3ForConditionalGeneration', () => {
  test("google/gemma-3-4b-it: text_config over Gemma3TextConfig's defaults", () => {
    const c = readHFConfig(folder(GEMMA3_4B_IT));
    assert.equal(c.arch, 'gemma3');
    assert.deepEqual(
      [c.vocabSize, c.hiddenSize, c.numLayers, c.numHeads, c.numKvHeads, c.headDim, c.ffnSize, c.contextLength, c.normEps, c.ropeBase, c.tiedEmbeddings],
      [262208, 2560, 34, 8, 4, 256, 10240, 131072, 1e-6, 1_000_000, true],
    );
    assert.equal(c.slidingWindow?.size, 1024);
    assert.equal(c.slidingWindow?.ropeBase, 10000);
    // five sliding layers of six
    assert.deepEqual(c.slidingWindow?.layers.slice(0, 12), [true, true, true, true, true, false, true, true, true, true, true, false]);
    assert.equal(c.gemma?.queryScale, 1 / 16);
    assert.equal(c.ropeScaling?.type, 'linear');
  });

  test('a text_config that states a field wins over the default', () => {
    const c = readHFConfig(folder({ ...GEMMA3_4B_IT, text_config: { ...GEMMA3_4B_IT.text_config, num_attention_heads: 16, num_key_value_heads: 8, vocab_size: 262144 } }));
    assert.deepEqual([c.numHeads, c.numKvHeads, c.vocabSize], [16, 8, 262144]);
  });
});
