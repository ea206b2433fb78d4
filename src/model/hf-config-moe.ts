// A Hugging Face Qwen3MoeConfig's routed experts → MoeParams: num_experts, num_experts_per_tok,
// moe_intermediate_size and norm_topk_prob (transformers' defaults: 128, 8, 768, false). Every
// layer must be sparse (decoder_sparse_step 1, no mlp_only_layers), as in the released models.
import { UnsupportedModelError } from '../errors.js';
import type { Fields } from './hf-fields.js';
import { MAX_EXPERTS } from './gguf-config-moe.js';
import type { MoeParams } from './weights.js';

export function hfMoeParams(c: Fields): MoeParams {
  const numExperts = c.count('num_experts', () => 128);
  const numExpertsUsed = c.count('num_experts_per_tok', () => 8);
  if (numExperts > MAX_EXPERTS) throw c.bad('num_experts', `at most ${MAX_EXPERTS}`);
  if (numExpertsUsed > numExperts) throw c.bad('num_experts_per_tok', `at most num_experts (${numExperts})`);
  const dense = c.raw('mlp_only_layers');
  if (Array.isArray(dense) && dense.length > 0) {
    throw new UnsupportedModelError(c.file, `mlp_only_layers ${JSON.stringify(dense)} (dense layers among the sparse ones) is not supported`);
  }
  const step = c.count('decoder_sparse_step', () => 1);
  if (step !== 1) throw new UnsupportedModelError(c.file, `decoder_sparse_step ${step} (a sparse layer every ${step}) is not supported; loom runs experts in every layer`);
  return { numExperts, numExpertsUsed, expertFfnSize: c.count('moe_intermediate_size', () => 768), normTopK: c.bool('norm_topk_prob', false) };
}
