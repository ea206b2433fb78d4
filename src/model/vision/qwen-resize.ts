// Qwen's dynamic resolution as llama.cpp's mtmd runs it for the Qwen-VL projectors
// (mtmd_image_preprocessor_dyn_size over img_tool::calc_size_preserved_ratio, transformers'
// "smart_resize"): the image keeps its aspect ratio, each side is rounded to a multiple of
// patch · merge, and the area is brought within the token bounds clip.cpp sets for these
// projectors (8 to 4096 merged tokens: set_limit_image_tokens(8, 4096)); then a bicubic resize
// letterboxed on black (PAD_CEIL, the default pad) and clip_image_f32's normalization.
import { dynamicSize, normalizeImage, resizeLetterbox } from './preprocess.js';
import type { PreparedImage, RgbImage } from './projector.js';

/** clip.cpp's bounds for QWEN2VL / QWEN25VL / QWEN3VL, in merged tokens */
export const QWEN_MIN_TOKENS = 8;
export const QWEN_MAX_TOKENS = 4096;

export interface QwenResizeParams {
  /** clip.vision.patch_size */
  readonly patchSize: number;
  /** clip.vision.spatial_merge_size (2 unless the file says otherwise) */
  readonly mergeSize: number;
  /** merged tokens an image may take (llama.cpp's --image-min-tokens / --image-max-tokens override them) */
  readonly minTokens?: number;
  readonly maxTokens?: number;
}

/**
 * img_tool::calc_size_preserved_ratio without longest_edge (preprocess.ts dynamicSize) with the
 * Qwen projectors' alignment (patch · merge) and token bounds: each side rounded to the
 * alignment, then scaled down under the ceiling or up to the floor with the aspect kept.
 */
export function qwenTargetSize(width: number, height: number, p: QwenResizeParams): { width: number; height: number } {
  if (!(width > 0 && height > 0)) return { width: 0, height: 0 };
  const align = p.patchSize * p.mergeSize;
  const area = align * align;
  const [w, h] = dynamicSize(width, height, { align, minPixels: (p.minTokens ?? QWEN_MIN_TOKENS) * area, maxPixels: (p.maxTokens ?? QWEN_MAX_TOKENS) * area });
  return { width: w, height: h };
}

/** The image resized and normalized for the encoder; its tokens form a grid of
 *  (height / align) rows × (width / align) columns. */
export function qwenPrepare(image: RgbImage, p: QwenResizeParams, mean: Float32Array, std: Float32Array): PreparedImage {
  const size = qwenTargetSize(image.width, image.height, p);
  const resized = resizeLetterbox(image, size.width, size.height, 'bicubic');
  const align = p.patchSize * p.mergeSize;
  const gridRows = size.height / align, gridCols = size.width / align;
  return { pixels: normalizeImage(resized, mean, std), width: size.width, height: size.height, numTokens: gridRows * gridCols, gridRows, gridCols };
}
