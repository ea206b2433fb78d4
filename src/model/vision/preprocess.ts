// Image preprocessing exactly as llama.cpp's mtmd does it (tools/mtmd/mtmd-image.cpp): Pillow's
// separable resampling in fixed point (22 fractional bits, rounded back to u8 after each pass),
// the letterbox ("pad ceil") fit into a target size, and clip_image_f32's normalization
// ((u8 / 255 − mean) / std in f32). Bit-exact on the same decoded RGB.
import type { RgbImage } from './projector.js';

export type ResizeAlgo = 'bilinear' | 'bicubic' | 'lanczos';

const PRECISION_BITS = 32 - 8 - 2;

/** Pillow's filters (bicubic with a = −0.5, as Pillow, not PyTorch's −0.75) and their support. */
const FILTERS: Record<ResizeAlgo, { support: number; weight: (x: number) => number }> = {
  bilinear: { support: 1, weight: (x) => (x < 0 ? -x : x) < 1 ? 1 - (x < 0 ? -x : x) : 0 },
  bicubic: {
    support: 2,
    weight: (x0) => {
      const a = -0.5;
      const x = x0 < 0 ? -x0 : x0;
      if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
      if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
      return 0;
    },
  },
  lanczos: {
    support: 3,
    weight: (x) => {
      if (!(x >= -3 && x < 3)) return 0;
      const sinc = (v: number): number => (v === 0 ? 1 : Math.sin(v * Math.PI) / (v * Math.PI));
      return sinc(x) * sinc(x / 3);
    },
  },
};

interface Coefficients {
  readonly ksize: number;
  /** [outSize * 2]: first input pixel, count */
  readonly bounds: Int32Array;
  /** [outSize * ksize] fixed-point weights */
  readonly weights: Int32Array;
}

/** precompute_weights of mtmd-image.cpp's resize_pillow, in the same double arithmetic */
function coefficients(inSize: number, outSize: number, algo: ResizeAlgo): Coefficients {
  const filter = FILTERS[algo];
  const scale = inSize / outSize;
  const filterscale = scale < 1 ? 1 : scale;
  const support = filter.support * filterscale;
  const ksize = Math.ceil(support) * 2 + 1;
  const pre = new Float64Array(outSize * ksize);
  const bounds = new Int32Array(outSize * 2);
  const ss = 1 / filterscale;
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    let ww = 0;
    // static_cast<int> truncates toward zero
    const xmin = Math.max(0, Math.trunc(center - support + 0.5));
    const xmax = Math.min(inSize, Math.trunc(center + support + 0.5)) - xmin;
    for (let x = 0; x < xmax; x++) {
      const w = filter.weight((x + xmin - center + 0.5) * ss);
      pre[xx * ksize + x] = w;
      ww += w;
    }
    if (ww !== 0) for (let x = 0; x < xmax; x++) pre[xx * ksize + x] = pre[xx * ksize + x]! / ww;
    bounds[xx * 2] = xmin;
    bounds[xx * 2 + 1] = xmax;
  }
  const weights = new Int32Array(outSize * ksize);
  const fxp = 2 ** PRECISION_BITS;
  for (let i = 0; i < weights.length; i++) {
    const w = pre[i]!;
    weights[i] = Math.trunc(w * fxp + (w < 0 ? -0.5 : 0.5));
  }
  return { ksize, bounds, weights };
}

const clip8 = (v: number): number => (v < 0 ? 0 : v > 255 ? 255 : v);

function resampleHorizontal(src: Uint8Array, inW: number, h: number, outW: number, c: Coefficients): Uint8Array {
  const out = new Uint8Array(outW * h * 3);
  const half = 1 << (PRECISION_BITS - 1);
  for (let y = 0; y < h; y++) {
    const row = y * inW * 3;
    for (let xx = 0; xx < outW; xx++) {
      const xmin = c.bounds[xx * 2]!, n = c.bounds[xx * 2 + 1]!, k = xx * c.ksize;
      // int32 accumulators, as the C++ (|Σ| < 2^31 by the choice of PRECISION_BITS)
      let s0 = half, s1 = half, s2 = half;
      for (let x = 0, p = row + xmin * 3; x < n; x++, p += 3) {
        const w = c.weights[k + x]!;
        s0 = (s0 + src[p]! * w) | 0;
        s1 = (s1 + src[p + 1]! * w) | 0;
        s2 = (s2 + src[p + 2]! * w) | 0;
      }
      const o = (y * outW + xx) * 3;
      out[o] = clip8(s0 >> PRECISION_BITS);
      out[o + 1] = clip8(s1 >> PRECISION_BITS);
      out[o + 2] = clip8(s2 >> PRECISION_BITS);
    }
  }
  return out;
}

function resampleVertical(src: Uint8Array, w: number, outH: number, c: Coefficients): Uint8Array {
  const rowElems = w * 3;
  const out = new Uint8Array(rowElems * outH);
  const acc = new Int32Array(rowElems);
  for (let yy = 0; yy < outH; yy++) {
    const ymin = c.bounds[yy * 2]!, n = c.bounds[yy * 2 + 1]!, k = yy * c.ksize;
    acc.fill(1 << (PRECISION_BITS - 1));
    for (let y = 0; y < n; y++) {
      const row = (ymin + y) * rowElems;
      const wt = c.weights[k + y]!;
      for (let i = 0; i < rowElems; i++) acc[i] = (acc[i]! + src[row + i]! * wt) | 0;
    }
    const o = yy * rowElems;
    for (let i = 0; i < rowElems; i++) out[o + i] = clip8(acc[i]! >> PRECISION_BITS);
  }
  return out;
}

/** img_tool::resize_pillow: to exactly width × height, horizontal pass first. */
export function resizePillow(img: RgbImage, width: number, height: number, algo: ResizeAlgo): RgbImage {
  if (width <= 0 || width > 65536 || height <= 0 || height > 65536) throw new RangeError(`resize target ${width}x${height} is out of range (max 65536)`);
  let data = img.data;
  if (width !== img.width) data = resampleHorizontal(data, img.width, img.height, width, coefficients(img.width, width, algo));
  if (height !== img.height) data = resampleVertical(data, width, height, coefficients(img.height, height, algo));
  return { width, height, data: data === img.data ? data.slice() : data };
}

/** img_tool::resize's padding: PAD_CEIL (sides rounded up, offsets down) or PAD_NEAREST (both rounded) */
export type LetterboxRounding = 'ceil' | 'nearest';

/** img_tool::resize with padding: the image scaled to fit (at most the target), centred on a
 *  canvas of `pad` colour; a same-size image is copied as it is. */
export function resizeLetterbox(img: RgbImage, width: number, height: number, algo: ResizeAlgo, pad: readonly [number, number, number] = [0, 0, 0], rounding: LetterboxRounding = 'ceil'): RgbImage {
  if (img.width === width && img.height === height) return { width, height, data: img.data.slice() };
  const scale = Math.min(Math.fround(width / img.width), Math.fround(height / img.height));
  // float products as the C++ computes them (float · int in float); std::round is half away from zero
  const side = (n: number, max: number): number => Math.min(rounding === 'ceil' ? Math.ceil(Math.fround(n * scale)) : Math.round(Math.fround(n * scale)), max);
  const newW = side(img.width, width);
  const newH = side(img.height, height);
  const resized = resizePillow(img, newW, newH, algo);
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i++) data.set(pad, i * 3);
  const offset = (room: number): number => (rounding === 'ceil' ? Math.trunc(room / 2) : Math.round(Math.fround(room / 2)));
  const ox = offset(width - newW), oy = offset(height - newH);
  for (let y = 0; y < newH; y++) data.set(resized.data.subarray(y * newW * 3, (y + 1) * newW * 3), ((oy + y) * width + ox) * 3);
  return { width, height, data };
}

/** clip_image_f32::from_u8 then normalize: (v / 255 − mean[c]) / std[c], each step in f32. */
export function normalizeImage(img: RgbImage, mean: Float32Array, std: Float32Array): Float32Array {
  const out = new Float32Array(img.width * img.height * 3);
  const f = Math.fround;
  for (let i = 0; i < out.length; i++) {
    const c = i % 3;
    out[i] = f(f(f(img.data[i]! / 255) - mean[c]!) / std[c]!);
  }
  return out;
}

export interface DynamicSizeLimits {
  /** both sides become multiples of it (patch · merge) */
  readonly align: number;
  /** 0: no bound */
  readonly minPixels: number;
  readonly maxPixels: number;
}

/**
 * img_tool::calc_size_preserved_ratio without a longest edge (the dyn-size preprocessor of
 * Gemma 4 and Qwen-VL): each side rounded to the alignment, then scaled down into maxPixels or
 * up to minPixels with the aspect kept, in the C++'s float arithmetic. Returns [width, height].
 */
export function dynamicSize(width: number, height: number, limits: DynamicSizeLimits): [number, number] {
  const f = Math.fround;
  const a = limits.align;
  const by = (x: number, round: (v: number) => number): number => round(f(f(x) / a)) * a;
  // std::round: half away from zero (the values are positive)
  let w = Math.max(a, by(width, Math.round));
  let h = Math.max(a, by(height, Math.round));
  if (limits.maxPixels > 0 && h * w > limits.maxPixels) {
    const beta = f(Math.sqrt(f(f(height * width) / limits.maxPixels)));
    h = Math.max(a, by(f(height / beta), Math.floor));
    w = Math.max(a, by(f(width / beta), Math.floor));
  } else if (limits.minPixels > 0 && h * w < limits.minPixels) {
    const beta = f(Math.sqrt(f(limits.minPixels / f(height * width))));
    h = by(f(height * beta), Math.ceil);
    w = by(f(width * beta), Math.ceil);
  }
  return [w, h];
}
