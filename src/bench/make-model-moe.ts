// The routed experts of `loom bench make-model`'s MoE shapes (Qwen3-30B-A3B, Qwen3.5-35B-A3B,
// Gemma 4 26B-A4B): the tensors and keys llama.cpp's converter writes for them. Experts are
// 3-D tensors [in, out, experts] in the file's matrix type (llama-quantize's mix: quant-mix.ts),
// the router stays F32 (llama-quantize never quantizes ffn_gate_inp). Router weights are random,
// so a batch's tokens spread over the experts about evenly, as a trained model's do.
import type { StreamEntry } from './gguf-stream.js';
import { entry as kv } from './gguf-stream.js';
import type { Matrix, Vector } from './bench-writers.js';

export interface MoeBenchShape {
  readonly experts: number;
  readonly used: number;
  /** each expert's FFN width */
  readonly expertFfn: number;
  /** Qwen3.5-MoE: one shared expert of this width per layer, behind a sigmoid gate */
  readonly sharedFfn?: number;
  /** Gemma 4: gate and up fused per expert, the router's input scale and per-expert down scales, and the experts' own norms */
  readonly gemma4?: boolean;
}

/** an F32 matrix (the router) */
export type F32Matrix = (name: string, inF: number, outF: number, std: number) => void;

/** Layer `p`'s routed FFN (and shared expert) over a hidden width d. */
export function moeBenchTensors(p: string, d: number, m: MoeBenchShape, matrix: Matrix, vector: Vector, f32Matrix: F32Matrix): void {
  const hidden = 1 / Math.sqrt(d);
  const F = m.expertFfn;
  f32Matrix(`${p}ffn_gate_inp.weight`, d, m.experts, hidden);
  if (m.gemma4) {
    vector(`${p}ffn_gate_inp.scale`, d, 0.1, 1);
    matrix(`${p}ffn_gate_up_exps.weight`, d, 2 * F, 2 * hidden, m.experts);
  } else {
    matrix(`${p}ffn_gate_exps.weight`, d, F, 2 * hidden, m.experts);
    matrix(`${p}ffn_up_exps.weight`, d, F, hidden, m.experts);
  }
  matrix(`${p}ffn_down_exps.weight`, F, d, 1 / Math.sqrt(F), m.experts);
  if (m.gemma4) {
    vector(`${p}ffn_down_exps.scale`, m.experts, 0.1, 1);
    vector(`${p}pre_ffw_norm_2.weight`, d, 0.1, 1);
    vector(`${p}post_ffw_norm_1.weight`, d, 0.1, 1);
    vector(`${p}post_ffw_norm_2.weight`, d, 0.1, 1);
  }
  if (m.sharedFfn !== undefined) {
    const S = m.sharedFfn;
    vector(`${p}ffn_gate_inp_shexp.weight`, d, hidden, 0);
    matrix(`${p}ffn_gate_shexp.weight`, d, S, 2 * hidden);
    matrix(`${p}ffn_up_shexp.weight`, d, S, hidden);
    matrix(`${p}ffn_down_shexp.weight`, S, d, 1 / Math.sqrt(S));
  }
}

/** the expert keys of architecture `a` */
export function moeBenchMetadata(a: string, m: MoeBenchShape): StreamEntry[] {
  return [
    kv.u32(`${a}.expert_count`, m.experts),
    kv.u32(`${a}.expert_used_count`, m.used),
    kv.u32(`${a}.expert_feed_forward_length`, m.expertFfn),
    ...(m.sharedFfn !== undefined ? [kv.u32(`${a}.expert_shared_feed_forward_length`, m.sharedFfn)] : []),
  ];
}

