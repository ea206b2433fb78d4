// The block weight types loom computes with, as one table (ggml's type_traits): per type
// its block functions and the activation type llama.cpp rounds x to before a dot product
// with it (ggml-cpu's vec_dot_type). Geometry (values and bytes per block) is in ggml-types.ts.
import { GGMLType } from '../weight-types.js';
import {
  dequantizeIQ4_NLBlock, dequantizeQ4_0Block, dequantizeQ4_1Block, dequantizeQ5_0Block, dequantizeQ5_1Block,
  dequantizeQ8_0Block, quantizeIQ4_NLBlock, quantizeQ4_0Block, quantizeQ4_1Block, quantizeQ5_0Block,
  quantizeQ5_1Block, quantizeQ8_0Block,
} from './legacy-quants.js';
import { dequantizeQ4KBlock, dequantizeQ6KBlock, quantizeQ4KBlock, quantizeQ6KBlock } from './k-quants.js';
import {
  dequantizeIQ4XSBlock, dequantizeQ2KBlock, dequantizeQ3KBlock, dequantizeQ5KBlock, quantizeIQ4XSBlock,
  quantizeQ2KBlock, quantizeQ3KBlock, quantizeQ5KBlock,
} from './k-quants-extra.js';

/** Q8_0: 8-bit blocks of 32 (Q8_1 rounds the same values); Q8_K: 8-bit blocks of 256 */
export type BlockActivation = 'Q8_0' | 'Q8_K';

export interface BlockType {
  /** out[y..y+blockSize) = the block at src[p..) */
  readonly dequantize: (src: Uint8Array, p: number, out: Float32Array, y: number) => void;
  /** the block of x[xo..xo+blockSize) into dst[o..) */
  readonly quantize: (x: Float32Array, xo: number, dst: Uint8Array, o: number) => void;
  readonly activation: BlockActivation;
}

export const BLOCK_TYPES: ReadonlyMap<GGMLType, BlockType> = new Map<GGMLType, BlockType>([
  [GGMLType.Q8_0, { dequantize: dequantizeQ8_0Block, quantize: quantizeQ8_0Block, activation: 'Q8_0' }],
  [GGMLType.Q4_0, { dequantize: dequantizeQ4_0Block, quantize: quantizeQ4_0Block, activation: 'Q8_0' }],
  // Q4_1/Q5_1 pair with Q8_1, whose values are Q8_0's; its extra f16(d·Σq) term only rounds
  // the bias part of the dot (a ~1e-3 relative error on that part, under the tolerances)
  [GGMLType.Q4_1, { dequantize: dequantizeQ4_1Block, quantize: quantizeQ4_1Block, activation: 'Q8_0' }],
  [GGMLType.Q5_0, { dequantize: dequantizeQ5_0Block, quantize: quantizeQ5_0Block, activation: 'Q8_0' }],
  [GGMLType.Q5_1, { dequantize: dequantizeQ5_1Block, quantize: quantizeQ5_1Block, activation: 'Q8_0' }],
  [GGMLType.IQ4_NL, { dequantize: dequantizeIQ4_NLBlock, quantize: quantizeIQ4_NLBlock, activation: 'Q8_0' }],
  [GGMLType.Q2_K, { dequantize: dequantizeQ2KBlock, quantize: quantizeQ2KBlock, activation: 'Q8_K' }],
  [GGMLType.Q3_K, { dequantize: dequantizeQ3KBlock, quantize: quantizeQ3KBlock, activation: 'Q8_K' }],
  [GGMLType.Q4_K, { dequantize: dequantizeQ4KBlock, quantize: quantizeQ4KBlock, activation: 'Q8_K' }],
  [GGMLType.Q5_K, { dequantize: dequantizeQ5KBlock, quantize: quantizeQ5KBlock, activation: 'Q8_K' }],
  [GGMLType.Q6_K, { dequantize: dequantizeQ6KBlock, quantize: quantizeQ6KBlock, activation: 'Q8_K' }],
  [GGMLType.IQ4_XS, { dequantize: dequantizeIQ4XSBlock, quantize: quantizeIQ4XSBlock, activation: 'Q8_K' }],
]);
