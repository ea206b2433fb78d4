// What the per-family tensor writers of `loom bench make-model` (make-model-gemma4.ts,
// make-model-gptoss.ts, make-model-moe.ts) share: the part of a bench shape they read and the
// writer callbacks make-model.ts hands them.

/** the part of BenchShape the writers read (gpt-oss: ffn is each expert's width) */
export interface BenchShapeCore {
  readonly hidden: number;
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly ffn: number;
  readonly vocab: number;
}

/** an [in, out] matrix, or [in, out, n] experts when n is given, in the file's matrix type */
export type Matrix = (name: string, inF: number, outF: number, std: number, experts?: number) => void;
/** an F32 vector of N(mean, std²) values */
export type Vector = (name: string, n: number, std: number, mean: number) => void;
