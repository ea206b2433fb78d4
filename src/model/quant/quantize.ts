// f32 values → the bytes of a ggml tensor of `type`, for writing fixtures (and conversions).
// F16/BF16 round to nearest even; Q8_0 and Q4_0 follow ggml's quantize_row_*_ref bit for bit
// (f32 arithmetic, roundf / truncation as there); Q4_K and Q6_K use our own search (k-quants.ts).
import { InvalidArgumentError } from '../../errors.js';
import { GGMLType, blockGeometry, rowBytes, typeName } from '../ggml-types.js';
import { f32ToBF16, f32ToF16, writeF16 } from '../half.js';
import { QK_K, quantizeQ4KBlock, quantizeQ6KBlock } from './k-quants.js';

const fr = Math.fround;

/** C roundf: nearest, halves away from zero */
function roundAway(v: number): number {
  return v < 0 ? -Math.floor(-v + 0.5) : Math.floor(v + 0.5);
}

/**
 * values: rows of rowLength values each (values.length a multiple of rowLength); returns the
 * tensor's bytes, rows back to back. rowLength must be a multiple of the type's block size.
 */
export function quantize(type: GGMLType, values: Float32Array, rowLength: number): Uint8Array {
  const g = blockGeometry(type);
  if (!g) throw new InvalidArgumentError(`quantize: unknown tensor type ${type}`);
  if (!Number.isInteger(rowLength) || rowLength <= 0 || rowLength % g.blockSize !== 0) {
    throw new InvalidArgumentError(
      `quantize: row length ${rowLength} is not a multiple of ${typeName(type)}'s block size ${g.blockSize}`,
    );
  }
  if (values.length % rowLength !== 0) {
    throw new InvalidArgumentError(`quantize: ${values.length} values is not a whole number of rows of ${rowLength}`);
  }
  const n = values.length;
  const out = new Uint8Array(rowBytes(type, n) ?? 0);
  switch (type) {
    case GGMLType.F32: {
      const dv = new DataView(out.buffer);
      for (let i = 0; i < n; i++) dv.setFloat32(4 * i, values[i]!, true);
      return out;
    }
    case GGMLType.F16:
    case GGMLType.BF16: {
      const conv = type === GGMLType.F16 ? f32ToF16 : f32ToBF16;
      for (let i = 0; i < n; i++) {
        const h = conv(values[i]!);
        out[2 * i] = h & 0xff;
        out[2 * i + 1] = h >>> 8;
      }
      return out;
    }
    case GGMLType.Q8_0:
      for (let b = 0; b < n / 32; b++) quantizeQ8_0Block(values, 32 * b, out, 34 * b);
      return out;
    case GGMLType.Q4_0:
      for (let b = 0; b < n / 32; b++) quantizeQ4_0Block(values, 32 * b, out, 18 * b);
      return out;
    case GGMLType.Q4_K:
      for (let b = 0; b < n / QK_K; b++) quantizeQ4KBlock(values, QK_K * b, out, 144 * b);
      return out;
    case GGMLType.Q6_K:
      for (let b = 0; b < n / QK_K; b++) quantizeQ6KBlock(values, QK_K * b, out, 210 * b);
      return out;
    default:
      throw new InvalidArgumentError(`quantize: ${typeName(type)} is not a type loom computes with`);
  }
}

/** quantize_row_q8_0_ref: d = amax/127, q = roundf(x·(1/d)) */
function quantizeQ8_0Block(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  let amax = 0;
  for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[xo + j]!));
  const d = fr(amax / 127);
  const id = d !== 0 ? fr(1 / d) : 0;
  writeF16(dst, o, d);
  for (let j = 0; j < 32; j++) dst[o + 2 + j] = roundAway(fr(x[xo + j]! * id)) & 0xff;
}

/** quantize_row_q4_0_ref: d = max/−8 (max = the value of largest magnitude), q = min(15, (int8)(x/d + 8.5)) */
function quantizeQ4_0Block(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  let amax = 0, max = 0;
  for (let j = 0; j < 32; j++) {
    const v = x[xo + j]!;
    if (amax < Math.abs(v)) { amax = Math.abs(v); max = v; }
  }
  const d = fr(max / -8);
  const id = d !== 0 ? fr(1 / d) : 0;
  writeF16(dst, o, d);
  for (let j = 0; j < 16; j++) {
    const q0 = Math.min(15, Math.trunc(fr(fr(x[xo + j]! * id) + 8.5)));
    const q1 = Math.min(15, Math.trunc(fr(fr(x[xo + 16 + j]! * id) + 8.5)));
    dst[o + 2 + j] = q0 | (q1 << 4);
  }
}
