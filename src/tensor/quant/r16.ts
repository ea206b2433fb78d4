// Weights interleaved by 16 rows (GGMLType.Q4_0_R16, Q8_0_R16): the layouts loom gives Q4_0
// and Q8_0 matrices at load time where the native core has AVX2 or AVX-512 VNNI (native/r16.h), so
// that 16 rows are read as one and one kernel serves every row count. A tensor keeps its
// plain type's size: group g (rows 16g..16g+15) starts where row 16g did, and each of its
// K/32 blocks holds the 16 rows' f16 scales, then their quant bytes as 64-byte vectors where
// byte 32 + 64i + 4o + t is byte 4i + t of row o's block (Q4_0: 16 nibble bytes; Q8_0: 32
// bytes of q + 128, the sign bit flipped). This file is the reference of those layouts.
import { GGMLType, WEIGHT_TYPES } from '../weight-types.js';
import type { LayoutRow } from '../weight-types.js';
import { f16ToF32 } from '../half.js';
import type { WeightTensor } from '../weight-tensor.js';

export const R16_ROWS = 16;

/** Rewrites a matrix of N rows of K values of the plain type of `type` (Q4_0_R16, Q8_0_R16) into that layout, in place. */
export type R16Interleaver = (type: GGMLType, data: Uint8Array, K: number, N: number) => void;

/** the layout of an interleaved type (its row in the table: the plain type it rearranges, the quant bytes of one row's block) */
function layout(type: GGMLType): LayoutRow {
  const l = WEIGHT_TYPES.get(type)?.layout;
  if (l?.rows !== R16_ROWS) throw new RangeError(`type ${type} is not a layout interleaved by 16 rows`);
  return l;
}

/** The interleaved type a tensor can take (a Q4_0 or Q8_0 matrix of whole groups of 16 rows), or undefined. */
export function r16TypeFor(type: GGMLType, dims: readonly number[]): GGMLType | undefined {
  if (dims.length !== 2 || dims[1]! % R16_ROWS !== 0) return undefined;
  for (const [r16, row] of WEIGHT_TYPES) if (row.layout?.rows === R16_ROWS && row.layout.of === type) return r16;
  return undefined;
}

/** Whether a type is one of the layouts interleaved by 16 rows. */
export function isR16(type: GGMLType): boolean {
  return WEIGHT_TYPES.get(type)?.layout?.rows === R16_ROWS;
}

// where byte p of row o's quant bytes lies in a group's block
const payloadAt = (o: number, p: number): number => 32 + 64 * (p >> 2) + 4 * o + (p & 3);

/** Rewrites a matrix of N rows of K values of the plain type of `type` (N a multiple of 16)
 *  into the layout of `type`, in place. */
export function interleaveR16(type: GGMLType, data: Uint8Array, K: number, N: number): void {
  const { payload } = layout(type);
  const block = 2 + payload;
  const nb = K / 32;
  const row = nb * block;
  if (N % R16_ROWS !== 0 || K % 32 !== 0 || data.length !== row * N) {
    throw new RangeError(`interleaveR16: ${data.length} bytes are not ${N} rows of ${K} values of ${block}-byte blocks (N a multiple of 16)`);
  }
  const flip = type === GGMLType.Q8_0_R16 ? 0x80 : 0; // Q8_0: s8 q → u8 q + 128
  for (let g = 0; g < N / R16_ROWS; g++) {
    const base = g * R16_ROWS * row;
    const rows = data.slice(base, base + R16_ROWS * row);
    for (let b = 0; b < nb; b++) {
      const dst = base + b * R16_ROWS * block;
      for (let o = 0; o < R16_ROWS; o++) {
        const src = o * row + b * block;
        data[dst + 2 * o] = rows[src]!;
        data[dst + 2 * o + 1] = rows[src + 1]!;
        for (let p = 0; p < payload; p++) data[dst + payloadAt(o, p)] = rows[src + 2 + p]! ^ flip;
      }
    }
  }
}

/** out[outOffset ..) = row o of an interleaved tensor of rows of K values, as ggml dequantizes the plain row. */
export function dequantizeR16Row(type: GGMLType, data: Uint8Array, K: number, o: number, out: Float32Array, outOffset: number): void {
  const { payload } = layout(type);
  const groupBlock = R16_ROWS * (2 + payload);
  const nb = K / 32;
  const group = Math.floor(o / R16_ROWS) * nb * groupBlock;
  const r = o % R16_ROWS;
  for (let b = 0; b < nb; b++) {
    const blk = group + b * groupBlock;
    const d = f16ToF32(data[blk + 2 * r]! | (data[blk + 2 * r + 1]! << 8));
    const at = out.subarray(outOffset + 32 * b, outOffset + 32 * b + 32);
    if (type === GGMLType.Q8_0_R16) {
      for (let j = 0; j < 32; j++) at[j] = d * (data[blk + payloadAt(r, j)]! - 128);
      continue;
    }
    for (let j = 0; j < 16; j++) {
      const byte = data[blk + payloadAt(r, j)]!;
      at[j] = d * ((byte & 15) - 8);
      at[j + 16] = d * ((byte >> 4) - 8);
    }
  }
}

/** The same tensor in its interleaved layout (a copy of its bytes): tests and benchmarks. */
export function interleaved(t: WeightTensor): WeightTensor {
  const type = r16TypeFor(t.type, t.dims);
  if (type === undefined) throw new RangeError(`tensor ${t.name} (type ${t.type}, dims ${t.dims.join('x')}) has no layout interleaved by 16 rows`);
  const data = t.data.slice();
  interleaveR16(type, data, t.dims[0]!, t.dims[1]!);
  return { name: t.name, type, dims: t.dims, data };
}
