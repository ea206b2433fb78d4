// Hugging Face MoE config.json files (Qwen3MoeForCausalLM, Qwen3_5MoeForCausalLM): their experts, and the layouts loom refuses.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UnsupportedModelError } from '../../src/errors.js';
import { parseHFConfig } from '../../src/model/hf-config.js';
import { hfLocation } from '../../src/model/hf-weights.js';

/** Qwen3-30B-A3B's config.json, as published */
const QWEN3_30B_A3B = {
  architectures: ['Qwen3MoeForCausalLM'], attention_bias: false, attention_dropout: 0.0, bos_token_id: 151643, decoder_sparse_step: 1,
  eos_token_id: 151645, head_dim: 128, hidden_act: 'silu', hidden_size: 2048, initializer_range: 0.02, intermediate_size: 6144,
  max_position_embeddings: 40960, max_window_layers: 48, mlp_only_layers: [], model_type: 'qwen3_moe', moe_intermediate_size: 768,
  norm_topk_prob: true, num_attention_heads: 32, num_experts: 128, num_experts_per_tok: 8, num_hidden_layers: 48, num_key_value_heads: 4,
  output_router_logits: false, rms_norm_eps: 1e-6, rope_scaling: null, rope_theta: 1000000.0, router_aux_loss_coef: 0.001,
  sliding_window: null, tie_word_embeddings: false, torch_dtype: 'bfloat16', use_cache: true, use_sliding_window: false, vocab_size: 151936,
};

describe('HF Qwen3-MoE config', () => {
  it("reads Qwen3-30B-A3B's experts", () => {
    const c = parseHFConfig('config.json', QWEN3_30B_A3B);
    assert.equal(c.arch, 'qwen3moe');
    assert.equal(c.ropeStyle, 'neox');
    assert.equal(c.headDim, 128);
    assert.deepEqual(c.moe, { numExperts: 128, numExpertsUsed: 8, expertFfnSize: 768, normTopK: true });
    const { model_type: _, ...byArchitecture } = QWEN3_30B_A3B;
    assert.deepEqual(parseHFConfig('config.json', byArchitecture).moe, c.moe);
    const { architectures: __, ...byModelType } = QWEN3_30B_A3B;
    assert.equal(parseHFConfig('config.json', byModelType).arch, 'qwen3moe');
    // transformers' default: the chosen experts' probabilities are not renormalized
    const { norm_topk_prob: ___, ...noNorm } = QWEN3_30B_A3B;
    assert.equal(parseHFConfig('config.json', noNorm).moe?.normTopK, false);
  });

  it('refuses dense layers among the sparse ones and too many chosen experts', () => {
    assert.throws(() => parseHFConfig('config.json', { ...QWEN3_30B_A3B, mlp_only_layers: [0] }), (e: unknown) => e instanceof UnsupportedModelError && /mlp_only_layers/.test(e.message));
    assert.throws(() => parseHFConfig('config.json', { ...QWEN3_30B_A3B, decoder_sparse_step: 2 }), (e: unknown) => e instanceof UnsupportedModelError && /decoder_sparse_step 2/.test(e.message));
    assert.throws(() => parseHFConfig('config.json', { ...QWEN3_30B_A3B, num_experts_per_tok: 200 }), /num_experts_per_tok/);
  });

  it('finds the router and each expert matrix by their HF names', () => {
    // a base model's name without `model.` too (sentence-transformers saves Qwen3Model so); the first found wins
    assert.deepEqual(hfLocation('qwen3moe', 48, 'blk.3.ffn_gate_inp.weight')?.names, ['model.layers.3.mlp.gate.weight', 'layers.3.mlp.gate.weight']);
    assert.deepEqual(hfLocation('qwen3moe', 48, 'blk.3.ffn_down_exps.17.weight')?.names, ['model.layers.3.mlp.experts.17.down_proj.weight']);
    assert.equal(hfLocation('qwen3moe', 48, 'blk.48.ffn_up_exps.0.weight'), undefined);
    assert.equal(hfLocation('qwen3', 48, 'blk.3.ffn_up_exps.0.weight'), undefined);
  });
});

/** a Qwen3_5MoeForCausalLM text config in the shape of Qwen3.5-35B-A3B's (values from its model card, not a copy of the file) */
const QWEN35_MOE = {
  architectures: ['Qwen3_5MoeForCausalLM'], model_type: 'qwen3_5_moe_text', vocab_size: 248320, hidden_size: 2048, num_hidden_layers: 40,
  num_attention_heads: 16, num_key_value_heads: 2, head_dim: 256, max_position_embeddings: 262144, rms_norm_eps: 1e-6, hidden_act: 'silu',
  attn_output_gate: true, tie_word_embeddings: false, full_attention_interval: 4, linear_conv_kernel_dim: 4, linear_key_head_dim: 128,
  linear_value_head_dim: 128, linear_num_key_heads: 16, linear_num_value_heads: 32, num_experts: 256, num_experts_per_tok: 8,
  moe_intermediate_size: 512, shared_expert_intermediate_size: 512,
  rope_parameters: { rope_type: 'default', rope_theta: 10000000, partial_rotary_factor: 0.25, mrope_section: [11, 11, 10], mrope_interleaved: true },
};

describe('HF Qwen3.5-MoE config', () => {
  it('reads the experts and the shared expert; the chosen experts renormalized (llama.cpp qwen35moe)', () => {
    const c = parseHFConfig('config.json', QWEN35_MOE);
    assert.equal(c.arch, 'qwen35moe');
    assert.deepEqual(c.moe, { numExperts: 256, numExpertsUsed: 8, expertFfnSize: 512, normTopK: true, sharedFfnSize: 512 });
    assert.equal(c.linearAttention?.layers.filter((x) => !x).length, 10);
    const { architectures: _, ...byModelType } = QWEN35_MOE;
    assert.equal(parseHFConfig('config.json', byModelType).arch, 'qwen35moe');
  });

  it('finds the router, the 3-D experts (or one matrix per expert), the shared expert and its gate', () => {
    // Qwen3_5MoeForConditionalGeneration's names (model.language_model.*) follow each CausalLM one
    const all = (name: string) => hfLocation('qwen35moe', 40, name)?.names;
    const at = (name: string) => all(name)?.filter((n) => !n.startsWith('model.language_model.'));
    assert.deepEqual(all('blk.3.ffn_gate_inp.weight'), ['model.layers.3.mlp.gate.weight', 'model.language_model.layers.3.mlp.gate.weight']);
    assert.deepEqual(at('blk.3.ffn_gate_inp.weight'), ['model.layers.3.mlp.gate.weight']);
    assert.deepEqual(at('blk.3.ffn_gate_up_exps.weight'), ['model.layers.3.mlp.experts.gate_up_proj', 'model.layers.3.mlp.experts.gate_up_proj.weight']);
    assert.deepEqual(at('blk.3.ffn_down_exps.weight'), ['model.layers.3.mlp.experts.down_proj', 'model.layers.3.mlp.experts.down_proj.weight']);
    assert.deepEqual(at('blk.3.ffn_up_exps.7.weight'), ['model.layers.3.mlp.experts.7.up_proj.weight']);
    assert.deepEqual(at('blk.3.ffn_gate_inp_shexp.weight'), ['model.layers.3.mlp.shared_expert_gate.weight']);
    assert.deepEqual(at('blk.3.ffn_down_shexp.weight'), ['model.layers.3.mlp.shared_expert.down_proj.weight']);
    assert.equal(at('blk.40.ffn_gate_inp.weight'), undefined, 'the MTP block (mtp.*) is not read');
  });
});
