// Qwen3.5's vision encoder and projector (llama.cpp's PROJECTOR_TYPE_QWEN3VL, "qwen3vl_merger":
// tools/mtmd/models/qwen3vl.cpp): Qwen's dynamic resolution (qwen-resize.ts); a patch embedding
// of two conv kernels over the same still image, summed (the converter splits the temporal
// Conv3D into v.patch_embd.weight and .weight.1); the learned position embedding interpolated
// bilinearly (corners aligned) to the patch grid; a ViT with 2-D rotary (row on the first
// quarter of each head's pairs, column on the second: ggml_rope_multi VISION); the post-norm;
// then each 2×2 block of patches concatenated and projected (mm.0 → GELU → mm.2) into one token
// of the text model's width. The encoder runs on the patches in llama.cpp's order: 2×2 blocks in
// raster order, each block's patches in raster order, so four consecutive rows form a token.
// The image's tokens sit between <|vision_start|> and <|vision_end|>, causal, with M-RoPE
// positions (t, row, col). Qwen3-VL's deepstack layers are not run (Qwen3.5 files have none).
import type { Kernels, RopeSections } from '../../kernels/index.js';
import { f32ArrayToF16 } from '../../tensor/half.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import { GGMLType } from '../../tensor/weight-types.js';
import type { ModelConfig } from '../weights.js';
import type { ClipFile } from './clip-file.js';
import { loadVit } from './clip-file.js';
import type { PreparedImage, RgbImage, VisionProjector } from './projector.js';
import { qwenPrepare } from './qwen-resize.js';
import type { QwenResizeParams } from './qwen-resize.js';
import { Scratch, patchRows, vitForward } from './vit.js';
import type { Linear, VitShape, VitWeights } from './vit.js';

/** the ViT's rotary base (qwen3vl.cpp passes 10000) */
const VIT_ROPE_BASE = 10000;

export class Qwen3vlProjector implements VisionProjector {
  readonly kind = 'qwen3vl' as const;
  readonly imageBegin = '<|vision_start|>';
  readonly imageEnd = '<|vision_end|>';
  readonly nonCausalImage = false;
  readonly positions = 'mrope' as const;
  readonly source: string;
  readonly outputSize: number;
  private readonly shape: VitShape;
  private readonly vit: VitWeights;
  /** both conv kernels side by side: [2 · 3 · patch², hidden] (rows are the two frames' patches) */
  private readonly patch: Linear;
  /** v.position_embd: a side × side grid of [hidden] rows */
  private readonly position: Float32Array;
  private readonly positionSide: number;
  private readonly resize: QwenResizeParams;
  private readonly mean: Float32Array;
  private readonly std: Float32Array;
  private readonly mm0: Linear;
  private readonly mm2: Linear;
  private readonly sections: RopeSections;
  private readonly scratch = new Scratch();

  constructor(file: ClipFile, text: ModelConfig) {
    this.source = file.path;
    if (!text.ropeSections) file.refuse(`the text model (${text.arch}) has no M-RoPE sections (rope.dimension_sections) for the image positions`);
    const { shape, weights } = loadVit(file);
    this.shape = shape;
    const merge = file.u32('clip.vision.spatial_merge_size', 2);
    // qwen3vl.cpp merges 2×2 whatever the key says
    if (merge !== 2) file.refuse(`spatial_merge_size ${merge}: llama.cpp's qwen3vl_merger merges 2×2 patches`);
    const deepstack = file.meta.metadata.get('clip.vision.is_deepstack_layers');
    if ((Array.isArray(deepstack) && deepstack.some((x) => x === true || x === 1)) || file.has('v.deepstack.0.norm.weight')) {
      file.refuse('Qwen3-VL deepstack layers are not supported (loom runs the projector of Qwen3.5, which has none)');
    }
    // what qwen3vl.cpp's graph would apply beyond loadVit's layers: a gated MLP; it asserts no class embedding
    file.refuseAny(['v.class_embd', ...Array.from({ length: weights.layers.length }, (_, l) => `v.blk.${l}.ffn_gate.weight`)], 'Qwen3-VL');
    if (shape.headDim % 4 !== 0) file.refuse(`head size ${shape.headDim} does not split into the four rotary sections`);
    const bias = weights.patch.b;
    if (!bias) file.refuse('no tensor v.patch_embd.bias (qwen3vl_merger adds it to the patch embeddings)');
    this.patch = { w: twoFramePatchMatrix(file, shape), b: bias };
    if (!weights.position) file.refuse('no tensor v.position_embd.weight (qwen3vl_merger interpolates it to the patch grid)');
    this.position = weights.position;
    this.positionSide = Math.round(Math.sqrt(weights.position.length / shape.hidden));
    if (this.positionSide ** 2 * shape.hidden !== weights.position.length) file.refuse('v.position_embd.weight is not a square grid of positions');
    this.vit = weights;
    this.resize = { patchSize: shape.patchSize, mergeSize: merge };
    this.mean = file.f32s('clip.vision.image_mean', 3);
    this.std = file.f32s('clip.vision.image_std', 3);
    this.mm0 = file.linear('mm.0', 4 * shape.hidden);
    this.mm2 = file.linear('mm.2', this.mm0.w.dims[1]);
    this.outputSize = this.mm2.w.dims[1]!;
    const s = shape.headDim / 4;
    this.sections = [s, s, s, s];
  }

  prepare(image: RgbImage): PreparedImage {
    return qwenPrepare(image, this.resize, this.mean, this.std);
  }

  encode(images: readonly PreparedImage[], kernels: Kernels): Float32Array[] {
    return images.map((img) => this.encodeOne(img, kernels));
  }

  private encodeOne(img: PreparedImage, k: Kernels): Float32Array {
    const s = this.shape;
    const rows = img.height / s.patchSize, cols = img.width / s.patchSize;
    if (!Number.isInteger(rows) || !Number.isInteger(cols) || rows % 2 !== 0 || cols % 2 !== 0) {
      throw new RangeError(`a ${img.width}x${img.height} image is not whole 2×2 blocks of ${s.patchSize}-pixel patches`);
    }
    const n = rows * cols;
    const order = blockOrder(rows, cols);
    const patches = reorderRows(patchRows(img.pixels, img.width, img.height, s.patchSize), order, 3 * s.patchSize ** 2, 2);
    const position = reorderRows(interpolatePositions(this.position, this.positionSide, s.hidden, cols, rows), order, s.hidden);
    const ropePositions = vitRopePositions(order, cols);
    const heads = s.heads, hd = s.headDim;
    const rotate = (q: Float32Array, kk: Float32Array): void => {
      k.ropeMulti(q, ropePositions, heads, hd, hd / 2, VIT_ROPE_BASE, this.sections, 'vision');
      k.ropeMulti(kk, ropePositions, heads, hd, hd / 2, VIT_ROPE_BASE, this.sections, 'vision');
    };
    const x = vitForward(k, this.scratch, { ...this.vit, patch: this.patch, position }, s, patches, n, rotate);
    // each 2×2 block's four rows, side by side, are one token's input: [n / 4, 4 · hidden]
    const tokens = n / 4;
    const mid = this.mm0.w.dims[1]!;
    const h = this.scratch.take('merger', tokens * mid);
    k.matmul(h, x, this.mm0.w, tokens);
    if (this.mm0.b) k.addBias(h, this.mm0.b, tokens);
    k.gelu(h, h, tokens * mid);
    const out = new Float32Array(tokens * this.outputSize);
    k.matmul(out, h, this.mm2.w, tokens);
    if (this.mm2.b) k.addBias(out, this.mm2.b, tokens);
    return out;
  }
}

/**
 * The patch conv of both temporal frames as one matrix: row o is [kernel 0's row o | kernel 1's
 * row o], so that a patch's row written twice ([x | x]) gives conv₀(x) + conv₁(x), as llama.cpp
 * adds the two ggml_conv_2d of a still image. In f16 as ggml_conv_2d computes (im2col F16, the
 * kernel rounded to it; f32 for a BF16 kernel).
 */
function twoFramePatchMatrix(file: ClipFile, s: VitShape): WeightTensor {
  const per = 3 * s.patchSize ** 2;
  const frames = ['v.patch_embd.weight', 'v.patch_embd.weight.1'].map((name) => {
    const t = file.tensor(name);
    const dims = t.dims.join(', ');
    if (dims !== `${s.patchSize}, ${s.patchSize}, 3, ${s.hidden}`) file.refuse(`tensor ${name} has dims [${dims}], expected [${s.patchSize}, ${s.patchSize}, 3, ${s.hidden}]`);
    return { type: t.type, values: file.vector(name, per * s.hidden) };
  });
  const both = new Float32Array(2 * per * s.hidden);
  for (let o = 0; o < s.hidden; o++) {
    both.set(frames[0]!.values.subarray(o * per, (o + 1) * per), 2 * o * per);
    both.set(frames[1]!.values.subarray(o * per, (o + 1) * per), (2 * o + 1) * per);
  }
  const dims = [2 * per, s.hidden];
  if (frames.some((f) => f.type === GGMLType.BF16)) return { name: 'v.patch_embd.weight+1', type: GGMLType.F32, dims, data: new Uint8Array(both.buffer) };
  const bits = f32ArrayToF16(both);
  return { name: 'v.patch_embd.weight+1', type: GGMLType.F16, dims, data: new Uint8Array(bits.buffer) };
}

/** [n] the raster index (y · cols + x) of each patch in llama.cpp's order: 2×2 blocks in raster
 *  order, inside each block (0,0), (0,1), (1,0), (1,1) */
export function blockOrder(rows: number, cols: number): Int32Array {
  const order = new Int32Array(rows * cols);
  let i = 0;
  for (let y = 0; y < rows; y += 2) {
    for (let x = 0; x < cols; x += 2) {
      for (let dy = 0; dy < 2; dy++) for (let dx = 0; dx < 2; dx++) order[i++] = (y + dy) * cols + x + dx;
    }
  }
  return order;
}

/** rows of `width` values taken in `order`, each written `repeat` times side by side */
export function reorderRows(src: Float32Array, order: Int32Array, width: number, repeat = 1): Float32Array {
  const out = new Float32Array(order.length * width * repeat);
  order.forEach((from, i) => {
    const row = src.subarray(from * width, (from + 1) * width);
    for (let r = 0; r < repeat; r++) out.set(row, (i * repeat + r) * width);
  });
  return out;
}

/** the ViT's rotary positions [4n] section-major (clip.cpp for QWEN3VL): (row, col, row, col) per patch */
export function vitRopePositions(order: Int32Array, cols: number): Int32Array {
  const n = order.length;
  const out = new Int32Array(4 * n);
  order.forEach((p, i) => {
    const y = Math.floor(p / cols), x = p % cols;
    out[i] = y;
    out[n + i] = x;
    out[2 * n + i] = y;
    out[3 * n + i] = x;
  });
  return out;
}

/**
 * clip_graph::resize_position_embeddings with GGML_SCALE_MODE_BILINEAR | ALIGN_CORNERS (ggml-cpu's
 * upscale, in its f32 arithmetic): a side × side grid of [dim] rows to height × width, raster
 * order. An equal grid is returned as it is.
 */
export function interpolatePositions(pos: Float32Array, side: number, dim: number, width: number, height: number): Float32Array {
  if (width === side && height === side) return pos;
  const f = Math.fround;
  const scale = (out: number): number => (out > 1 && side > 1 ? f((out - 1) / (side - 1)) : f(out / side));
  const sx = scale(width), sy = scale(height);
  const at = (v: number, s: number): [number, number, number] => {
    const c = f(v / s);
    const lo = Math.floor(c);
    const i0 = Math.max(0, Math.min(lo, side - 1)), i1 = Math.max(0, Math.min(lo + 1, side - 1));
    return [i0, i1, Math.max(0, Math.min(f(c - i0), 1))];
  };
  const out = new Float32Array(width * height * dim);
  for (let y = 0; y < height; y++) {
    const [y0, y1, dy] = at(y, sy);
    for (let x = 0; x < width; x++) {
      const [x0, x1, dx] = at(x, sx);
      const a = (y0 * side + x0) * dim, b = (y0 * side + x1) * dim, c = (y1 * side + x0) * dim, d = (y1 * side + x1) * dim;
      const o = (y * width + x) * dim;
      for (let e = 0; e < dim; e++) {
        // a·(1−dx)·(1−dy) + b·dx·(1−dy) + c·(1−dx)·dy + d·dx·dy, left to right as ggml writes it
        const va = f(f(pos[a + e]! * f(1 - dx)) * f(1 - dy));
        const vb = f(f(pos[b + e]! * dx) * f(1 - dy));
        const vc = f(f(pos[c + e]! * f(1 - dx)) * dy);
        const vd = f(f(pos[d + e]! * dx) * dy);
        out[o + e] = f(f(f(va + vb) + vc) + vd);
      }
    }
  }
  return out;
}
