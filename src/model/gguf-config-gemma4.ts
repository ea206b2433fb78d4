// Gemma 4 GGUF metadata → ModelConfig, as llama.cpp's llama_model_gemma4::load_arch_hparams
// and the generic loader (llama-model.cpp) read it: per-layer head_count_kv and
// feed_forward_length (key or array), the global layers' head size (key_length) and the
// sliding layers' own (key_length_swa, rope.dimension_count_swa, rope.freq_base_swa), the
// sliding-window flags (an array), shared-KV layers, the per-layer embedding width and the
// final logit soft-cap; the global layers' "proportional" RoPE as rope_freqs divisors; and
// (26B-A4B) the experts' keys, as for the other MoE families (gguf-config-moe.ts).
import { ModelFormatError, UnsupportedModelError } from '../errors.js';
import { loadVector } from './arch/architecture.js';
import type { MetadataReader } from './gguf-metadata.js';
import { ggufRopeScaling } from './gguf-rope.js';
import { ggufMoeParams } from './gguf-config-moe.js';
import type { ModelConfig, TensorSource } from './weights.js';

const A = 'gemma4';
const key = (k: string): string => `${A}.${k}`;

export function gemma4ModelConfig(meta: MetadataReader, tensors: TensorSource): ModelConfig {
  const numLayers = meta.number(key('block_count'));
  const perLayer = (k: string, fallback?: readonly number[]): number[] => {
    const v = meta.metadata.get(key(k));
    if (v === undefined && fallback) return [...fallback];
    if (Array.isArray(v)) {
      if (v.length < numLayers || !v.every((x) => typeof x === 'number')) throw new ModelFormatError(meta.file, `${key(k)} should hold ${numLayers} numbers`);
      return (v as number[]).slice(0, numLayers);
    }
    return new Array<number>(numLayers).fill(meta.number(key(k)));
  };
  const experts = meta.optionalNumber(key('expert_count')) ?? 0;
  const flags = meta.metadata.get(key('attention.sliding_window_pattern'));
  if (!Array.isArray(flags) || flags.length < numLayers || !flags.every((x) => typeof x === 'boolean')) {
    throw new ModelFormatError(meta.file, `${key('attention.sliding_window_pattern')} should hold ${numLayers} booleans`);
  }
  const sliding = (flags as boolean[]).slice(0, numLayers);
  const heads = perLayer('attention.head_count');
  const kvHeads = perLayer('attention.head_count_kv', heads);
  const numHeads = heads[0]!;
  if (heads.some((h) => h !== numHeads)) throw new UnsupportedModelError(meta.file, `${key('attention.head_count')} varies by layer; loom runs one head count per model`);
  // one KV head count per kind of layer (global / sliding)
  const kvOf = (swa: boolean): number => {
    const counts = new Set(kvHeads.filter((_, i) => sliding[i] === swa));
    if (counts.size > 1) throw new UnsupportedModelError(meta.file, `${key('attention.head_count_kv')} varies among the ${swa ? 'sliding-window' : 'global'} layers`);
    return [...counts][0] ?? kvHeads[0]!;
  };
  const hiddenSize = meta.number(key('embedding_length'));
  const headDim = meta.number(key('attention.key_length'), hiddenSize / numHeads);
  const swaHeadDim = meta.number(key('attention.key_length_swa'), headDim);
  if (meta.number(key('attention.value_length'), headDim) !== headDim || meta.number(key('attention.value_length_swa'), swaHeadDim) !== swaHeadDim) {
    throw new ModelFormatError(meta.file, 'Gemma 4 needs value_length == key_length (and the same for the sliding-window layers)');
  }
  const ropeDim = meta.number(key('rope.dimension_count'), headDim);
  const swaRopeDim = meta.number(key('rope.dimension_count_swa'), ropeDim);
  if (ropeDim > headDim || swaRopeDim > swaHeadDim) throw new ModelFormatError(meta.file, `RoPE dims ${ropeDim}/${swaRopeDim} exceed the head sizes ${headDim}/${swaHeadDim}`);
  const ropeBase = meta.number(key('rope.freq_base'), 10000);
  const contextLength = meta.number(key('context_length'));
  const ffnSizes = perLayer('feed_forward_length');
  const kvSource = sharedKvSources(meta, sliding);
  const ropeScaling = ggufRopeScaling(meta, tensors, { arch: A, ropeDim, ropeBase, contextLength });
  const factors = tensors.has('rope_freqs.weight') ? loadVector(tensors, 'rope_freqs.weight') : undefined;
  if (factors && factors.length < ropeDim / 2) throw new ModelFormatError(meta.file, `rope_freqs.weight holds ${factors.length} values, RoPE needs ${ropeDim / 2}`);
  const embedding = tensors.get('token_embd.weight');
  const moe = experts > 0 ? ggufMoeParams(meta, A, numLayers, hiddenSize, tensors) : undefined;
  return {
    arch: A,
    vocabSize: meta.number(key('vocab_size'), embedding.dims[1] ?? 0),
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads: kvOf(false),
    headDim,
    ffnSize: Math.max(...ffnSizes),
    contextLength,
    normEps: meta.number(key('attention.layer_norm_rms_epsilon')),
    ropeBase,
    ropeDim,
    ropeStyle: 'neox',
    tiedEmbeddings: !tensors.has('output.weight'),
    ...(ropeScaling ? { ropeScaling } : {}),
    slidingWindow: {
      size: meta.number(key('attention.sliding_window')),
      layers: sliding,
      ropeBase: meta.number(key('rope.freq_base_swa'), 10000),
      headDim: swaHeadDim,
      numKvHeads: kvOf(true),
      ropeDim: swaRopeDim,
    },
    gemma: { queryScale: 1, attnSoftcap: 0, finalSoftcap: meta.number(key('final_logit_softcapping'), 0), normOffset: 0 },
    gemma4: {
      perLayerInput: meta.number(key('embedding_length_per_layer_input')),
      ffnSizes,
      ...(factors ? { globalFreqFactors: factors } : {}),
    },
    ...(kvSource.some((s, i) => s !== i) ? { kvSource } : {}),
    ...(moe ? { moe } : {}),
  };
}

/**
 * llama.cpp (llama-model.cpp, the iSWA cache's reuse rule): the last `shared_kv_layers`
 * layers keep no KV; each reads the last KV-owning layer of its kind, which the rule takes
 * to be layer first − 2 for a sliding-window layer and first − 1 for a global one.
 */
function sharedKvSources(meta: MetadataReader, sliding: readonly boolean[]): number[] {
  const n = sliding.length;
  const shared = meta.number(key('attention.shared_kv_layers'), 0);
  const first = n - shared;
  if (shared > 0 && (first < 2 || !sliding[first - 2] || sliding[first - 1])) {
    throw new ModelFormatError(meta.file, `${key('attention.shared_kv_layers')} = ${shared}: layers ${first - 2} and ${first - 1} should be a sliding-window and a global layer`);
  }
  return sliding.map((swa, il) => (il < first ? il : first - (swa ? 2 : 1)));
}
