// gpt-oss GGUF metadata → ModelConfig, as llama.cpp's llama_model_openai_moe::load_arch_hparams
// and the generic loader read it: the experts' keys (gguf-config-moe.ts), the sliding window
// (attention.sliding_window) on every other layer starting with layer 0 (load_swa_pattern with
// period 2 unless attention.sliding_window_pattern says otherwise), the same RoPE (base and
// YaRN scaling) in both kinds of layer (rope.freq_base_swa defaults to rope.freq_base), NeoX
// rotation. The experts choose their top k on the raw router logits (arch/oai-moe.ts): the
// chosen weights are never renormalized by their sum (norm_w = false).
import { ModelFormatError } from '../errors.js';
import type { MetadataReader } from './gguf-metadata.js';
import { ggufRopeScaling } from './gguf-rope.js';
import { ggufMoeParams } from './gguf-config-moe.js';
import type { ModelConfig, TensorSource } from './weights.js';

const A = 'gpt-oss';
const key = (k: string): string => `${A}.${k}`;

export function gptOssModelConfig(meta: MetadataReader, tensors: TensorSource): ModelConfig {
  const numLayers = meta.number(key('block_count'));
  const hiddenSize = meta.number(key('embedding_length'));
  const numHeads = meta.number(key('attention.head_count'));
  const headDim = meta.number(key('attention.key_length'), hiddenSize / numHeads);
  if (meta.number(key('attention.value_length'), headDim) !== headDim) throw new ModelFormatError(meta.file, 'gpt-oss needs value_length == key_length');
  const ropeDim = meta.number(key('rope.dimension_count'), headDim);
  const ropeBase = meta.number(key('rope.freq_base'), 10000);
  const contextLength = meta.number(key('context_length'));
  const ropeScaling = ggufRopeScaling(meta, tensors, { arch: A, ropeDim, ropeBase, contextLength });
  const embedding = tensors.get('token_embd.weight');
  const moe = ggufMoeParams(meta, A, numLayers, hiddenSize, tensors);
  const window = meta.number(key('attention.sliding_window'));
  return {
    arch: A,
    vocabSize: meta.number(key('vocab_size'), embedding.dims[1] ?? 0),
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads: meta.number(key('attention.head_count_kv'), numHeads),
    headDim,
    ffnSize: moe.expertFfnSize,
    contextLength,
    normEps: meta.number(key('attention.layer_norm_rms_epsilon')),
    ropeBase,
    ropeDim,
    ropeStyle: 'neox',
    tiedEmbeddings: !tensors.has('output.weight'),
    ...(ropeScaling ? { ropeScaling } : {}),
    ...(window > 0 ? { slidingWindow: { size: window, layers: slidingLayers(meta, numLayers), ropeBase: meta.number(key('rope.freq_base_swa'), ropeBase) } } : {}),
    moe: { ...moe, normTopK: false },
  };
}

/** llama_model_base::load_swa_pattern(ml, 2): one flag per layer from the key's array form, else
 *  layer il slides unless il % period is period − 1 (period 0: every layer slides) */
function slidingLayers(meta: MetadataReader, numLayers: number): boolean[] {
  const k = key('attention.sliding_window_pattern');
  const v = meta.metadata.get(k);
  if (Array.isArray(v)) {
    if (v.length < numLayers || !v.every((x) => typeof x === 'boolean')) throw new ModelFormatError(meta.file, `${k} should hold ${numLayers} booleans`);
    return (v as boolean[]).slice(0, numLayers);
  }
  const period = meta.optionalNumber(k) ?? 2;
  return Array.from({ length: numLayers }, (_, il) => period === 0 || il % period < period - 1);
}
