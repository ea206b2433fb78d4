// NomicBertModel folders (nomic-embed-text v1/v1.5) as llama.cpp's converter reads them
// (conversion/bert.py NomicBertModel): GPT-2-style config names (n_embd, n_head, n_layer,
// n_inner), post-norm layers without biases but the norms', RoPE over every dim
// (rotary_emb_base), a SwiGLU FFN (fc11 up, fc12 gate, fc2 down); the context is the trained
// 2048 where the config says n_positions 8192.
import { UnsupportedModelError } from '../errors.js';
import type { Fields } from './hf-fields.js';
import type { ModelConfig } from './weights.js';

export function nomicBertConfig(c: Fields): ModelConfig {
  const check = (key: string, want: unknown, what: string): void => {
    const v = c.raw(key);
    if (v !== undefined && v !== want) throw new UnsupportedModelError(c.file, `${key} ${JSON.stringify(v)} is not supported (${what})`);
  };
  check('activation_function', 'swiglu', 'nomic-bert runs SwiGLU; the MoE v2 is not supported');
  check('causal', false, 'an encoder');
  check('prenorm', false, 'norms after each block');
  check('qkv_proj_bias', false, 'no q/k/v bias');
  check('mlp_fc1_bias', false, 'no FFN bias');
  check('mlp_fc2_bias', false, 'no FFN bias');
  check('rotary_emb_fraction', 1, 'RoPE over every dim');
  check('rotary_emb_interleaved', false, 'NeoX RoPE');
  if (c.raw('moe_every_n_layers')) throw new UnsupportedModelError(c.file, 'nomic-bert-moe is not supported');
  const hiddenSize = c.count(['n_embd', 'hidden_size']);
  const numHeads = c.count(['n_head', 'num_attention_heads']);
  const headDim = c.whole('n_embd', hiddenSize / numHeads);
  const positions = c.count(['n_positions', 'max_position_embeddings']);
  const trained = c.count('max_trained_positions', () => 2048);
  return {
    arch: 'nomic-bert',
    vocabSize: c.count('vocab_size'),
    hiddenSize,
    numLayers: c.count(['n_layer', 'num_hidden_layers']),
    numHeads,
    numKvHeads: numHeads,
    headDim,
    ffnSize: c.count(['n_inner', 'intermediate_size']),
    // the converter's rule for nomic-embed-text v1/v1.5: trained for 2048 of 8192 positions
    contextLength: positions === 8192 && trained === 2048 ? 2048 : positions,
    normEps: c.num('layer_norm_epsilon', 1e-12),
    ropeBase: c.num('rotary_emb_base', 10000),
    ropeDim: headDim,
    ropeStyle: 'neox',
    tiedEmbeddings: false,
    // refined from modules.json; nomic-embed-text's own: mean, normalized
    pooling: { type: 'mean', normalize: true },
    bidirectional: true,
  };
}

const NOMIC_GLOBAL: Readonly<Record<string, string>> = {
  'token_embd.weight': 'embeddings.word_embeddings.weight',
  'token_types.weight': 'embeddings.token_type_embeddings.weight',
  'token_embd_norm.weight': 'emb_ln.weight',
  'token_embd_norm.bias': 'emb_ln.bias',
};

/** canonical per-block tensor (without `.weight`/`.bias`) → module under encoder.layers.N */
const NOMIC_BLOCK: Readonly<Record<string, string>> = {
  attn_qkv: 'attn.Wqkv',
  attn_output: 'attn.out_proj',
  attn_output_norm: 'norm1',
  ffn_up: 'mlp.fc11',
  ffn_gate: 'mlp.fc12',
  ffn_down: 'mlp.fc2',
  layer_output_norm: 'norm2',
};

const BLOCK_NAME = /^blk\.(\d+)\.([a-z_]+)\.(weight|bias)$/;

/** HF names of a canonical nomic-bert tensor, or undefined */
export function nomicBertHFNames(numLayers: number, canonical: string): string[] | undefined {
  const global = NOMIC_GLOBAL[canonical];
  if (global) return [global];
  const m = BLOCK_NAME.exec(canonical);
  if (!m || Number(m[1]) >= numLayers) return undefined;
  const path = NOMIC_BLOCK[m[2]!];
  return path ? [`encoder.layers.${m[1]}.${path}.${m[3]}`] : undefined;
}
