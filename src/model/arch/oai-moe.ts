// What gpt-oss's experts do differently from the Qwen families' (llama.cpp's build_moe_ffn with
// LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT and LLM_FFN_SWIGLU_OAI_MOE): the top k experts
// are chosen on the raw (biased) router logits and their weights are a softmax over those k
// logits alone; the experts' gated activation is OpenAI's clamped SwiGLU.
import type { MoeParams } from '../weights.js';
import type { Routing } from './moe.js';
import { topKOfRow } from './top-k.js';

/** ggml_swiglu_oai's constants as llama.cpp's openai-moe graph passes them */
export const SWIGLU_OAI_ALPHA = 1.702;
export const SWIGLU_OAI_LIMIT = 7.0;

/**
 * out[i] = x / (1 + e^(−α·x)) · (y + 1) with x = min(gate[i], limit), y = clamp(up[i], −limit,
 * limit), in f32 step by step as ggml_compute_forward_swiglu_oai_f32. out may alias gate.
 */
export function swigluOai(out: Float32Array, gate: Float32Array, up: Float32Array, n: number, alpha = SWIGLU_OAI_ALPHA, limit = SWIGLU_OAI_LIMIT): void {
  const fr = Math.fround;
  const a = fr(alpha), l = fr(limit);
  for (let i = 0; i < n; i++) {
    const x = Math.min(gate[i]!, l);
    const y = Math.min(Math.max(up[i]!, -l), l);
    const glu = fr(x / fr(1 + fr(Math.exp(fr(a * -x)))));
    out[i] = glu * fr(y + 1);
  }
}

/**
 * Top-k over T rows of router logits [T, numExperts] (argsort top-k: the lowest id first among
 * equals), then per token a softmax over its k chosen logits (ggml_soft_max: e^(x − max) in
 * f32, summed in f64, scaled by f32(1 / sum)). Returns the smallest routing margin of the rows:
 * the gap between the k-th and (k+1)-th logit (Infinity when k = numExperts).
 */
export function routeTopKSoftmax(logits: Float32Array, T: number, p: MoeParams, out: Routing): number {
  const { numExperts: E, numExpertsUsed: k } = p;
  const taken = new Uint8Array(E);
  let minGap = Infinity;
  for (let t = 0; t < T; t++) {
    const row = logits.subarray(t * E, (t + 1) * E);
    const ids = out.experts.subarray(t * k, (t + 1) * k);
    const w = out.weights.subarray(t * k, (t + 1) * k);
    const next = topKOfRow(row, ids, w, taken);
    if (next >= 0) minGap = Math.min(minGap, row[ids[k - 1]!]! - row[next]!);
    const max = w[0]!; // the first chosen is the largest
    let sum = 0;
    for (let j = 0; j < k; j++) {
      w[j] = Math.exp(w[j]! - max);
      sum += w[j]!;
    }
    const scale = Math.fround(1 / sum);
    for (let j = 0; j < k; j++) w[j] = w[j]! * scale;
  }
  return minGap;
}
