// What the kernels see of a model: one weight tensor, and how RoPE pairs dimensions.
import type { GGMLType } from './weight-types.js';

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

/** How RoPE pairs dimensions: `normal` rotates (x[2i], x[2i+1]) (llama.cpp's llama layout);
 *  `neox` rotates (x[i], x[i + ropeDim/2]) (HF rotate_half, Qwen, GPT-NeoX). */
export type RopeStyle = 'normal' | 'neox';
