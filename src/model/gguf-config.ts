// GGUF metadata → ModelConfig, with llama.cpp's key names and defaults.
import { UnsupportedModelError } from '../errors.js';
import { MetadataReader } from './gguf-metadata.js';
import type { GGUFMetadata } from './gguf-metadata.js';
import { ggufRopeScaling } from './gguf-rope.js';
import type { ArchName, ModelConfig, RopeStyle, TensorSource } from './weights.js';

const ROPE_STYLE: Record<ArchName, RopeStyle> = {
  llama: 'normal', // llama.cpp's converter permutes llama q/k so pairs are adjacent
  qwen2: 'neox',
  qwen3: 'neox',
  gpt2: 'normal', // unused: gpt2 has learned positions, no RoPE
  phi3: 'neox',
  smollm3: 'normal', // converted as llama (permuted q/k)
};

export const SUPPORTED_ARCHS: readonly ArchName[] = ['llama', 'qwen2', 'qwen3', 'gpt2', 'phi3', 'smollm3'];

/** llama.cpp's smollm3: every 4th layer (il + 1 ≡ 0 mod 4) skips RoPE */
export const SMOLLM3_NO_ROPE_STEP = 4;

export function ggufModelConfig(file: string, metadata: GGUFMetadata, tensors: TensorSource): ModelConfig {
  const meta = new MetadataReader(file, metadata);
  const archKey = meta.string('general.architecture');
  const arch = SUPPORTED_ARCHS.find((a) => a === archKey);
  if (!arch) {
    throw new UnsupportedModelError(file, `architecture "${archKey}" (general.architecture) is not supported; loom runs ${SUPPORTED_ARCHS.join(', ')}`);
  }
  const key = (k: string): string => `${arch}.${k}`;
  const experts = meta.optionalNumber(key('expert_count')) ?? 0;
  if (experts > 0) {
    throw new UnsupportedModelError(file, `mixture-of-experts ${arch} (${key('expert_count')} = ${experts}) is not supported; loom runs the dense ${SUPPORTED_ARCHS.join(', ')}`);
  }
  const embedding = tensors.get('token_embd.weight');
  const hiddenSize = meta.number(key('embedding_length'));
  const numHeads = meta.number(key('attention.head_count'));
  const headDim = meta.number(key('attention.key_length'), hiddenSize / numHeads);
  const numLayers = meta.number(key('block_count'));
  const contextLength = meta.number(key('context_length'));
  const ropeBase = meta.number(key('rope.freq_base'), 10000);
  const ropeDim = meta.number(key('rope.dimension_count'), headDim);
  const ropeScaling = arch === 'gpt2' ? undefined : ggufRopeScaling(meta, tensors, { arch, ropeDim, ropeBase, contextLength });
  const noRopeLayers =
    arch === 'smollm3' ? Array.from({ length: numLayers }, (_, i) => i).filter((i) => (i + 1) % SMOLLM3_NO_ROPE_STEP === 0) : undefined;
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
  };
}
