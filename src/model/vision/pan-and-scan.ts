// Gemma 3's pan and scan (transformers' Gemma3ImageProcessor, do_pan_and_scan): an image much
// wider than tall (or taller than wide) is also cut into 2..maxCrops equal strips along its long
// side, each read as an image of its own after the whole one, so the encoder's fixed square size
// loses less of it. llama.cpp does not do it; a Hugging Face folder's preprocessor_config.json
// asks for it. Only the arithmetic of the crop boxes lives here (Python's float and integer
// rounding: floor(r + 0.5), ceil(side / n)); gemma3.ts prepares each crop as it does an image.
import type { RgbImage } from './projector.js';

export interface PanAndScanConfig {
  /** pan_and_scan_min_crop_size: no crop narrower than this (in pixels) */
  readonly minCropSize: number;
  /** pan_and_scan_max_num_crops */
  readonly maxCrops: number;
  /** pan_and_scan_min_ratio_to_activate: long side / short side below it: no crops */
  readonly minRatio: number;
}

/** transformers' Gemma3ProcessorKwargs defaults */
export const PAN_AND_SCAN_DEFAULTS: PanAndScanConfig = { minCropSize: 256, maxCrops: 4, minRatio: 1.2 };

/** A crop in source pixels; the last one along a side may be shorter (a slice past the edge stops at it). */
export interface CropBox {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/** The crops of a width × height image, in row-major order; none when the image is not elongated enough or the crops would be too small. */
export function panAndScanBoxes(width: number, height: number, cfg: PanAndScanConfig): CropBox[] {
  const landscape = width >= height;
  const long = landscape ? width : height;
  const short = landscape ? height : width;
  if (long / short < cfg.minRatio) return [];
  // as many crops as the aspect ratio rounded half up, but none narrower than minCropSize, in [2, maxCrops]
  let n = Math.min(Math.floor(long / short + 0.5), Math.floor(long / cfg.minCropSize));
  n = Math.min(cfg.maxCrops, Math.max(2, n));
  const cropsW = landscape ? n : 1;
  const cropsH = landscape ? 1 : n;
  const cropW = Math.ceil(width / cropsW);
  const cropH = Math.ceil(height / cropsH);
  if (Math.min(cropW, cropH) < cfg.minCropSize) return [];
  const boxes: CropBox[] = [];
  for (let j = 0; j < cropsH; j++) {
    for (let i = 0; i < cropsW; i++) {
      const x = cropW * i, y = cropH * j;
      boxes.push({ x, y, width: Math.min(cropW, width - x), height: Math.min(cropH, height - y) });
    }
  }
  return boxes.filter((b) => b.width > 0 && b.height > 0);
}

/** The pixels of `box` as an image of their own. */
export function cropImage(img: RgbImage, box: CropBox): RgbImage {
  const data = new Uint8Array(box.width * box.height * 3);
  for (let y = 0; y < box.height; y++) {
    const from = ((box.y + y) * img.width + box.x) * 3;
    data.set(img.data.subarray(from, from + box.width * 3), y * box.width * 3);
  }
  return { width: box.width, height: box.height, data };
}
