import type { Kernels } from '../../kernels/index.js';
import type { ForwardBatch } from '../batch.js';
import type { KvCache } from '../kv-cache.js';
import type { ModelConfig, TensorSource } from '../weights.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import { dequantizeTensorRow } from '../../tensor/quant/dequantize.js';
import { allocateLarge } from '../../kernels/native.js';

/** A model family's forward pass over a flat batch. */
export interface Architecture {
  readonly config: ModelConfig;
  /** writes the batch's k/v into the cache and returns logits [batch.logitIndices.length, vocabSize],
   *  a view valid until the next forward */
  forward(batch: ForwardBatch, kv: KvCache, kernels: Kernels): Float32Array;
  /** pooling models: writes the batch's k/v into the cache and returns the last layer's hidden
   *  states [numTokens, hiddenSize] (llama.cpp's t_embd), a view valid until the next call */
  hiddenStates?(batch: ForwardBatch, kv: KvCache, kernels: Kernels): Float32Array;
  /** mixture-of-experts families: per layer, the tokens routed to each expert so far ([numExperts] each) */
  readonly expertLoad?: readonly Float64Array[];
}

/** A small tensor (norm weight, bias) widened to f32: these are a few KB, unlike matrices. */
export function loadVector(tensors: TensorSource, name: string): Float32Array {
  const t = tensors.get(name);
  const n = t.dims.reduce((a, b) => a * b, 1);
  const out = new Float32Array(n);
  // row by row: a tensor in an interleaved layout has no contiguous rows
  const width = t.dims[0] ?? n;
  for (let row = 0; row < n / width; row++) dequantizeTensorRow(t, row, out.subarray(row * width, (row + 1) * width));
  return out;
}

export function optionalVector(tensors: TensorSource, name: string): Float32Array | undefined {
  return tensors.has(name) ? loadVector(tensors, name) : undefined;
}

/** The output projection: its own tensor, or the token embedding when tied. */
export function outputWeight(tensors: TensorSource): WeightTensor {
  return tensors.has('output.weight') ? tensors.get('output.weight') : tensors.get('token_embd.weight');
}

/** Copies the rows of x ([rows, dim]) named by indices into a new [indices.length, dim] array. */
export function gatherRows(x: Float32Array, dim: number, indices: Int32Array, out: Float32Array = new Float32Array(indices.length * dim)): Float32Array {
  indices.forEach((row, i) => out.set(x.subarray(row * dim, (row + 1) * dim), i * dim));
  return out;
}

/**
 * The logits of the rows batch.logitIndices of the residual stream x: final RMSNorm, then the
 * output projection (the head shared by the RMSNorm families).
 */
export function rmsNormLogits(
  x: Float32Array,
  logitIndices: Int32Array,
  norm: Float32Array,
  output: WeightTensor,
  config: ModelConfig,
  scratch: Scratch,
  k: Kernels,
): Float32Array {
  const rows = logitIndices.length;
  const last = gatherRows(x, config.hiddenSize, logitIndices, scratch.take('last', rows * config.hiddenSize));
  k.rmsNorm(last, last, norm, rows, config.hiddenSize, config.normEps);
  const logits = scratch.take('logits', rows * config.vocabSize);
  k.matmul(logits, last, output, rows);
  return logits;
}

/** scratch buffers of this many floats and more come 64-byte aligned from allocateLarge */
const LARGE_SCRATCH_FLOATS = 1 << 18;

/**
 * Activation buffers reused from one forward pass to the next: allocating them per step
 * (the logits alone are 12 MB at 64 sequences × 49k vocabulary) cost ~10% of a decode
 * step in garbage collection. Views are valid until the next take of the same name.
 */
export class Scratch {
  private readonly buffers = new Map<string, Float32Array>();

  take(name: string, size: number): Float32Array {
    let buffer = this.buffers.get(name);
    if (!buffer || buffer.length < size) {
      const length = Math.max(size, Math.ceil((buffer?.length ?? 0) * 1.5));
      // large ones 64-byte aligned (on huge pages): the LM head streams its logits to memory
      buffer = length >= LARGE_SCRATCH_FLOATS ? new Float32Array(allocateLarge(4 * length)) : new Float32Array(length);
      this.buffers.set(name, buffer);
    }
    return buffer.subarray(0, size);
  }
}
