// GGUF metadata → ModelConfig, with llama.cpp's key names and defaults.
import { UnsupportedModelError } from '../errors.js';
import { MetadataReader } from './gguf-metadata.js';
import type { GGUFMetadata } from './gguf-metadata.js';
import type { ArchName, ModelConfig, RopeStyle, TensorSource } from './weights.js';

const ROPE_STYLE: Record<ArchName, RopeStyle> = {
  llama: 'normal', // llama.cpp's converter permutes llama q/k so pairs are adjacent
  qwen2: 'neox',
  qwen3: 'neox',
  gpt2: 'normal', // unused: gpt2 has learned positions, no RoPE
};

export const SUPPORTED_ARCHS: readonly ArchName[] = ['llama', 'qwen2', 'qwen3', 'gpt2'];

export function ggufModelConfig(file: string, metadata: GGUFMetadata, tensors: TensorSource): ModelConfig {
  const meta = new MetadataReader(file, metadata);
  const archKey = meta.string('general.architecture');
  const arch = SUPPORTED_ARCHS.find((a) => a === archKey);
  if (!arch) {
    throw new UnsupportedModelError(file, `architecture "${archKey}" is not supported (loom runs ${SUPPORTED_ARCHS.join(', ')})`);
  }
  const key = (k: string): string => `${arch}.${k}`;
  const scaling = meta.optionalString(key('rope.scaling.type'));
  if (scaling !== undefined && scaling !== 'none') {
    throw new UnsupportedModelError(file, `RoPE scaling "${scaling}" is not supported yet`);
  }
  if (tensors.has('rope_freqs.weight')) {
    throw new UnsupportedModelError(file, 'RoPE frequency factors (rope_freqs.weight, Llama 3.1 style) are not supported yet');
  }
  const embedding = tensors.get('token_embd.weight');
  const hiddenSize = meta.number(key('embedding_length'));
  const numHeads = meta.number(key('attention.head_count'));
  const headDim = meta.number(key('attention.key_length'), hiddenSize / numHeads);
  return {
    arch,
    vocabSize: meta.number(key('vocab_size'), embedding.dims[1] ?? 0),
    hiddenSize,
    numLayers: meta.number(key('block_count')),
    numHeads,
    numKvHeads: meta.number(key('attention.head_count_kv'), numHeads),
    headDim,
    ffnSize: meta.number(key('feed_forward_length')),
    contextLength: meta.number(key('context_length')),
    normEps:
      arch === 'gpt2'
        ? meta.number(key('attention.layer_norm_epsilon'))
        : meta.number(key('attention.layer_norm_rms_epsilon')),
    ropeBase: meta.number(key('rope.freq_base'), 10000),
    ropeDim: meta.number(key('rope.dimension_count'), headDim),
    ropeStyle: ROPE_STYLE[arch],
    tiedEmbeddings: !tensors.has('output.weight'),
  };
}
