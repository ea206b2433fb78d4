// f32 values → the bytes of a ggml tensor of `type`, for writing fixtures (and conversions).
// F16/BF16 round to nearest even; Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 follow ggml's
// quantize_row_*_ref bit for bit (f32 arithmetic, roundf / truncation as there); the K-quants
// and IQ4 types use our own searches (k-quants*.ts, legacy-quants.ts).
import { InvalidArgumentError } from '../../errors.js';
import { blockGeometry, rowBytes, typeName, weightType } from '../weight-types.js';
import type { GGMLType } from '../weight-types.js';

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
  const compute = weightType(type)?.compute;
  if (!compute) throw new InvalidArgumentError(`quantize: ${typeName(type)} is not a type loom computes with`);
  compute.quantize(values, 0, n, out, 0);
  return out;
}
