// Plain TypeScript kernels: the test oracle for the native core, and the fallback where
// it is unavailable. Written to be obviously correct, not fast. Where llama.cpp rounds
// (activations to the weight's dot type, q and softmax weights to f16 against an f16 KV
// cache, GELU through f16), these round the same way, so that greedy tokens agree.
import { convSilu, gatedDeltaRule } from './reference-recurrent.js';
import { attention, capScore, softmax, writeKv } from './reference-attention.js';
import type { ExpertRouting, ExpertWeights, Kernels, MatmulTarget } from './index.js';
import type { WeightTensor } from '../tensor/weight-tensor.js';
import { rope, ropeMulti } from './reference-rope.js';
import { moeExpertsComposed } from './reference-moe.js';
import { dequantizeTensorRow } from '../tensor/quant/dequantize.js';
import { roundActivations } from '../tensor/quant/q8-activations.js';
import { roundToF16 } from '../tensor/half.js';
import { fileType } from '../tensor/weight-types.js';

function matmul(out: Float32Array, x: Float32Array, w: WeightTensor, rows: number): void {
  const [inF, outF] = matrixDims(w);
  const xr = new Float32Array(rows * inF);
  for (let r = 0; r < rows; r++) {
    roundActivations(fileType(w.type), x.subarray(r * inF, (r + 1) * inF), inF, xr.subarray(r * inF, (r + 1) * inF));
  }
  const wRow = new Float32Array(inF);
  for (let o = 0; o < outF; o++) {
    dequantizeTensorRow(w, o, wRow);
    for (let r = 0; r < rows; r++) {
      let sum = 0;
      const base = r * inF;
      for (let i = 0; i < inF; i++) sum += wRow[i]! * xr[base + i]!;
      out[r * outF + o] = sum;
    }
  }
}

function matmulSet(x: Float32Array, rows: number, targets: readonly MatmulTarget[]): void {
  for (const { out, w } of targets) matmul(out, x, w, rows);
}

function matrixDims(w: WeightTensor): [number, number] {
  const [inF, outF = 1, ...rest] = w.dims;
  if (inF === undefined || rest.some((d) => d !== 1)) throw new Error(`${w.name}: not a matrix (dims ${w.dims.join('x')})`);
  return [inF, outF];
}

function embedRows(out: Float32Array, table: WeightTensor, ids: Int32Array): void {
  const [dim, rows] = matrixDims(table);
  for (let t = 0; t < ids.length; t++) {
    const id = ids[t]!;
    if (id < 0 || id >= rows) throw new RangeError(`token id ${id} outside ${table.name} (${rows} rows)`);
    dequantizeTensorRow(table, id, out.subarray(t * dim, (t + 1) * dim));
  }
}

function rmsNorm(out: Float32Array, x: Float32Array, weight: Float32Array, rows: number, dim: number, eps: number): void {
  for (let r = 0; r < rows; r++) {
    const base = r * dim;
    let sumSq = 0;
    for (let i = 0; i < dim; i++) sumSq += x[base + i]! * x[base + i]!;
    const scale = Math.fround(1 / Math.sqrt(sumSq / dim + eps));
    for (let i = 0; i < dim; i++) out[base + i] = Math.fround(x[base + i]! * scale) * weight[i]!;
  }
}

function layerNorm(
  out: Float32Array,
  x: Float32Array,
  weight: Float32Array,
  bias: Float32Array,
  rows: number,
  dim: number,
  eps: number,
): void {
  for (let r = 0; r < rows; r++) {
    const base = r * dim;
    let mean = 0;
    for (let i = 0; i < dim; i++) mean += x[base + i]!;
    mean /= dim;
    let variance = 0;
    for (let i = 0; i < dim; i++) variance += (x[base + i]! - mean) ** 2;
    variance /= dim;
    const scale = 1 / Math.sqrt(variance + eps);
    for (let i = 0; i < dim; i++) out[base + i] = Math.fround((x[base + i]! - mean) * scale) * weight[i]! + bias[i]!;
  }
}

function siluMul(out: Float32Array, gate: Float32Array, up: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const g = gate[i]!;
    out[i] = (g / (1 + Math.exp(-g))) * up[i]!;
  }
}

const GELU_COEF_A = 0.044715;
const SQRT_2_OVER_PI = 0.7978845608028654;

/** tanh-approximated GELU; ggml evaluates it through an f16 table (input and output rounded to f16). */
function gelu(out: Float32Array, x: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const v = x[i]!;
    if (v <= -10) out[i] = 0;
    else if (v >= 10) out[i] = v;
    else {
      const h = roundToF16(v);
      out[i] = roundToF16(0.5 * h * (1 + Math.tanh(SQRT_2_OVER_PI * h * (1 + GELU_COEF_A * h * h))));
    }
  }
}

function geluMul(out: Float32Array, gate: Float32Array, up: Float32Array, n: number): void {
  gelu(out, gate, n);
  for (let i = 0; i < n; i++) out[i] = out[i]! * up[i]!;
}

function softcap(x: Float32Array, n: number, cap: number): void {
  const inv = Math.fround(1 / cap);
  for (let i = 0; i < n; i++) x[i] = capScore(x[i]!, inv, cap);
}

function add(out: Float32Array, a: Float32Array, b: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = a[i]! + b[i]!;
}

function addBias(x: Float32Array, bias: Float32Array, rows: number): void {
  const dim = bias.length;
  for (let r = 0; r < rows; r++) for (let i = 0; i < dim; i++) x[r * dim + i]! += bias[i]!;
}

function argmax(row: Float32Array): number {
  let best = 0;
  let max = row[0]!;
  for (let i = 1; i < row.length; i++) {
    const x = row[i]!;
    if (x > max) {
      max = x;
      best = i;
    }
  }
  return best;
}

function applyTokenMask(row: Float32Array, mask: Int32Array): void {
  if (mask.length < Math.ceil(row.length / 32)) throw new RangeError(`applyTokenMask: ${mask.length} mask words for ${row.length} logits`);
  for (let i = 0; i < row.length; i++) if (((mask[i >> 5]! >>> (i & 31)) & 1) === 0) row[i] = -Infinity;
}

function expWeights(out: Float64Array, row: Float32Array, idx: Int32Array | null, n: number, max: number): number {
  if (n > out.length || n > (idx ?? row).length) throw new RangeError(`expWeights: ${n} weights do not fit`);
  let total = 0;
  for (let j = 0; j < n; j++) {
    const i = idx ? idx[j]! : j;
    if (i < 0 || i >= row.length) throw new RangeError('expWeights: idx holds an index outside row');
    total += out[j] = Math.exp(row[i]! - max);
  }
  return total;
}

function sampleCandidates(row: Float32Array, scale: number, logMinP: number, idx: Int32Array): number {
  const v = row.length;
  if (idx.length < v) throw new RangeError(`sampleCandidates: idx holds ${idx.length} of ${v}`);
  if (scale !== 1) for (let i = 0; i < v; i++) row[i]! *= scale;
  if (v === 0) return 0;
  const floor = row[argmax(row)]! + logMinP;
  let n = 0;
  for (let i = 0; i < v; i++) {
    if (row[i]! >= floor && row[i]! > -Infinity) idx[n++] = i;
    else row[i] = -Infinity;
  }
  return n;
}

function drawIndex(weights: Float64Array, n: number, u: number): number {
  if (!(n >= 1 && n <= weights.length)) throw new RangeError(`drawIndex: n = ${n} of ${weights.length} weights`);
  for (let j = 0; j < n; j++) {
    u -= weights[j]!;
    if (u < 0) return j;
  }
  return n - 1;
}

export const referenceKernels: Kernels = {
  name: 'reference',
  matmul,
  matmulSet,
  moeExperts: (out: Float32Array, x: Float32Array, T: number, k: number, routing: ExpertRouting, w: ExpertWeights) =>
    moeExpertsComposed(referenceKernels, out, x, T, k, routing, w),
  embedRows,
  rmsNorm,
  layerNorm,
  convSilu,
  gatedDeltaRule,
  rope,
  ropeMulti,
  siluMul,
  gelu,
  geluMul,
  softcap,
  add,
  addBias,
  softmax,
  argmax,
  applyTokenMask,
  expWeights,
  sampleCandidates,
  drawIndex,
  writeKv,
  attention,
};
