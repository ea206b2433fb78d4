// Gemma 4's projector (llama.cpp's PROJECTOR_TYPE_GEMMA4V, tools/mtmd/models/gemma4v.cpp): the
// image resized (bicubic, aspect kept) to whole pooled patches within 70..1120 tokens; pixels
// taken to 2x − 1; the patch conv without bias plus learned x and y position rows; RMS-norm
// layers with per-head Q/K norms, a weightless RMS norm on V, attention without the 1/√d scale,
// 2-D rotary (first half of each head by column, second by row, NeoX pairs, θ 100), post-norms,
// a gated MLP, a learned scalar on each layer's output and clamps on the matrices that carry
// them (Gemma4ClippableLinear); then a 3×3 average pool times √width, (x − std_bias) · std_scale,
// a weightless RMS norm and mm.input_projection. Between <|image> and <image|>; non-causal
// except in E2B and E4B (text widths 1536 and 2560), as mtmd_decode_use_non_causal says.
import type { Kernels } from '../../kernels/index.js';
import { roundToF16 } from '../../tensor/half.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import type { ModelConfig } from '../weights.js';
import type { ClipFile } from './clip-file.js';
import { patchMatrix } from './clip-file.js';
import { averagePool } from './gemma3.js';
import { dynamicSize, normalizeImage, resizeLetterbox } from './preprocess.js';
import type { PreparedImage, RgbImage, VisionProjector } from './projector.js';
import { Scratch, denseAttention, patchRows } from './vit.js';

/** a matrix with Gemma4ClippableLinear's bounds (±∞ where the file has none) */
interface Clamped {
  readonly w: WeightTensor;
  readonly inMin: number;
  readonly inMax: number;
  readonly outMin: number;
  readonly outMax: number;
}

interface Layer {
  readonly ln1: Float32Array;
  readonly q: Clamped;
  readonly k: Clamped;
  readonly v: Clamped;
  readonly qNorm: Float32Array;
  readonly kNorm: Float32Array;
  readonly o: Clamped;
  readonly attnPostNorm: Float32Array;
  readonly ln2: Float32Array;
  readonly gate: Clamped;
  readonly up: Clamped;
  readonly down: Clamped;
  readonly ffnPostNorm: Float32Array;
  /** [1] or [hidden]: the layer's output is multiplied by it */
  readonly outScale: Float32Array;
}

const ROPE_THETA = 100;

export class Gemma4VisionProjector implements VisionProjector {
  readonly kind = 'gemma4v' as const;
  readonly imageBegin = '<|image>';
  readonly imageEnd = '<image|>';
  readonly positions = 'linear' as const;
  readonly nonCausalImage: boolean;
  readonly source: string;
  readonly outputSize: number;
  private readonly hidden: number;
  private readonly heads: number;
  private readonly headDim: number;
  private readonly patchSize: number;
  private readonly merge: number;
  private readonly eps: number;
  private readonly quickGelu: boolean;
  private readonly minPixels: number;
  private readonly maxPixels: number;
  private readonly mean: Float32Array;
  private readonly std: Float32Array;
  private readonly patch: WeightTensor;
  /** [2, positions, hidden]: the x table then the y table */
  private readonly posTable: Float32Array;
  private readonly posRows: number;
  private readonly layers: Layer[] = [];
  private readonly stdBias?: Float32Array;
  private readonly stdScale?: Float32Array;
  private readonly projection: Clamped;
  private readonly scratch = new Scratch();

  constructor(file: ClipFile, text: ModelConfig) {
    this.source = file.path;
    const d = (this.hidden = file.u32('clip.vision.embedding_length'));
    this.heads = file.u32('clip.vision.attention.head_count');
    this.headDim = file.u32('clip.vision.attention.head_dim', d / this.heads);
    if (!Number.isInteger(this.headDim) || this.headDim % 4 !== 0) file.refuse(`head size ${this.headDim} cannot be split into two rotary halves`);
    if (file.u32('clip.vision.attention.head_count_kv', this.heads) !== this.heads) file.refuse("the encoder's attention is grouped; loom runs plain multi-head attention here");
    this.patchSize = file.u32('clip.vision.patch_size');
    this.merge = file.u32('clip.vision.projector.scale_factor', 3);
    this.eps = file.meta.number('clip.vision.attention.layer_norm_epsilon', 1e-6);
    // clip.cpp: use_gelu → GELU, use_silu → SiLU, neither → quick GELU (what Gemma 4's converter leaves)
    if (file.meta.bool('clip.use_silu', false)) file.refuse("the encoder's MLP uses SiLU; loom runs GELU and quick GELU here");
    this.quickGelu = !file.meta.bool('clip.use_gelu', false);
    const area = (this.patchSize * this.merge) ** 2;
    this.minPixels = 70 * area;
    this.maxPixels = 1120 * area;
    this.mean = file.f32s('clip.vision.image_mean', 3);
    this.std = file.f32s('clip.vision.image_std', 3);
    this.nonCausalImage = text.hiddenSize !== 1536 && text.hiddenSize !== 2560;

    this.patch = patchMatrix(file, 3 * this.patchSize * this.patchSize, d);
    const pos = file.tensor('v.position_embd.weight');
    if (pos.dims[0] !== d || (pos.dims[2] ?? 1) * (pos.dims[1] ?? 0) < 2) file.refuse(`tensor v.position_embd.weight has dims [${pos.dims.join(', ')}], expected [${d}, n, 2]`);
    this.posRows = pos.dims[1]!;
    this.posTable = file.vector('v.position_embd.weight');
    const clamped = (name: string, inF: number, outF?: number): Clamped => {
      const w = file.linear(name, inF, outF).w;
      const bound = (suffix: string, fallback: number): number => (file.has(`${name}.${suffix}`) ? file.vector(`${name}.${suffix}`, 1)[0]! : fallback);
      return { w, inMin: bound('input_min', -Infinity), inMax: bound('input_max', Infinity), outMin: bound('output_min', -Infinity), outMax: bound('output_max', Infinity) };
    };
    const width = this.heads * this.headDim;
    const layerCount = file.u32('clip.vision.block_count');
    const ffn = file.u32('clip.vision.feed_forward_length');
    // what clip.cpp's build_vit applies when present, and Gemma 4's files do not have
    file.refuseAny(['v.pre_ln.weight', 'v.post_ln.weight'], 'Gemma 4');
    for (let l = 0; l < layerCount; l++) {
      const p = `v.blk.${l}`;
      file.refuseAny(['ln1.bias', 'ln2.bias', 'attn_q.bias', 'attn_k.bias', 'attn_v.bias', 'attn_out.bias', 'attn_qkv.weight', 'ffn_up.bias', 'ffn_gate.bias', 'ffn_down.bias', 'ls1.weight', 'ls2.weight'].map((t) => `${p}.${t}`), 'Gemma 4');
      this.layers.push({
        ln1: file.vector(`${p}.ln1.weight`, d),
        q: clamped(`${p}.attn_q`, d, width),
        k: clamped(`${p}.attn_k`, d, width),
        v: clamped(`${p}.attn_v`, d, width),
        qNorm: file.vector(`${p}.attn_q_norm.weight`, this.headDim),
        kNorm: file.vector(`${p}.attn_k_norm.weight`, this.headDim),
        o: clamped(`${p}.attn_out`, width, d),
        attnPostNorm: file.vector(`${p}.attn_post_norm.weight`, d),
        ln2: file.vector(`${p}.ln2.weight`, d),
        gate: clamped(`${p}.ffn_gate`, d, ffn),
        up: clamped(`${p}.ffn_up`, d, ffn),
        down: clamped(`${p}.ffn_down`, ffn, d),
        ffnPostNorm: file.vector(`${p}.ffn_post_norm.weight`, d),
        outScale: file.has(`${p}.out_scale.weight`) ? file.vector(`${p}.out_scale.weight`) : Float32Array.of(1),
      });
    }
    if (file.has('v.std_bias') !== file.has('v.std_scale')) file.refuse('the file has one of v.std_bias and v.std_scale without the other');
    if (file.has('v.std_bias')) {
      this.stdBias = file.vector('v.std_bias', d);
      this.stdScale = file.vector('v.std_scale', d);
    }
    this.projection = clamped('mm.input_projection', d);
    this.outputSize = this.projection.w.dims[1]!;
  }

  /** mtmd_image_preprocessor_dyn_size: bicubic into the aspect-kept size of whole pooled patches */
  prepare(image: RgbImage): PreparedImage {
    const align = this.patchSize * this.merge;
    const [w, h] = dynamicSize(image.width, image.height, { align, minPixels: this.minPixels, maxPixels: this.maxPixels });
    const resized = resizeLetterbox(image, w, h, 'bicubic');
    const cols = w / align, rows = h / align;
    return { pixels: normalizeImage(resized, this.mean, this.std), width: w, height: h, numTokens: rows * cols, gridRows: rows, gridCols: cols };
  }

  encode(images: readonly PreparedImage[], kernels: Kernels): Float32Array[] {
    return images.map((img) => this.encodeOne(img, kernels));
  }

  private encodeOne(img: PreparedImage, k: Kernels): Float32Array {
    const d = this.hidden, hd = this.headDim, heads = this.heads, width = heads * hd;
    const cols = img.width / this.patchSize, rows = img.height / this.patchSize;
    if (cols > this.posRows || rows > this.posRows) throw new RangeError(`${this.source}: an image of ${cols}x${rows} patches is beyond the position tables (${this.posRows})`);
    const n = rows * cols;
    const s = this.scratch;
    const pixels = s.take('pixels', img.pixels.length);
    for (let i = 0; i < pixels.length; i++) pixels[i] = Math.fround(img.pixels[i]! * 2 - 1);
    const x = s.take('x', n * d), h = s.take('h', n * d);
    k.matmul(x, patchRows(pixels, img.width, img.height, this.patchSize), this.patch, n);
    const posX = new Int32Array(n), posY = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      posX[i] = i % cols;
      posY[i] = Math.floor(i / cols);
    }
    const rowsOf = (ids: Int32Array, table: number): Float32Array => {
      for (let i = 0; i < n; i++) h.set(this.posTable.subarray((table * this.posRows + ids[i]!) * d, (table * this.posRows + ids[i]! + 1) * d), i * d);
      return h;
    };
    k.add(x, x, rowsOf(posX, 0), n * d);
    k.add(x, x, rowsOf(posY, 1), n * d);

    const q = s.take('q', n * width), kk = s.take('k', n * width), v = s.take('v', n * width), attn = s.take('attn', n * width);
    const ones = s.take('ones', Math.max(d, hd)).fill(1);
    for (const L of this.layers) {
      k.rmsNorm(h, x, L.ln1, n, d, this.eps);
      this.clampedMatmul(k, q, h, L.q, n);
      this.clampedMatmul(k, kk, h, L.k, n);
      this.clampedMatmul(k, v, h, L.v, n);
      k.rmsNorm(q, q, L.qNorm, n * heads, hd, this.eps);
      k.rmsNorm(kk, kk, L.kNorm, n * heads, hd, this.eps);
      this.rotate(k, q, posX, posY, n);
      this.rotate(k, kk, posX, posY, n);
      k.rmsNorm(v, v, ones.subarray(0, hd), n * heads, hd, this.eps);
      denseAttention(k, s, attn, q, kk, v, n, heads, hd, 1);
      this.clampedMatmul(k, h, attn, L.o, n);
      k.rmsNorm(h, h, L.attnPostNorm, n, d, this.eps);
      k.add(x, h, x, n * d);
      k.rmsNorm(h, x, L.ln2, n, d, this.eps);
      const ffn = L.up.w.dims[1]!;
      const up = s.take('up', n * ffn), gate = s.take('gate', n * ffn);
      this.clampedMatmul(k, up, h, L.up, n);
      this.clampedMatmul(k, gate, h, L.gate, n);
      if (this.quickGelu) geluQuickMul(gate, gate, up, n * ffn);
      else k.geluMul(gate, gate, up, n * ffn);
      this.clampedMatmul(k, h, gate, L.down, n);
      k.rmsNorm(h, h, L.ffnPostNorm, n, d, this.eps);
      k.add(x, x, h, n * d);
      scaleRows(x, L.outScale, n, d);
    }
    const pooled = averagePool(x, rows, cols, d, this.merge);
    const tokens = pooled.length / d;
    const scale = Math.fround(Math.sqrt(d));
    for (let i = 0; i < pooled.length; i++) pooled[i] = Math.fround(pooled[i]! * scale);
    if (this.stdBias && this.stdScale) {
      for (let t = 0; t < tokens; t++) {
        for (let e = 0; e < d; e++) pooled[t * d + e] = Math.fround(Math.fround(pooled[t * d + e]! - this.stdBias[e]!) * this.stdScale[e]!);
      }
    }
    k.rmsNorm(pooled, pooled, ones.subarray(0, d), tokens, d, this.eps);
    const out = new Float32Array(tokens * this.outputSize);
    this.clampedMatmul(k, out, pooled, this.projection, tokens);
    return out;
  }

  /** Gemma4ClippableLinear: the input clamped, the product, the output clamped */
  private clampedMatmul(k: Kernels, out: Float32Array, x: Float32Array, m: Clamped, n: number): void {
    const inF = m.w.dims[0]!;
    let input = x.subarray(0, n * inF);
    if (m.inMin > -Infinity || m.inMax < Infinity) {
      input = this.scratch.take('clamp', n * inF);
      for (let i = 0; i < input.length; i++) input[i] = Math.min(Math.max(x[i]!, m.inMin), m.inMax);
    }
    k.matmul(out, input, m.w, n);
    if (m.outMin > -Infinity || m.outMax < Infinity) {
      const len = n * m.w.dims[1]!;
      for (let i = 0; i < len; i++) out[i] = Math.min(Math.max(out[i]!, m.outMin), m.outMax);
    }
  }

  /** ggml_rope_ext (NeoX, θ 100) on the first half of every head by column, then on the second by row */
  private rotate(k: Kernels, x: Float32Array, posX: Int32Array, posY: Int32Array, n: number): void {
    const hd = this.headDim, half = hd / 2, heads = this.heads;
    k.rope(x, posX, heads, hd, half, ROPE_THETA, 'neox');
    const second = this.scratch.take('rope', n * heads * half);
    for (let t = 0; t < n * heads; t++) second.set(x.subarray(t * hd + half, (t + 1) * hd), t * half);
    k.rope(second, posY, heads, half, half, ROPE_THETA, 'neox');
    for (let t = 0; t < n * heads; t++) x.set(second.subarray(t * half, (t + 1) * half), t * hd + half);
  }
}

const QUICK_COEF = Math.fround(-1.702);

/** ggml's geglu_quick in f32: quick GELU of the gate through its f16 table, times up */
function geluQuickMul(out: Float32Array, gate: Float32Array, up: Float32Array, n: number): void {
  const f = Math.fround;
  for (let i = 0; i < n; i++) {
    const g = roundToF16(gate[i]!);
    const act = roundToF16(f(g * f(1 / f(1 + f(Math.exp(f(QUICK_COEF * g)))))));
    out[i] = f(act * up[i]!);
  }
}

/** x[r, :] *= s (s of one value, or of dim values) */
function scaleRows(x: Float32Array, s: Float32Array, rows: number, dim: number): void {
  if (s.length === 1) {
    const v = s[0]!;
    for (let i = 0; i < rows * dim; i++) x[i] = Math.fround(x[i]! * v);
    return;
  }
  for (let r = 0; r < rows; r++) for (let e = 0; e < dim; e++) x[r * dim + e] = Math.fround(x[r * dim + e]! * s[e]!);
}
