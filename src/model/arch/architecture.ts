import type { Kernels } from '../../kernels/index.js';
import type { ForwardBatch } from '../batch.js';
import type { KvCache } from '../kv-cache.js';
import type { ModelConfig, TensorSource, WeightTensor } from '../weights.js';
import { dequantizeRow } from '../quant/dequantize.js';

/** A model family's forward pass over a flat batch. */
export interface Architecture {
  readonly config: ModelConfig;
  /** writes the batch's k/v into the cache and returns logits [batch.logitIndices.length, vocabSize] */
  forward(batch: ForwardBatch, kv: KvCache, kernels: Kernels): Float32Array;
}

/** A small tensor (norm weight, bias) widened to f32: these are a few KB, unlike matrices. */
export function loadVector(tensors: TensorSource, name: string): Float32Array {
  const t = tensors.get(name);
  const n = t.dims.reduce((a, b) => a * b, 1);
  const out = new Float32Array(n);
  dequantizeRow(t.type, t.data, 0, n, out, 0);
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
export function gatherRows(x: Float32Array, dim: number, indices: Int32Array): Float32Array {
  const out = new Float32Array(indices.length * dim);
  indices.forEach((row, i) => out.set(x.subarray(row * dim, (row + 1) * dim), i * dim));
  return out;
}
