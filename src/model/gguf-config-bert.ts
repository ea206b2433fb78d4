// BERT (BGE, MiniLM, E5 and BERT cross-encoders) and nomic-bert (nomic-embed-text) as
// llama.cpp reads their GGUF (llama_model_bert / llama_model_nomic_bert::load_arch_hparams,
// llama_model_loader's general keys): post-norm encoder layers with token types, LayerNorm,
// and learned absolute positions with a GELU FFN (bert) or RoPE with a SwiGLU FFN
// (nomic-bert), and the pooling the converter wrote from sentence-transformers' Pooling module.
import { ModelFormatError } from '../errors.js';
import type { MetadataReader } from './gguf-metadata.js';
import { POOLING_TYPES } from './weights.js';
import type { ModelConfig, PoolingConfig, PoolingType, TensorSource } from './weights.js';

/** `<arch>.pooling_type` as a pooling type; absent = llama.cpp's hparams default, none */
export function ggufPoolingType(meta: MetadataReader, arch: string): PoolingType | undefined {
  const raw = meta.optionalNumber(`${arch}.pooling_type`);
  if (raw === undefined) return undefined;
  // LLAMA_POOLING_TYPE_UNSPECIFIED (-1) is what llama.cpp reads as none
  if (raw === -1) return 'none';
  const type = POOLING_TYPES[raw];
  if (type === undefined) throw new ModelFormatError(meta.file, `${arch}.pooling_type ${raw} is not one of llama.cpp's pooling types (0..4)`);
  return type;
}

/** The pooling a GGUF file declares: its type, the classifier's labels, normalized output (llama-server's default). */
export function ggufPooling(meta: MetadataReader, arch: string, fallback: PoolingType): PoolingConfig {
  const labels = meta.strings(`${arch}.classifier.output_labels`);
  const rerankTemplate = meta.optionalString('tokenizer.chat_template.rerank');
  return { type: ggufPoolingType(meta, arch) ?? fallback, normalize: true, ...(labels ? { labels } : {}), ...(rerankTemplate !== undefined ? { rerankTemplate } : {}) };
}

export function bertModelConfig(meta: MetadataReader, tensors: TensorSource, arch: 'bert' | 'nomic-bert'): ModelConfig {
  const key = (k: string): string => `${arch}.${k}`;
  if (meta.bool(key('attention.causal'), false)) throw new ModelFormatError(meta.file, `${key('attention.causal')} is true: a BERT encoder attends both ways`);
  const hiddenSize = meta.number(key('embedding_length'));
  const numHeads = meta.number(key('attention.head_count'));
  const headDim = hiddenSize / numHeads;
  if (!Number.isInteger(headDim)) throw new ModelFormatError(meta.file, `${key('embedding_length')} ${hiddenSize} is not a multiple of ${numHeads} heads`);
  const embedding = tensors.get('token_embd.weight');
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
    normEps: meta.number(key('attention.layer_norm_epsilon')),
    // bert: learned absolute positions, no RoPE (these match what the HF side reports)
    ropeBase: meta.number(key('rope.freq_base'), 10000),
    ropeDim: meta.number(key('rope.dimension_count'), headDim),
    ropeStyle: arch === 'nomic-bert' ? 'neox' : 'normal',
    tiedEmbeddings: false,
    // a file without pooling_type pools none in llama.cpp (one vector per token)
    pooling: ggufPooling(meta, arch, 'none'),
    bidirectional: true,
  };
}
