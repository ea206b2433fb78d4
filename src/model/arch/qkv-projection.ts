// The attention input projections as llama.cpp's files carry them: three matrices (attn_q,
// attn_k, attn_v) or one fused [hidden] → [q | k | v] (attn_qkv: Phi-3, some BERTs), each with
// optional biases. Shared by the decoder (llama.ts) and the encoder (bert.ts).
import type { Kernels } from '../../kernels/index.js';
import type { TensorSource } from '../weights.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import type { Scratch } from './architecture.js';
import { optionalVector } from './architecture.js';

export interface QkvProjection {
  /** q, k, v projections, or one fused [hidden] → [q | k | v] */
  readonly weights: { readonly wq: WeightTensor; readonly wk: WeightTensor; readonly wv: WeightTensor } | { readonly fused: WeightTensor };
  readonly bq: Float32Array | undefined;
  readonly bk: Float32Array | undefined;
  readonly bv: Float32Array | undefined;
  /** the fused matrix's bias (attn_qkv.bias), read only when the caller asks (bert) */
  readonly bqkv: Float32Array | undefined;
}

/** Layer prefix p's projections (`blk.${i}.`); attn_qkv.bias only when fusedBias (the llama family has
 *  never read it here, though llama.cpp's create_tensor_qkv would take one for any family). */
export function loadQkv(tensors: TensorSource, p: string, fusedBias: boolean): QkvProjection {
  return {
    weights: tensors.has(`${p}attn_qkv.weight`)
      ? { fused: tensors.get(`${p}attn_qkv.weight`) }
      : { wq: tensors.get(`${p}attn_q.weight`), wk: tensors.get(`${p}attn_k.weight`), wv: tensors.get(`${p}attn_v.weight`) },
    bq: optionalVector(tensors, `${p}attn_q.bias`),
    bk: optionalVector(tensors, `${p}attn_k.bias`),
    bv: optionalVector(tensors, `${p}attn_v.bias`),
    bqkv: fusedBias ? optionalVector(tensors, `${p}attn_qkv.bias`) : undefined,
  };
}

/** q, k, v ([n, qWidth], [n, kvWidth] ×2) of the n rows of x, biases added. */
export function projectQkv(
  k: Kernels, scratch: Scratch, proj: QkvProjection, x: Float32Array, n: number,
  q: Float32Array, kk: Float32Array, v: Float32Array, qWidth: number, kvWidth: number,
): void {
  const w = proj.weights;
  if ('fused' in w) {
    const qkv = scratch.take('qkv', n * (qWidth + 2 * kvWidth));
    k.matmul(qkv, x, w.fused, n);
    if (proj.bqkv) k.addBias(qkv, proj.bqkv, n);
    splitRows(qkv, n, [q, qWidth], [kk, kvWidth], [v, kvWidth]);
  } else {
    k.matmulSet(x, n, [{ out: q, w: w.wq }, { out: kk, w: w.wk }, { out: v, w: w.wv }]);
  }
  if (proj.bq) k.addBias(q, proj.bq, n);
  if (proj.bk) k.addBias(kk, proj.bk, n);
  if (proj.bv) k.addBias(v, proj.bv, n);
}

/** Splits each of n rows of `fused` into consecutive parts, part j going to row t of its own array. */
export function splitRows(fused: Float32Array, n: number, ...parts: [Float32Array, number][]): void {
  const width = parts.reduce((w, [, pw]) => w + pw, 0);
  for (let t = 0; t < n; t++) {
    let at = t * width;
    for (const [out, pw] of parts) {
      out.set(fused.subarray(at, at + pw), t * pw);
      at += pw;
    }
  }
}
