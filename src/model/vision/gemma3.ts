// Gemma 3's projector (llama.cpp's PROJECTOR_TYPE_GEMMA3, tools/mtmd/models/siglip.cpp): the
// image resized to the file's fixed square size (bilinear, letterboxed), a SigLIP ViT, a 2-D
// average pool of the patch grid by n_merge (4 in every Gemma 3: 64×64 patches → 16×16 = 256
// tokens), RMSNorm times mm.soft_emb_norm, then mm.input_projection into the text model's width.
// The image's tokens sit between <start_of_image> and <end_of_image> and attend to each other
// both ways (mtmd_decode_use_non_causal).
import type { Kernels } from '../../kernels/index.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import { normalizeImage, resizeLetterbox } from './preprocess.js';
import type { ResizeAlgo } from './preprocess.js';
import { cropImage, panAndScanBoxes } from './pan-and-scan.js';
import type { PanAndScanConfig } from './pan-and-scan.js';
import type { PanAndScanText, PreparedImage, RgbImage, VisionProjector } from './projector.js';
import type { ClipFile } from './clip-file.js';
import { loadVit, transposedMatrix, vitExtras } from './clip-file.js';
import { Scratch, patchRows, vitForward } from './vit.js';
import type { VitShape, VitWeights } from './vit.js';

/** What a Hugging Face folder's preprocessor_config.json adds to an mmproj file's keys. */
export interface Gemma3Options {
  /** its resample (llama.cpp: bilinear, Gemma3ImageProcessor's default) */
  readonly resample?: ResizeAlgo;
  /** do_pan_and_scan with its settings */
  readonly panAndScan?: PanAndScanConfig;
}

/** Gemma3Processor's words around an image and its crops */
export const GEMMA3_PAN_AND_SCAN_TEXT: PanAndScanText = {
  before: 'Here is the original image ',
  between: ' and here are some crops to help you see better ',
  separator: ' ',
};

export class Gemma3Projector implements VisionProjector {
  readonly kind = 'gemma3' as const;
  readonly imageBegin = '<start_of_image>';
  readonly imageEnd = '<end_of_image>';
  readonly nonCausalImage = true;
  readonly positions = 'linear' as const;
  readonly source: string;
  readonly outputSize: number;
  private readonly shape: VitShape;
  private readonly vit: VitWeights;
  private readonly imageSize: number;
  private readonly merge: number;
  private readonly mean: Float32Array;
  private readonly std: Float32Array;
  private readonly softEmbNorm: Float32Array;
  /** mm.input_projection as [vision hidden → text hidden] rows (the file holds its transpose) */
  private readonly projection: WeightTensor;
  private readonly scratch = new Scratch();
  private readonly resample: ResizeAlgo;
  private readonly panAndScan: PanAndScanConfig | undefined;
  readonly panAndScanText?: PanAndScanText;

  constructor(file: ClipFile, options: Gemma3Options = {}) {
    this.resample = options.resample ?? 'bilinear';
    this.panAndScan = options.panAndScan;
    if (options.panAndScan) this.panAndScanText = GEMMA3_PAN_AND_SCAN_TEXT;
    this.source = file.path;
    // a SigLIP encoder has none of the extras other families' ViTs carry
    file.refuseAny(vitExtras(file.u32('clip.vision.block_count')), 'SigLIP');
    const { shape, weights } = loadVit(file);
    this.shape = shape;
    this.vit = weights;
    this.imageSize = file.u32('clip.vision.image_size');
    // the default of every Gemma 3; tiny test models write their own
    this.merge = file.u32('clip.vision.projector.scale_factor', 4);
    this.mean = file.f32s('clip.vision.image_mean', 3);
    this.std = file.f32s('clip.vision.image_std', 3);
    this.softEmbNorm = file.vector('mm.soft_emb_norm.weight', shape.hidden);
    this.projection = transposedMatrix(file, 'mm.input_projection.weight', shape.hidden);
    this.outputSize = this.projection.dims[1]!;
    const side = this.imageSize / shape.patchSize;
    if (!Number.isInteger(side) || side % this.merge !== 0) {
      file.refuse(`image size ${this.imageSize} is not whole pooled patches (patch ${shape.patchSize}, pool ${this.merge})`);
    }
    if (weights.position && weights.position.length !== side * side * shape.hidden) {
      file.refuse(`v.position_embd.weight has ${weights.position.length / shape.hidden} positions, not the ${side * side} patches of a ${this.imageSize}-pixel image`);
    }
  }

  /** mtmd_image_preprocessor_fixed_size: bilinear into image_size², letterboxed on black; with
   *  pan and scan, each crop the same way */
  prepare(image: RgbImage): PreparedImage {
    const whole = this.prepareOne(image);
    const boxes = this.panAndScan ? panAndScanBoxes(image.width, image.height, this.panAndScan) : [];
    return boxes.length === 0 ? whole : { ...whole, crops: boxes.map((b) => this.prepareOne(cropImage(image, b))) };
  }

  private prepareOne(image: RgbImage): PreparedImage {
    const size = this.imageSize;
    const resized = resizeLetterbox(image, size, size, this.resample);
    const side = size / this.shape.patchSize / this.merge;
    return { pixels: normalizeImage(resized, this.mean, this.std), width: size, height: size, numTokens: side * side, gridRows: side, gridCols: side };
  }

  encode(images: readonly PreparedImage[], kernels: Kernels): Float32Array[] {
    return images.map((img) => this.encodeOne(img, kernels));
  }

  private encodeOne(img: PreparedImage, k: Kernels): Float32Array {
    const s = this.shape;
    const cols = img.width / s.patchSize, rows = img.height / s.patchSize;
    const n = rows * cols;
    const x = vitForward(k, this.scratch, this.vit, s, patchRows(img.pixels, img.width, img.height, s.patchSize), n);
    const pooled = averagePool(x, rows, cols, s.hidden, this.merge);
    const tokens = img.numTokens;
    k.rmsNorm(pooled, pooled, this.softEmbNorm, tokens, s.hidden, s.eps);
    const out = new Float32Array(tokens * this.outputSize);
    k.matmul(out, pooled, this.projection, tokens);
    return out;
  }
}

/**
 * ggml_pool_2d(AVG, m, m) over the patch grid: token (oy, ox) is the mean of patches
 * (oy·m + dy, ox·m + dx), summed in f32 in that order then divided by m². x: [rows · cols, dim].
 */
export function averagePool(x: Float32Array, rows: number, cols: number, dim: number, m: number): Float32Array {
  const oh = Math.floor(rows / m), ow = Math.floor(cols / m);
  const out = new Float32Array(oh * ow * dim);
  const acc = new Float32Array(dim);
  const area = m * m;
  for (let oy = 0; oy < oh; oy++) {
    for (let ox = 0; ox < ow; ox++) {
      acc.fill(0);
      for (let dy = 0; dy < m; dy++) {
        for (let dx = 0; dx < m; dx++) {
          const p = ((oy * m + dy) * cols + ox * m + dx) * dim;
          for (let e = 0; e < dim; e++) acc[e] = acc[e]! + x[p + e]!;
        }
      }
      const o = (oy * ow + ox) * dim;
      for (let e = 0; e < dim; e++) out[o + e] = acc[e]! / area;
    }
  }
  return out;
}
