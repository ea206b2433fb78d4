// config.json of Gemma2ForCausalLM / Gemma3ForCausalLM (model_type gemma2 / gemma3_text) →
// ModelConfig, with transformers' Gemma2Config / Gemma3TextConfig defaults. Which layers
// slide: `layer_types` when given, else Gemma 2 every even layer, Gemma 3 all but every
// `sliding_window_pattern`-th (6) — the same layers llama.cpp's pattern picks.
// Gemma3TextModel (EmbeddingGemma) is the same config run as llama.cpp's gemma-embedding.
import { UnsupportedModelError } from '../errors.js';
import { Fields, attentionHeads } from './hf-fields.js';
import { ropeOf } from './hf-config.js';
import { hfRopeScaling } from './hf-rope.js';
import type { ModelConfig } from './weights.js';

export function gemmaConfig(c: Fields, arch: 'gemma2' | 'gemma3'): ModelConfig {
  const hiddenSize = c.count('hidden_size');
  const { numHeads, numKvHeads } = attentionHeads(c);
  const headDim = c.count('head_dim', () => 256);
  const numLayers = c.count('num_hidden_layers');
  const act = c.raw('hidden_activation') ?? c.raw('hidden_act') ?? 'gelu_pytorch_tanh';
  if (act !== 'gelu_pytorch_tanh' && act !== 'gelu_new') {
    throw new UnsupportedModelError(c.file, `hidden_activation ${JSON.stringify(act)} is not supported (only the tanh GELU)`);
  }
  if (c.raw('attention_bias') === true) throw new UnsupportedModelError(c.file, 'attention_bias: true is not supported');
  const rope = ropeOf(c);
  const contextLength = c.count('max_position_embeddings');
  // Gemma 3 4B+ scale the global layers' RoPE (linear ×8); the sliding ones keep theirs
  const ropeScaling = hfRopeScaling({ file: c.file, json: c.json, headDim, ropeDim: headDim, ropeBase: rope.theta, contextLength });
  const window = c.count('sliding_window', () => 4096);
  const layers = slidingLayers(c, arch, numLayers);
  const softcap = (key: string, fallback: number): number => (c.raw(key) === null ? 0 : c.num(key, fallback));
  return {
    arch,
    vocabSize: c.count('vocab_size'),
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    ffnSize: c.count('intermediate_size'),
    contextLength,
    normEps: c.num('rms_norm_eps', 1e-6),
    ropeBase: rope.theta,
    ropeDim: headDim,
    ropeStyle: 'neox',
    tiedEmbeddings: c.bool('tie_word_embeddings', true),
    ...(ropeScaling ? { ropeScaling } : {}),
    ...(layers.some(Boolean)
      ? { slidingWindow: { size: window, layers, ropeBase: arch === 'gemma3' ? c.num('rope_local_base_freq', 10000) : rope.theta } }
      : {}),
    gemma: {
      queryScale: 1 / Math.sqrt(c.num('query_pre_attn_scalar', 256)),
      attnSoftcap: arch === 'gemma2' ? softcap('attn_logit_softcapping', 50) : 0,
      finalSoftcap: softcap('final_logit_softcapping', arch === 'gemma2' ? 30 : 0),
      normOffset: 1,
    },
  };
}

/** transformers' Gemma3TextConfig defaults, which google/gemma-3-*-it's text_config leaves out */
const GEMMA3_TEXT_DEFAULTS: Readonly<Record<string, unknown>> = {
  vocab_size: 262208,
  hidden_size: 2304,
  intermediate_size: 9216,
  num_hidden_layers: 26,
  num_attention_heads: 8,
  num_key_value_heads: 4,
  head_dim: 256,
  max_position_embeddings: 131072,
  rms_norm_eps: 1e-6,
  rope_theta: 1_000_000,
  rope_local_base_freq: 10_000,
  query_pre_attn_scalar: 256,
  sliding_window: 4096,
  sliding_window_pattern: 6,
};

/** A Gemma3ForConditionalGeneration's text_config with Gemma3TextConfig's defaults under it. */
export function gemma3TextDefaults(text: Fields): Fields {
  const own = Object.fromEntries(Object.entries(text.json).filter(([, v]) => v !== undefined));
  return new Fields(text.file, { ...GEMMA3_TEXT_DEFAULTS, ...own });
}

function slidingLayers(c: Fields, arch: 'gemma2' | 'gemma3', numLayers: number): boolean[] {
  const types = c.raw('layer_types');
  if (types !== undefined && types !== null) {
    if (!Array.isArray(types) || types.length !== numLayers || !types.every((t) => t === 'sliding_attention' || t === 'full_attention')) {
      throw c.bad('layer_types', `${numLayers} of "sliding_attention" / "full_attention"`);
    }
    return types.map((t) => t === 'sliding_attention');
  }
  if (arch === 'gemma2') return Array.from({ length: numLayers }, (_, i) => i % 2 === 0);
  const pattern = c.count('sliding_window_pattern', () => 6);
  return Array.from({ length: numLayers }, (_, i) => (i + 1) % pattern !== 0);
}

/**
 * Gemma3TextModel (EmbeddingGemma) as llama.cpp's converter takes it: Gemma 3's config run as
 * an encoder whose sliding layers attend both ways over config.json's sliding_window (the
 * converter reads the file's value, not the one transformers' Gemma3TextConfig halves);
 * pooling mean and normalized unless modules.json says otherwise.
 */
export function embeddingGemmaConfig(c: Fields): ModelConfig {
  const { slidingWindow, gemma, ...base } = gemmaConfig(c, 'gemma3');
  return {
    ...base,
    arch: 'gemma-embedding',
    gemma: { ...gemma!, ...(slidingWindow ? { symmetricWindow: slidingWindow } : {}) },
    pooling: { type: 'mean', normalize: true },
    bidirectional: true,
  };
}
