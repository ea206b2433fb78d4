// What gpt-oss's experts do differently from the Qwen families' (llama.cpp's build_moe_ffn with
// LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT and LLM_FFN_SWIGLU_OAI_MOE): the top k experts
// are chosen on the raw (biased) router logits and their weights are a softmax over those k
// logits alone; the experts' gated activation is OpenAI's clamped SwiGLU.
import type { MoeParams } from '../weights.js';
import type { Routing } from './moe.js';
import { topKOfRow } from './top-k.js';

// the clamped SwiGLU lives with the experts' kernel (kernels/reference-moe.ts)
export { swigluOai, SWIGLU_OAI_ALPHA, SWIGLU_OAI_LIMIT } from '../../kernels/reference-moe.js';

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
