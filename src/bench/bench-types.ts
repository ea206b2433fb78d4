// The weight types a bench model is made in (`loom bench make-model --type`) and the GGML type
// each of its matrices takes: plain types throughout, or llama-quantize's mixes (quant-mix.ts).
import { GGMLType } from '../tensor/weight-types.js';
import { mixType } from './quant-mix.js';
import type { AttnVPosition } from './quant-mix.js';

export const BENCH_TYPES = ['q8_0', 'q4_k', 'q4_k_m', 'q5_k_m', 'f16', 'q4_0', 'mxfp4_moe'] as const;
export type BenchWeightType = (typeof BENCH_TYPES)[number];

/** how random weights are made: Gaussians quantized (slow in TypeScript), or random blocks drawn directly */
export const BENCH_WEIGHTS = ['quantized', 'blocks'] as const;
export type BenchWeights = (typeof BENCH_WEIGHTS)[number];

/** blocks where a whole-size file is the point and quantizing would take hours (gpt-oss-20b's 12 GB of MXFP4) */
export function defaultBenchWeights(type: BenchWeightType): BenchWeights {
  return type === 'mxfp4_moe' ? 'blocks' : 'quantized';
}

/** llama_ftype: MOSTLY_Q8_0, MOSTLY_Q4_K_S, MOSTLY_Q4_K_M, MOSTLY_Q5_K_M, MOSTLY_F16, MOSTLY_Q4_0, MOSTLY_MXFP4_MOE */
export const BENCH_FILE_TYPE: Record<BenchWeightType, number> = { q8_0: 7, q4_k: 14, q4_k_m: 15, q5_k_m: 17, f16: 1, q4_0: 2, mxfp4_moe: 38 };

/** what, beside the shape, decides a bench file's bytes */
export interface BenchWeightOptions {
  readonly type: BenchWeightType;
  readonly seed: number;
  /** default: defaultBenchWeights(type) */
  readonly weights?: BenchWeights;
}

/** The type matrix `name` (rows of `rowLength` values, bench models tie output to token_embd) is stored in. */
export function matrixType(type: BenchWeightType, name: string, rowLength: number, layers: number, attnV?: AttnVPosition): GGMLType {
  switch (type) {
    case 'q8_0': return GGMLType.Q8_0;
    case 'f16': return GGMLType.F16;
    case 'q4_k': return rowLength % 256 !== 0 ? GGMLType.Q8_0 : GGMLType.Q4_K;
    case 'q4_0': return GGMLType.Q4_0;
    // llama-quantize's MXFP4_MOE: every 2-D matrix Q8_0 (the experts' 3-D tensors MXFP4: expertType)
    case 'mxfp4_moe': return GGMLType.Q8_0;
    default: return mixType(type, name, rowLength, layers, true, attnV);
  }
}
