// The weight types, as ONE table (ggml's type_traits): per ggml type id its block geometry,
// and where loom computes with it the activation type it pairs with and its row codecs, or
// where it is one of loom's in-memory layouts the type whose values it rearranges. Every
// other lookup (geometry, row bytes, the types loom runs, a layout's file type) reads a row.
// A row of `n` values of a type takes (n / blockSize) * typeSize bytes.
import {
  dequantizeIQ4_NLBlock, dequantizeQ4_0Block, dequantizeQ4_1Block, dequantizeQ5_0Block, dequantizeQ5_1Block,
  dequantizeQ8_0Block, quantizeIQ4_NLBlock, quantizeQ4_0Block, quantizeQ4_1Block, quantizeQ5_0Block,
  quantizeQ5_1Block, quantizeQ8_0Block,
} from './quant/legacy-quants.js';
import { dequantizeQ4KBlock, dequantizeQ6KBlock, quantizeQ4KBlock, quantizeQ6KBlock } from './quant/k-quants.js';
import {
  dequantizeIQ4XSBlock, dequantizeQ2KBlock, dequantizeQ3KBlock, dequantizeQ5KBlock, quantizeIQ4XSBlock,
  quantizeQ2KBlock, quantizeQ3KBlock, quantizeQ5KBlock,
} from './quant/k-quants-extra.js';
import { dequantizeMXFP4Block, quantizeMXFP4Block } from './quant/mxfp4.js';
import { dequantizeBF16, dequantizeF16, dequantizeF32, quantizeBF16, quantizeF16, quantizeF32 } from './quant/floats.js';

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
  /** loom's own in-memory layouts, never in a file: Q4_0 and Q8_0 interleaved by 16 rows (quant/r16.ts), rows of the table with a `layout` */
  Q4_0_R16 = 128,
  Q8_0_R16 = 129,
}

export interface BlockGeometry {
  /** values per block */
  readonly blockSize: number;
  /** bytes per block */
  readonly typeSize: number;
}

/** The activation types a weight type pairs with: x is rounded to one of them before a dot
 *  product with a row of the weight (quant/q8-activations.ts). */
export type ActivationType = GGMLType.F32 | GGMLType.F16 | GGMLType.BF16 | GGMLType.Q8_0 | GGMLType.Q8_K;

/** What loom computes with a file type (dequantize, quantize, matmul). */
export interface ComputeRow {
  /** the type x is rounded to before a dot product with this type (ggml-cpu's vec_dot_type;
   *  Q4_1/Q5_1 pair with Q8_1 there, whose values are Q8_0's: its extra f16(d·Σq) term only
   *  rounds the bias part of the dot, a ~1e-3 relative error on that part, under the tolerances) */
  readonly activation: ActivationType;
  /** out[y..y+n) = the n values (whole blocks) stored at src[p..) */
  readonly dequantize: (src: Uint8Array, p: number, n: number, out: Float32Array, y: number) => void;
  /** x[xo..xo+n) (whole blocks) as the type's bytes, into dst[o..) */
  readonly quantize: (x: Float32Array, xo: number, n: number, dst: Uint8Array, o: number) => void;
}

/** One of loom's in-memory layouts: another type's values rearranged, never in a file. */
export interface LayoutRow {
  /** the file type whose values it holds */
  readonly of: GGMLType;
  /** rows interleaved into one group */
  readonly rows: number;
  /** quant bytes of one row's block (the block less its f16 scale) */
  readonly payload: number;
}

/** A row of the table. */
export interface WeightType extends BlockGeometry {
  readonly type: GGMLType;
  readonly name: string;
  /** present for the types loom computes with */
  readonly compute?: ComputeRow;
  /** present for loom's in-memory layouts */
  readonly layout?: LayoutRow;
}

type BlockCodec = (src: Uint8Array, p: number, out: Float32Array, y: number) => void;
type BlockQuantizer = (x: Float32Array, xo: number, dst: Uint8Array, o: number) => void;

/** a type of known size that loom does not compute with (a GGUF reader can still lay out a file holding it) */
const sized = (type: GGMLType, blockSize: number, typeSize: number): WeightType => ({ type, name: GGMLType[type], blockSize, typeSize });

/** a float type: one value per block, row codecs of its own */
const float = (type: GGMLType, typeSize: number, activation: ActivationType, dequantize: ComputeRow['dequantize'], quantize: ComputeRow['quantize']): WeightType => ({
  ...sized(type, 1, typeSize),
  compute: { activation, dequantize, quantize },
});

/** a block type: its rows are runs of blocks, each through the block codecs */
function block(type: GGMLType, blockSize: number, typeSize: number, activation: ActivationType, dequantizeBlock: BlockCodec, quantizeBlock: BlockQuantizer): WeightType {
  return {
    ...sized(type, blockSize, typeSize),
    compute: {
      activation,
      dequantize: (src, p, n, out, y) => {
        for (let b = 0; b < n / blockSize; b++) dequantizeBlock(src, p + typeSize * b, out, y + blockSize * b);
      },
      quantize: (x, xo, n, dst, o) => {
        for (let b = 0; b < n / blockSize; b++) quantizeBlock(x, xo + blockSize * b, dst, o + typeSize * b);
      },
    },
  };
}

/** a layout interleaving `rows` rows of the file type `of` (its block geometry) */
const layout = (type: GGMLType, of: GGMLType, rows: number, payload: number, blockSize: number, typeSize: number): WeightType => ({
  ...sized(type, blockSize, typeSize),
  layout: { of, rows, payload },
});

/** THE table: one row per type. The types loom computes with come first, in the order its
 *  refusal of another type lists them. */
const ROWS: readonly WeightType[] = [
  float(GGMLType.F32, 4, GGMLType.F32, dequantizeF32, quantizeF32),
  float(GGMLType.F16, 2, GGMLType.F16, dequantizeF16, quantizeF16),
  float(GGMLType.BF16, 2, GGMLType.BF16, dequantizeBF16, quantizeBF16),
  block(GGMLType.Q8_0, 32, 34, GGMLType.Q8_0, dequantizeQ8_0Block, quantizeQ8_0Block),
  block(GGMLType.Q4_0, 32, 18, GGMLType.Q8_0, dequantizeQ4_0Block, quantizeQ4_0Block),
  block(GGMLType.Q4_1, 32, 20, GGMLType.Q8_0, dequantizeQ4_1Block, quantizeQ4_1Block),
  block(GGMLType.Q5_0, 32, 22, GGMLType.Q8_0, dequantizeQ5_0Block, quantizeQ5_0Block),
  block(GGMLType.Q5_1, 32, 24, GGMLType.Q8_0, dequantizeQ5_1Block, quantizeQ5_1Block),
  block(GGMLType.IQ4_NL, 32, 18, GGMLType.Q8_0, dequantizeIQ4_NLBlock, quantizeIQ4_NLBlock),
  block(GGMLType.Q2_K, 256, 84, GGMLType.Q8_K, dequantizeQ2KBlock, quantizeQ2KBlock),
  block(GGMLType.Q3_K, 256, 110, GGMLType.Q8_K, dequantizeQ3KBlock, quantizeQ3KBlock),
  block(GGMLType.Q4_K, 256, 144, GGMLType.Q8_K, dequantizeQ4KBlock, quantizeQ4KBlock),
  block(GGMLType.Q5_K, 256, 176, GGMLType.Q8_K, dequantizeQ5KBlock, quantizeQ5KBlock),
  block(GGMLType.Q6_K, 256, 210, GGMLType.Q8_K, dequantizeQ6KBlock, quantizeQ6KBlock),
  block(GGMLType.IQ4_XS, 256, 136, GGMLType.Q8_K, dequantizeIQ4XSBlock, quantizeIQ4XSBlock),
  block(GGMLType.MXFP4, 32, 17, GGMLType.Q8_0, dequantizeMXFP4Block, quantizeMXFP4Block),
  sized(GGMLType.F64, 1, 8),
  sized(GGMLType.I8, 1, 1),
  sized(GGMLType.I16, 1, 2),
  sized(GGMLType.I32, 1, 4),
  sized(GGMLType.I64, 1, 8),
  sized(GGMLType.Q8_1, 32, 36),
  sized(GGMLType.Q8_K, 256, 292),
  sized(GGMLType.IQ2_XXS, 256, 66),
  sized(GGMLType.IQ2_XS, 256, 74),
  sized(GGMLType.IQ3_XXS, 256, 98),
  sized(GGMLType.IQ1_S, 256, 50),
  sized(GGMLType.IQ3_S, 256, 110),
  sized(GGMLType.IQ2_S, 256, 82),
  sized(GGMLType.IQ1_M, 256, 56),
  sized(GGMLType.TQ1_0, 256, 54),
  sized(GGMLType.TQ2_0, 256, 66),
  layout(GGMLType.Q4_0_R16, GGMLType.Q4_0, 16, 16, 32, 18),
  layout(GGMLType.Q8_0_R16, GGMLType.Q8_0, 16, 32, 32, 34),
];

export const WEIGHT_TYPES: ReadonlyMap<GGMLType, WeightType> = new Map(ROWS.map((r) => [r.type, r]));

/** The row of a type, or undefined for a type of unknown size. */
export function weightType(type: GGMLType): WeightType | undefined {
  return WEIGHT_TYPES.get(type);
}

export function typeName(type: GGMLType): string {
  return WEIGHT_TYPES.get(type)?.name ?? `type ${type}`;
}

export function blockGeometry(type: GGMLType): BlockGeometry | undefined {
  return WEIGHT_TYPES.get(type);
}

/** Bytes taken by `n` values of `type`; undefined if the type is unknown or n is not whole blocks. */
export function rowBytes(type: GGMLType, n: number): number | undefined {
  const g = WEIGHT_TYPES.get(type);
  if (!g || n % g.blockSize !== 0) return undefined;
  return (n / g.blockSize) * g.typeSize;
}

/** The file types loom can compute with (dequantize, matmul), in the table's order. */
export function computeTypes(): GGMLType[] {
  return ROWS.filter((r) => r.compute).map((r) => r.type);
}

/** The file type whose values a tensor of `type` holds: the type itself, or what a layout rearranges. */
export function fileType(type: GGMLType): GGMLType {
  return WEIGHT_TYPES.get(type)?.layout?.of ?? type;
}
