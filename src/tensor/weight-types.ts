// ggml tensor types as numbered in the GGUF format, with their block geometry.
// A row of `n` values of a block type takes (n / blockSize) * typeSize bytes.

export enum GGMLType {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  /** loom's own in-memory layouts, never in a file: Q4_0 and Q8_0 interleaved by 16 rows (quant/r16.ts) */
  Q4_0_R16 = 128,
  Q8_0_R16 = 129,
}

export interface BlockGeometry {
  /** values per block */
  readonly blockSize: number;
  /** bytes per block */
  readonly typeSize: number;
}

/** Geometry of every type whose size we know (even ones we cannot compute with), so a
 *  GGUF reader can lay out a file that holds tensors we never touch. */
const GEOMETRY: Partial<Record<GGMLType, BlockGeometry>> = {
  [GGMLType.F32]: { blockSize: 1, typeSize: 4 },
  [GGMLType.F16]: { blockSize: 1, typeSize: 2 },
  [GGMLType.BF16]: { blockSize: 1, typeSize: 2 },
  [GGMLType.F64]: { blockSize: 1, typeSize: 8 },
  [GGMLType.I8]: { blockSize: 1, typeSize: 1 },
  [GGMLType.I16]: { blockSize: 1, typeSize: 2 },
  [GGMLType.I32]: { blockSize: 1, typeSize: 4 },
  [GGMLType.I64]: { blockSize: 1, typeSize: 8 },
  [GGMLType.Q4_0]: { blockSize: 32, typeSize: 18 },
  [GGMLType.Q4_1]: { blockSize: 32, typeSize: 20 },
  [GGMLType.Q5_0]: { blockSize: 32, typeSize: 22 },
  [GGMLType.Q5_1]: { blockSize: 32, typeSize: 24 },
  [GGMLType.Q8_0]: { blockSize: 32, typeSize: 34 },
  [GGMLType.Q8_1]: { blockSize: 32, typeSize: 36 },
  [GGMLType.Q2_K]: { blockSize: 256, typeSize: 84 },
  [GGMLType.Q3_K]: { blockSize: 256, typeSize: 110 },
  [GGMLType.Q4_K]: { blockSize: 256, typeSize: 144 },
  [GGMLType.Q5_K]: { blockSize: 256, typeSize: 176 },
  [GGMLType.Q6_K]: { blockSize: 256, typeSize: 210 },
  [GGMLType.Q8_K]: { blockSize: 256, typeSize: 292 },
  [GGMLType.IQ2_XXS]: { blockSize: 256, typeSize: 66 },
  [GGMLType.IQ2_XS]: { blockSize: 256, typeSize: 74 },
  [GGMLType.IQ3_XXS]: { blockSize: 256, typeSize: 98 },
  [GGMLType.IQ1_S]: { blockSize: 256, typeSize: 50 },
  [GGMLType.IQ4_NL]: { blockSize: 32, typeSize: 18 },
  [GGMLType.IQ3_S]: { blockSize: 256, typeSize: 110 },
  [GGMLType.IQ2_S]: { blockSize: 256, typeSize: 82 },
  [GGMLType.IQ4_XS]: { blockSize: 256, typeSize: 136 },
  [GGMLType.IQ1_M]: { blockSize: 256, typeSize: 56 },
  [GGMLType.TQ1_0]: { blockSize: 256, typeSize: 54 },
  [GGMLType.TQ2_0]: { blockSize: 256, typeSize: 66 },
  [GGMLType.MXFP4]: { blockSize: 32, typeSize: 17 },
  [GGMLType.Q4_0_R16]: { blockSize: 32, typeSize: 18 },
  [GGMLType.Q8_0_R16]: { blockSize: 32, typeSize: 34 },
};

/** loom's in-memory layouts and the file type whose values each holds, rearranged */
const LAYOUTS: ReadonlyMap<GGMLType, GGMLType> = new Map([
  [GGMLType.Q4_0_R16, GGMLType.Q4_0],
  [GGMLType.Q8_0_R16, GGMLType.Q8_0],
]);

/** The file type whose values a tensor of `type` holds: the type itself, or what a layout rearranges. */
export function fileType(type: GGMLType): GGMLType {
  return LAYOUTS.get(type) ?? type;
}

/** File types loom can compute with (dequantize, matmul). */
export const COMPUTE_TYPES: ReadonlySet<GGMLType> = new Set([
  GGMLType.F32,
  GGMLType.F16,
  GGMLType.BF16,
  GGMLType.Q8_0,
  GGMLType.Q4_0,
  GGMLType.Q4_1,
  GGMLType.Q5_0,
  GGMLType.Q5_1,
  GGMLType.IQ4_NL,
  GGMLType.Q2_K,
  GGMLType.Q3_K,
  GGMLType.Q4_K,
  GGMLType.Q5_K,
  GGMLType.Q6_K,
  GGMLType.IQ4_XS,
]);

export function typeName(type: GGMLType): string {
  return GGMLType[type] ?? `type ${type}`;
}

export function blockGeometry(type: GGMLType): BlockGeometry | undefined {
  return GEOMETRY[type];
}

/** Bytes taken by `n` values of `type`; undefined if the type is unknown or n is not whole blocks. */
export function rowBytes(type: GGMLType, n: number): number | undefined {
  const g = GEOMETRY[type];
  if (!g || n % g.blockSize !== 0) return undefined;
  return (n / g.blockSize) * g.typeSize;
}
