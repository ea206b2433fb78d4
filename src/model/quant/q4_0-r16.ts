// Q4_0 interleaved by 16 rows (GGMLType.Q4_0_R16), the layout loom gives a Q4_0 matrix at
// load time where the native core has AVX-512 VNNI (native/q4_0-r16.h): 16 rows are read as
// one, so one kernel serves every row count. The tensor keeps Q4_0's size: group g (rows
// 16g..16g+15) starts where row 16g did; each of its K/32 blocks takes 288 bytes, the 16
// rows' f16 scales, then 4 × 64 bytes where byte 32 + 64i + 4o + t is byte 4i + t of row o's
// 16 nibble bytes. This file is the reference of that layout.
import { GGMLType } from '../ggml-types.js';
import { f16ToF32 } from '../half.js';
import type { WeightTensor } from '../weights.js';

export const R16_ROWS = 16;
const BLOCK = 18; // one Q4_0 block: f16 d, 16 nibble bytes
const GROUP_BLOCK = R16_ROWS * BLOCK;

/** Whether a tensor can take the R16 layout: a Q4_0 matrix of whole groups of 16 rows. */
export function canInterleaveQ4_0(type: GGMLType, dims: readonly number[]): boolean {
  return type === GGMLType.Q4_0 && dims.length === 2 && dims[1]! % R16_ROWS === 0;
}

/** Rewrites a Q4_0 matrix of N rows of K values (N a multiple of 16) into the R16 layout, in place. */
export function interleaveQ4_0R16(data: Uint8Array, K: number, N: number): void {
  const nb = K / 32;
  const row = nb * BLOCK;
  if (N % R16_ROWS !== 0 || K % 32 !== 0 || data.length !== row * N) {
    throw new RangeError(`interleaveQ4_0R16: ${data.length} bytes are not ${N} Q4_0 rows of ${K} (N a multiple of 16)`);
  }
  for (let g = 0; g < N / R16_ROWS; g++) {
    const base = g * R16_ROWS * row;
    const rows = data.slice(base, base + R16_ROWS * row);
    for (let b = 0; b < nb; b++) {
      const dst = base + b * GROUP_BLOCK;
      for (let o = 0; o < R16_ROWS; o++) {
        const src = o * row + b * BLOCK;
        data[dst + 2 * o] = rows[src]!;
        data[dst + 2 * o + 1] = rows[src + 1]!;
        for (let j = 0; j < 16; j++) data[dst + 32 + 64 * (j >> 2) + 4 * o + (j & 3)] = rows[src + 2 + j]!;
      }
    }
  }
}

/** out[outOffset ..) = row o of an R16 tensor of rows of K values, as ggml dequantizes the Q4_0 row. */
export function dequantizeQ4_0R16Row(data: Uint8Array, K: number, o: number, out: Float32Array, outOffset: number): void {
  const nb = K / 32;
  const group = Math.floor(o / R16_ROWS) * R16_ROWS * nb * BLOCK;
  const r = o % R16_ROWS;
  for (let b = 0; b < nb; b++) {
    const blk = group + b * GROUP_BLOCK;
    const d = f16ToF32(data[blk + 2 * r]! | (data[blk + 2 * r + 1]! << 8));
    for (let j = 0; j < 16; j++) {
      const byte = data[blk + 32 + 64 * (j >> 2) + 4 * r + (j & 3)]!;
      out[outOffset + 32 * b + j] = d * ((byte & 15) - 8);
      out[outOffset + 32 * b + j + 16] = d * ((byte >> 4) - 8);
    }
  }
}

/** The same tensor in the R16 layout (a copy of its bytes): tests and benchmarks. */
export function interleavedQ4_0(t: WeightTensor): WeightTensor {
  const data = t.data.slice();
  interleaveQ4_0R16(data, t.dims[0]!, t.dims[1]!);
  return { name: t.name, type: GGMLType.Q4_0_R16, dims: t.dims, data };
}
