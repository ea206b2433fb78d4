// GGUF metadata → ModelConfig, with llama.cpp's key names and defaults.
import { ModelFormatError, UnsupportedModelError } from '../errors.js';
import { MetadataReader } from './gguf-metadata.js';
import type { GGUFMetadata } from './gguf-metadata.js';
import { gemma4ModelConfig } from './gguf-config-gemma4.js';
import { gptOssModelConfig } from './gguf-config-gptoss.js';
import { bertModelConfig, ggufPooling, ggufPoolingType } from './gguf-config-bert.js';
import { ggufRopeScaling } from './gguf-rope.js';
import { ggufMoeParams } from './gguf-config-moe.js';
import type { ArchName, LinearAttention, ModelConfig, TensorSource } from './weights.js';
import type { RopeStyle } from '../tensor/weight-tensor.js';
import type { RopeSections } from '../kernels/index.js';

const ROPE_STYLE: Record<ArchName, RopeStyle> = {
  llama: 'normal', // llama.cpp's converter permutes llama q/k so pairs are adjacent
  qwen2: 'neox',
  qwen3: 'neox',
  gpt2: 'normal', // unused: gpt2 has learned positions, no RoPE
  phi3: 'neox',
  smollm3: 'normal', // converted as llama (permuted q/k)
  gemma2: 'neox',
  gemma3: 'neox',
  gemma4: 'neox',
  qwen35: 'neox', // IMROPE: text positions repeat over the sections, which is NeoX over ropeDim
  qwen3moe: 'neox',
  qwen35moe: 'neox', // IMROPE over text positions, as qwen35
  'gpt-oss': 'neox',
  bert: 'normal', // unused: learned positions, no RoPE
  'nomic-bert': 'neox', // llama.cpp's LLAMA_ROPE_TYPE_NEOX for NOMIC_BERT
  'gemma-embedding': 'neox',
};

export const SUPPORTED_ARCHS: readonly ArchName[] = ['llama', 'qwen2', 'qwen3', 'gpt2', 'phi3', 'smollm3', 'gemma2', 'gemma3', 'gemma4', 'qwen35', 'qwen3moe', 'qwen35moe', 'gpt-oss', 'bert', 'nomic-bert', 'gemma-embedding'];

/** llama.cpp's smollm3: every 4th layer (il + 1 ≡ 0 mod 4) skips RoPE */
/** the mixture-of-experts architectures (Gemma 4's MoE layers are gemma4's) */
const MOE_ARCHS: readonly ArchName[] = ['qwen3moe', 'qwen35moe', 'gpt-oss'];

export const SMOLLM3_NO_ROPE_STEP = 4;

export function ggufModelConfig(file: string, metadata: GGUFMetadata, tensors: TensorSource): ModelConfig {
  const meta = new MetadataReader(file, metadata);
  const archKey = meta.string('general.architecture');
  const arch = SUPPORTED_ARCHS.find((a) => a === archKey);
  if (!arch) {
    throw new UnsupportedModelError(file, `architecture "${archKey}" (general.architecture) is not supported; loom runs ${SUPPORTED_ARCHS.join(', ')}`);
  }
  if (arch === 'gemma4') return gemma4ModelConfig(meta, tensors);
  if (arch === 'gpt-oss') return gptOssModelConfig(meta, tensors);
  if (arch === 'bert' || arch === 'nomic-bert') return bertModelConfig(meta, tensors, arch);
  const key = (k: string): string => `${arch}.${k}`;
  const experts = meta.optionalNumber(key('expert_count')) ?? 0;
  const moeArch = arch === 'qwen3moe' || arch === 'qwen35moe';
  if (experts > 0 && !moeArch) {
    throw new UnsupportedModelError(file, `mixture-of-experts ${arch} (${key('expert_count')} = ${experts}) is not supported; loom runs the dense ${SUPPORTED_ARCHS.filter((a) => !MOE_ARCHS.includes(a)).join(', ')} and ${MOE_ARCHS.join(', ')}`);
  }
  const embedding = tensors.get('token_embd.weight');
  const hiddenSize = meta.number(key('embedding_length'));
  const numHeads = meta.number(key('attention.head_count'));
  const headDim = meta.number(key('attention.key_length'), hiddenSize / numHeads);
  // multi-token-prediction (nextn) blocks follow the trunk's; loom runs the trunk only
  const numLayers = meta.number(key('block_count')) - (meta.optionalNumber(key('nextn_predict_layers')) ?? 0);
  const contextLength = meta.number(key('context_length'));
  const ropeBase = meta.number(key('rope.freq_base'), 10000);
  const ropeDim = meta.number(key('rope.dimension_count'), headDim);
  const ropeScaling = arch === 'gpt2' ? undefined : ggufRopeScaling(meta, tensors, { arch, ropeDim, ropeBase, contextLength });
  const noRopeLayers =
    arch === 'smollm3' ? Array.from({ length: numLayers }, (_, i) => i).filter((i) => (i + 1) % SMOLLM3_NO_ROPE_STEP === 0) : undefined;
  const linear = arch === 'qwen35' || arch === 'qwen35moe'
    ? { linearAttention: linearAttention(meta, arch, numLayers), ...ropeSections(meta, key('rope.dimension_sections'), headDim) }
    : {};
  const moe = moeArch ? { moe: ggufMoeParams(meta, arch, numLayers, hiddenSize, tensors) } : {};
  // an embedding or rerank model converted from a decoder (Qwen3-Embedding: last; Qwen3-Reranker: rank)
  const poolingType = ggufPoolingType(meta, arch);
  const pooling = poolingType !== undefined && poolingType !== 'none' ? { pooling: ggufPooling(meta, arch, poolingType) } : {};
  const gemma = arch === 'gemma2' || arch === 'gemma3' || arch === 'gemma-embedding' ? gemmaParams(meta, arch, { hiddenSize, numHeads, headDim, numLayers, ropeBase }) : {};
  // EmbeddingGemma (llama_model_gemma_embedding): an encoder; its file without pooling_type pools none
  const encoder = arch === 'gemma-embedding' ? { bidirectional: true, pooling: ggufPooling(meta, arch, 'none') } : {};
  return {
    arch,
    vocabSize: meta.number(key('vocab_size'), embedding.dims[1] ?? 0),
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads: meta.number(key('attention.head_count_kv'), numHeads),
    headDim,
    ffnSize: meta.number(key('feed_forward_length')),
    contextLength,
    normEps:
      arch === 'gpt2'
        ? meta.number(key('attention.layer_norm_epsilon'))
        : meta.number(key('attention.layer_norm_rms_epsilon')),
    ropeBase,
    ropeDim,
    ropeStyle: ROPE_STYLE[arch],
    tiedEmbeddings: !tensors.has('output.weight'),
    ...(ropeScaling ? { ropeScaling } : {}),
    ...(noRopeLayers ? { noRopeLayers } : {}),
    ...gemma,
    ...linear,
    ...moe,
    ...pooling,
    ...encoder,
  };
}

/** rope.dimension_sections: up to four counts of rotary pairs, the missing ones 0. llama.cpp
 *  requires the key for qwen35; loom runs text without it (every section then sees the token's
 *  position) and refuses only M-RoPE positions (images) on a model that lacks it. */
function ropeSections(meta: MetadataReader, key: string, headDim: number): { ropeSections?: RopeSections } {
  const v = meta.numbers(key);
  if (!v) return {};
  const s = [0, 1, 2, 3].map((i) => v[i] ?? 0);
  const sum = s.reduce((a, b) => a + b, 0);
  if (v.length > 4 || s.some((x) => !Number.isInteger(x) || x < 0) || sum <= 0 || sum > headDim) {
    throw new ModelFormatError(meta.file, `${key} should be up to 4 counts of rotary pairs summing to 1..${headDim}, not [${v.join(', ')}]`);
  }
  return { ropeSections: s as unknown as RopeSections };
}

/** llama_model_qwen35::load_arch_hparams: the ssm.* keys; recurrent layers from
 *  attention.recurrent_layers, else every layer but each full_attention_interval-th (default 4). */
function linearAttention(meta: MetadataReader, arch: ArchName, numLayers: number): LinearAttention {
  const key = (k: string): string => `${arch}.${k}`;
  const flags = meta.metadata.get(key('attention.recurrent_layers'));
  let layers: boolean[];
  if (Array.isArray(flags)) {
    if (flags.length < numLayers) throw new ModelFormatError(meta.file, `${key('attention.recurrent_layers')} should hold ${numLayers} flags`);
    layers = flags.slice(0, numLayers).map((x) => x === true || x === 1);
  } else {
    const interval = meta.number(key('full_attention_interval'), 4);
    layers = Array.from({ length: numLayers }, (_, i) => (i + 1) % interval !== 0);
  }
  const l: LinearAttention = {
    layers,
    convKernel: meta.number(key('ssm.conv_kernel')),
    headDim: meta.number(key('ssm.state_size')),
    numKHeads: meta.number(key('ssm.group_count')),
    numVHeads: meta.number(key('ssm.time_step_rank')),
  };
  const inner = meta.number(key('ssm.inner_size'));
  if (inner !== l.headDim * l.numVHeads || l.numVHeads % l.numKHeads !== 0 || l.convKernel < 2) {
    throw new ModelFormatError(meta.file, `inconsistent ssm keys: inner_size ${inner}, state_size ${l.headDim}, group_count ${l.numKHeads}, time_step_rank ${l.numVHeads}, conv_kernel ${l.convKernel}`);
  }
  return l;
}

interface GemmaShape {
  hiddenSize: number;
  numHeads: number;
  headDim: number;
  numLayers: number;
  ropeBase: number;
}

/**
 * Gemma 2/3 as llama.cpp's load_arch_hparams reads them: the window (Gemma 2 default 4096;
 * Gemma 3 only when the key is there), the pattern (every 2nd / 6th layer global unless
 * `attention.sliding_window_pattern` says otherwise), the soft-caps (Gemma 2 defaults 50 and
 * 30; Gemma 3 none unless given), the local RoPE base (Gemma 2 = global, Gemma 3 default
 * 10000), and the query scale llama.cpp derives from the layer count (27B: hidden / heads).
 * EmbeddingGemma (gemma-embedding) reads Gemma 3's keys but requires the window, which its
 * sliding layers apply both ways (symmetricWindow), and scales q by 1/√head_dim whatever its size.
 */
function gemmaParams(meta: MetadataReader, arch: 'gemma2' | 'gemma3' | 'gemma-embedding', s: GemmaShape): Pick<ModelConfig, 'slidingWindow' | 'gemma'> {
  const key = (k: string): string => `${arch}.${k}`;
  const is27B = s.numLayers === (arch === 'gemma2' ? 46 : 62);
  // gemma-embedding: f_attention_scale = 1/√head_dim always
  const queryScale = 1 / Math.sqrt(is27B && arch !== 'gemma-embedding' ? s.hiddenSize / s.numHeads : s.headDim);
  // gemma-embedding requires the window (ml.get_key without a default)
  const window = arch === 'gemma-embedding' ? meta.number(key('attention.sliding_window')) : (meta.optionalNumber(key('attention.sliding_window')) ?? (arch === 'gemma2' ? 4096 : 0));
  const pattern = meta.metadata.get(key('attention.sliding_window_pattern'));
  let layers: boolean[];
  if (Array.isArray(pattern)) {
    // one flag per layer (llama_model_base::load_swa_pattern's array form)
    if (pattern.length !== s.numLayers || !pattern.every((x) => typeof x === 'boolean')) {
      throw new ModelFormatError(meta.file, `${key('attention.sliding_window_pattern')} should hold ${s.numLayers} booleans`);
    }
    layers = pattern as boolean[];
  } else {
    const period = meta.optionalNumber(key('attention.sliding_window_pattern')) ?? (arch === 'gemma2' ? 2 : 6);
    // llama_hparams::set_swa_pattern: layer il slides unless il % period is period - 1 (period 0: all slide)
    layers = Array.from({ length: s.numLayers }, (_, il) => period === 0 || il % period < period - 1);
  }
  const slidingWindow =
    window > 0 && layers.some(Boolean)
      ? { size: window, layers, ropeBase: meta.number(key('rope.freq_base_swa'), arch === 'gemma2' ? s.ropeBase : 10000) }
      : undefined;
  const symmetric = arch === 'gemma-embedding';
  return {
    ...(slidingWindow && !symmetric ? { slidingWindow } : {}),
    gemma: {
      queryScale,
      attnSoftcap: arch === 'gemma2' ? meta.number(key('attn_logit_softcapping'), 50) : 0,
      finalSoftcap: meta.number(key('final_logit_softcapping'), arch === 'gemma2' ? 30 : 0),
      normOffset: 0,
      ...(slidingWindow && symmetric ? { symmetricWindow: slidingWindow } : {}),
    },
  };
}
