// The vision transformer blocks llama.cpp's clip_graph::build_vit runs for SigLIP-style encoders
// (Gemma 3's; Qwen's adds its rotary through `rotate` and its merger after): the patch embedding
// (the stride-patch conv as one matmul over flattened patches, plus its bias), learned position
// embeddings, pre-LayerNorm layers of bidirectional multi-head attention and a GELU MLP, and
// the post-LayerNorm. Everything runs through the kernel interface, so the same code is the
// reference (reference kernels) and the fast path (native: each head's attention is two matmuls
// over the whole image, as llama.cpp's non-flash path computes it).
import type { Kernels } from '../../kernels/index.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import { GGMLType } from '../../tensor/weight-types.js';
import { Scratch } from '../arch/architecture.js';

/** A matrix and its optional bias. */
export interface Linear {
  readonly w: WeightTensor;
  readonly b?: Float32Array;
}

export interface Norm {
  readonly w: Float32Array;
  readonly b?: Float32Array;
}

export interface VitLayer {
  readonly ln1: Norm;
  /** separate projections, or one fused [q | k | v] (`qkv`) */
  readonly q?: Linear;
  readonly k?: Linear;
  readonly v?: Linear;
  readonly qkv?: Linear;
  readonly o: Linear;
  readonly ln2: Norm;
  readonly up: Linear;
  readonly down: Linear;
}

export interface VitShape {
  readonly hidden: number;
  readonly heads: number;
  readonly headDim: number;
  readonly patchSize: number;
  readonly eps: number;
}

export interface VitWeights {
  /** the patch conv as a matrix: [3 · patch², hidden] (input index c · patch² + y · patch + x) */
  readonly patch: Linear;
  /** [numPatches · hidden], added to the patch embeddings */
  readonly position?: Float32Array;
  readonly preLn?: Norm;
  readonly layers: readonly VitLayer[];
  readonly postLn?: Norm;
}

/** Q and K after their projections ([n, heads · headDim] each), in place: Qwen's 2-D rotary. */
export type RotateQk = (q: Float32Array, k: Float32Array, n: number) => void;

/**
 * Flattens the patches of normalized pixels ([height, width, 3] interleaved, as clip_image_f32)
 * into rows of 3 · patch² values in the conv kernel's order (channel, row, column); patches in
 * raster order. Returns [numPatches, 3 · patch²].
 */
export function patchRows(pixels: Float32Array, width: number, height: number, patch: number): Float32Array {
  const cols = width / patch, rows = height / patch;
  if (!Number.isInteger(cols) || !Number.isInteger(rows)) throw new RangeError(`image ${width}x${height} is not whole patches of ${patch}`);
  const per = 3 * patch * patch;
  const out = new Float32Array(rows * cols * per);
  for (let py = 0; py < rows; py++) {
    for (let px = 0; px < cols; px++) {
      const base = (py * cols + px) * per;
      for (let c = 0; c < 3; c++) {
        for (let y = 0; y < patch; y++) {
          const src = ((py * patch + y) * width + px * patch) * 3 + c;
          const dst = base + c * patch * patch + y * patch;
          for (let x = 0; x < patch; x++) out[dst + x] = pixels[src + 3 * x]!;
        }
      }
    }
  }
  return out;
}

function linear(k: Kernels, out: Float32Array, x: Float32Array, l: Linear, n: number): void {
  k.matmul(out, x, l.w, n);
  if (l.b) k.addBias(out, l.b, n);
}

function norm(k: Kernels, out: Float32Array, x: Float32Array, nm: Norm, n: number, dim: number, eps: number, zeros: Float32Array): void {
  k.layerNorm(out, x, nm.w, nm.b ?? zeros, n, dim, eps);
}

/** An f32 matrix over `data` for the kernels' matmul: `outF` rows of `inF` values. */
function f32Matrix(name: string, data: Float32Array, inF: number, outF: number): WeightTensor {
  return { name, type: GGMLType.F32, dims: [inF, outF], data: new Uint8Array(data.buffer, data.byteOffset, inF * outF * 4) };
}

/** the most scores a head's block of queries holds at once (64 MiB: a 896-pixel Gemma 3 image's
 *  4096 patches in one block; Gemma 4's largest images, 10 080 patches, in blocks of 1 664 rows) */
const SCORE_FLOATS = 16 * 1024 * 1024;

/**
 * Bidirectional multi-head attention over all n tokens, head by head: S = (q·scale) Kᵀ,
 * softmax over each row, out = S V. q, k, v, out: [n, heads · headDim]. Queries go in blocks of
 * at most maxScores / n rows.
 */
export function denseAttention(k: Kernels, scratch: Scratch, out: Float32Array, q: Float32Array, kk: Float32Array, v: Float32Array, n: number, heads: number, headDim: number, scale: number, maxScores = SCORE_FLOATS): void {
  const width = heads * headDim;
  const qh = scratch.take('attn.q', n * headDim);
  const kh = scratch.take('attn.k', n * headDim);
  const vt = scratch.take('attn.vt', n * headDim);
  const block = Math.max(1, Math.min(n, Math.floor(maxScores / n)));
  const s = scratch.take('attn.s', block * n);
  const oh = scratch.take('attn.o', n * headDim);
  for (let h = 0; h < heads; h++) {
    const at = h * headDim;
    for (let t = 0; t < n; t++) {
      const src = t * width + at;
      for (let j = 0; j < headDim; j++) qh[t * headDim + j] = q[src + j]! * scale;
      kh.set(kk.subarray(src, src + headDim), t * headDim);
      for (let j = 0; j < headDim; j++) vt[j * n + t] = v[src + j]!;
    }
    const kt = f32Matrix('attn.k', kh, headDim, n), vm = f32Matrix('attn.vt', vt, n, headDim);
    // query rows in blocks, so the scores stay within SCORE_FLOATS however large the image
    for (let r0 = 0; r0 < n; r0 += block) {
      const rows = Math.min(block, n - r0);
      const sb = s.subarray(0, rows * n);
      k.matmul(sb, qh.subarray(r0 * headDim, (r0 + rows) * headDim), kt, rows);
      k.softmax(sb, rows, n);
      k.matmul(oh.subarray(r0 * headDim, (r0 + rows) * headDim), sb, vm, rows);
    }
    for (let t = 0; t < n; t++) out.set(oh.subarray(t * headDim, (t + 1) * headDim), t * width + at);
  }
}

/**
 * The encoder over one image's patches ([n, 3 · patch²] from patchRows): embeddings, every
 * layer, the post-norm. Returns [n, hidden] (a scratch buffer: copy what must outlive the next call).
 */
export function vitForward(k: Kernels, scratch: Scratch, w: VitWeights, s: VitShape, patches: Float32Array, n: number, rotate?: RotateQk): Float32Array {
  const d = s.hidden;
  const width = s.heads * s.headDim;
  const zeros = scratch.take('zeros', Math.max(d, width)).fill(0);
  const x = scratch.take('x', n * d);
  const h = scratch.take('h', n * d);
  const q = scratch.take('q', n * width);
  const kk = scratch.take('k', n * width);
  const v = scratch.take('v', n * width);
  const attn = scratch.take('attn', n * width);
  linear(k, x, patches, w.patch, n);
  if (w.position) k.add(x, x, w.position, n * d);
  if (w.preLn) norm(k, x, x, w.preLn, n, d, s.eps, zeros);
  for (const layer of w.layers) {
    norm(k, h, x, layer.ln1, n, d, s.eps, zeros);
    if (layer.qkv) {
      const fused = scratch.take('qkv', n * 3 * width);
      linear(k, fused, h, layer.qkv, n);
      for (let t = 0; t < n; t++) {
        const row = fused.subarray(t * 3 * width, (t + 1) * 3 * width);
        q.set(row.subarray(0, width), t * width);
        kk.set(row.subarray(width, 2 * width), t * width);
        v.set(row.subarray(2 * width), t * width);
      }
    } else {
      k.matmulSet(h, n, [{ out: q, w: layer.q!.w }, { out: kk, w: layer.k!.w }, { out: v, w: layer.v!.w }]);
      if (layer.q!.b) k.addBias(q, layer.q!.b, n);
      if (layer.k!.b) k.addBias(kk, layer.k!.b, n);
      if (layer.v!.b) k.addBias(v, layer.v!.b, n);
    }
    rotate?.(q, kk, n);
    denseAttention(k, scratch, attn, q, kk, v, n, s.heads, s.headDim, 1 / Math.sqrt(s.headDim));
    linear(k, h, attn, layer.o, n);
    k.add(x, x, h, n * d);
    norm(k, h, x, layer.ln2, n, d, s.eps, zeros);
    const ffn = layer.up.w.dims[1]!;
    const up = scratch.take('up', n * ffn);
    linear(k, up, h, layer.up, n);
    k.gelu(up, up, n * ffn);
    linear(k, h, up, layer.down, n);
    k.add(x, x, h, n * d);
  }
  if (w.postLn) norm(k, x, x, w.postLn, n, d, s.eps, zeros);
  return x;
}

export { Scratch };
