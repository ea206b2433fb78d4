import type { GGMLType } from './ggml-types.js';
import type { ModelRopeScaling } from './rope-scaling.js';

/**
 * One tensor as the kernels see it: raw bytes in the file's own type, never widened to
 * f32 at load. `dims` is in ggml order: dims[0] is the contiguous (fastest) axis, so a
 * matmul weight has dims [inFeatures, outFeatures] and each of its outFeatures rows holds
 * inFeatures values.
 */
export interface WeightTensor {
  readonly name: string;
  readonly type: GGMLType;
  readonly dims: readonly number[];
  /** exactly the tensor's bytes, a view into the file buffer (or a small owned copy) */
  readonly data: Uint8Array;
}

export type ArchName = 'llama' | 'qwen2' | 'qwen3' | 'gpt2' | 'phi3' | 'smollm3';

/** How RoPE pairs dimensions: `normal` rotates (x[2i], x[2i+1]) (llama.cpp's llama layout);
 *  `neox` rotates (x[i], x[i + ropeDim/2]) (HF rotate_half, Qwen, GPT-NeoX). */
export type RopeStyle = 'normal' | 'neox';

/** Everything the forward pass needs to know about a model's shape. */
export interface ModelConfig {
  readonly arch: ArchName;
  readonly vocabSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly ffnSize: number;
  readonly contextLength: number;
  /** RMSNorm or LayerNorm epsilon */
  readonly normEps: number;
  readonly ropeBase: number;
  /** number of leading head dims rotated (== headDim for most models) */
  readonly ropeDim: number;
  readonly ropeStyle: RopeStyle;
  /** output projection shares token_embd.weight */
  readonly tiedEmbeddings: boolean;
  /** RoPE scaling (linear, YaRN, Llama 3 factors, longrope); absent = plain RoPE */
  readonly ropeScaling?: ModelRopeScaling;
  /** layers that apply no RoPE at all (SmolLM3: every 4th) */
  readonly noRopeLayers?: readonly number[];
}

/**
 * Tensors by their GGUF names (`token_embd.weight`, `blk.0.attn_q.weight`, ...), whatever
 * the file format: loaders translate other namings to these.
 */
export interface TensorSource {
  has(name: string): boolean;
  /** throws ModelFormatError naming the file when the tensor is absent */
  get(name: string): WeightTensor;
}
