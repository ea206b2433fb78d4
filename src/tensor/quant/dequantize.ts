// Dequantization of one row of a weight, exactly as ggml's reference dequantize_row_*.
// Block layouts (little-endian; f16 = IEEE half): legacy-quants.ts (blocks of 32),
// k-quants.ts and k-quants-extra.ts (256), floats.ts; the table of types is ../weight-types.ts.
// Every product here is exact in f32 or needs one rounding, so double arithmetic stored into
// a Float32Array gives the bits ggml's C float code gives.
import { rowBytes, typeName, weightType } from '../weight-types.js';
import type { GGMLType } from '../weight-types.js';
import type { WeightTensor } from '../weight-tensor.js';
import { dequantizeR16Row, isR16 } from './r16.js';

/**
 * out[outOffset .. outOffset+n) = the n values stored in src from byte srcByteOffset.
 * n must be whole blocks of the type; srcByteOffset must start a block.
 */
export function dequantizeRow(
  type: GGMLType,
  src: Uint8Array,
  srcByteOffset: number,
  n: number,
  out: Float32Array,
  outOffset: number,
): void {
  const bytes = rowBytes(type, n);
  if (bytes === undefined) throw new RangeError(`dequantizeRow: ${n} values is not whole blocks of ${typeName(type)}`);
  if (srcByteOffset < 0 || srcByteOffset + bytes > src.length) {
    throw new RangeError(`dequantizeRow: bytes ${srcByteOffset}..${srcByteOffset + bytes} outside a ${src.length}-byte buffer`);
  }
  if (outOffset < 0 || outOffset + n > out.length) throw new RangeError('dequantizeRow: output too short');
  const compute = weightType(type)?.compute;
  if (!compute) throw new RangeError(`dequantizeRow: ${typeName(type)} is not a type loom computes with`);
  compute.dequantize(src, srcByteOffset, n, out, outOffset);
}

/** Row `row` of a matrix weight (dims[0] values per row), dequantized into out (or a new array);
 *  the one way to read a row of a tensor in an interleaved layout. */
export function dequantizeTensorRow(t: WeightTensor, row: number, out?: Float32Array): Float32Array {
  const n = t.dims[0] ?? 0;
  const stride = rowBytes(t.type, n);
  if (stride === undefined) throw new RangeError(`tensor ${t.name}: ${n} values is not whole blocks of ${typeName(t.type)}`);
  const rows = n === 0 ? 0 : t.data.length / stride;
  if (!Number.isInteger(row) || row < 0 || row >= rows) throw new RangeError(`tensor ${t.name}: row ${row} out of range [0, ${rows})`);
  const dst = out ?? new Float32Array(n);
  if (isR16(t.type)) dequantizeR16Row(t.type, t.data, n, row, dst, 0);
  else dequantizeRow(t.type, t.data, row * stride, n, dst, 0);
  return dst;
}
