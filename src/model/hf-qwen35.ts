// Hugging Face Qwen3_5ForCausalLM folders (model_type qwen3_5_text), and Qwen3_5MoeForCausalLM
// ones (qwen3_5_moe_text: routed experts, one matrix per expert or transformers' 3-D
// mlp.experts.gate_up_proj / down_proj, plus mlp.shared_expert and its mlp.shared_expert_gate;
// the chosen experts renormalized, as llama.cpp's qwen35moe always does): config.json → ModelConfig
// with transformers' Qwen3_5TextConfig defaults, the tensor names, and the load-time
// transforms llama.cpp's converter applies (convert_hf_to_gguf.py, Qwen3NextModel and
// _LinearAttentionVReorderBase), so the arch code (arch/qwen35.ts) sees what a GGUF holds:
//   - RMSNorm weights are stored as w in HF's (1 + w) form: +1, except linear_attn.norm
//     (a plain gated RMSNorm);
//   - A_log → ssm_a = −exp(A_log); conv1d [channels, 1, kernel] → [channels, kernel];
//   - with more value heads than key heads, HF groups value heads by key head (head g·r + i
//     reads key head g) where ggml tiles them (head i·hk + g reads key head g): the value
//     rows of in_proj_qkv, the rows of in_proj_z / in_proj_a / in_proj_b, A_log, dt_bias, the
//     value channels of conv1d and the input columns of out_proj are reordered.
import { ModelFormatError, UnsupportedModelError } from '../errors.js';
import { GGMLType } from '../tensor/weight-types.js';
import { attentionHeads } from './hf-fields.js';
import type { Fields } from './hf-fields.js';
import { dequantizeRow } from '../tensor/quant/dequantize.js';
import type { LinearAttention, ModelConfig, MoeParams } from './weights.js';
import type { RopeSections } from '../kernels/index.js';
import { MAX_EXPERTS } from './gguf-config-moe.js';
import type { WeightTensor } from '../tensor/weight-tensor.js';

export function qwen35Config(c: Fields, moe = false): ModelConfig {
  const hiddenSize = c.count('hidden_size');
  const { numHeads, numKvHeads } = attentionHeads(c);
  const headDim = c.count('head_dim', () => 256);
  const numLayers = c.count('num_hidden_layers');
  const act = c.raw('hidden_act') ?? 'silu';
  if (act !== 'silu') throw new UnsupportedModelError(c.file, `hidden_act ${JSON.stringify(act)} is not supported (only silu)`);
  if (c.raw('attention_bias') === true) throw new UnsupportedModelError(c.file, 'attention_bias: true is not supported');
  if (c.raw('attn_output_gate') === false) throw new UnsupportedModelError(c.file, 'attn_output_gate: false is not supported (Qwen3.5 gates its attention output)');
  // rope_theta and partial_rotary_factor at top level or under rope_parameters (newer transformers)
  const params = c.raw('rope_parameters');
  const rp = params && typeof params === 'object' ? (params as Record<string, unknown>) : {};
  const pick = (key: string, fallback: number): number => {
    const v = c.raw(key) ?? rp[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'number' || !(v > 0)) throw c.bad(key, 'a positive number');
    return v;
  };
  // Qwen3.5's RoPE is plain (interleaved MRoPE over text positions); scaled variants are not read
  const scaling = c.raw('rope_scaling');
  const ropeType = rp['rope_type'] ?? (scaling && typeof scaling === 'object' ? ((scaling as Record<string, unknown>)['rope_type'] ?? (scaling as Record<string, unknown>)['type']) : undefined);
  if (ropeType !== undefined && ropeType !== 'default' && ropeType !== 'mrope') {
    throw new UnsupportedModelError(c.file, `RoPE type ${JSON.stringify(ropeType)} is not supported for Qwen3.5 (only the default)`);
  }
  const ropeBase = pick('rope_theta', 10000000);
  const partial = pick('partial_rotary_factor', 0.25);
  const ropeDim = Math.floor(headDim * partial);
  if (partial > 1 || ropeDim % 2 !== 0) {
    throw new ModelFormatError(c.file, `partial_rotary_factor ${partial} does not give an even number of rotated dims of ${headDim}`);
  }
  const experts = moe ? qwen35MoeParams(c) : undefined;
  return {
    arch: experts ? 'qwen35moe' : 'qwen35',
    vocabSize: c.count('vocab_size'),
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    ffnSize: experts ? c.count('intermediate_size', () => experts.expertFfnSize) : c.count('intermediate_size'),
    contextLength: c.count('max_position_embeddings'),
    normEps: c.num('rms_norm_eps', 1e-6),
    ropeBase,
    ropeDim,
    // interleaved MRoPE with text positions: every section sees the same position (NeoX over ropeDim)
    ropeStyle: 'neox',
    ropeSections: mropeSections(c, rp),
    tiedEmbeddings: c.bool('tie_word_embeddings', false),
    linearAttention: linearAttention(c, numLayers),
    ...(experts ? { moe: experts } : {}),
  };
}

/** rope_parameters.mrope_section (transformers' default [11, 11, 10]), padded to four as llama.cpp's converter writes it */
function mropeSections(c: Fields, rp: Record<string, unknown>): RopeSections {
  const v = rp['mrope_section'] ?? c.raw('mrope_section') ?? [11, 11, 10];
  if (!Array.isArray(v) || v.length > 4 || !v.every((x) => Number.isInteger(x) && (x as number) >= 0) || !v.some((x) => (x as number) > 0)) {
    throw c.bad('mrope_section', 'up to 4 counts of rotary pairs');
  }
  return [0, 1, 2, 3].map((i) => (v[i] as number | undefined) ?? 0) as unknown as RopeSections;
}

/** transformers' Qwen3_5MoeTextConfig: num_experts, num_experts_per_tok, moe_intermediate_size, shared_expert_intermediate_size */
function qwen35MoeParams(c: Fields): MoeParams {
  const numExperts = c.count('num_experts', () => 256);
  const numExpertsUsed = c.count('num_experts_per_tok', () => 8);
  if (numExperts > MAX_EXPERTS) throw c.bad('num_experts', `at most ${MAX_EXPERTS}`);
  if (numExpertsUsed > numExperts) throw c.bad('num_experts_per_tok', `at most num_experts (${numExperts})`);
  const expertFfnSize = c.count('moe_intermediate_size', () => 512);
  return { numExperts, numExpertsUsed, expertFfnSize, normTopK: true, sharedFfnSize: c.count('shared_expert_intermediate_size', () => 512) };
}

function linearAttention(c: Fields, numLayers: number): LinearAttention {
  const headDim = c.count('linear_key_head_dim', () => 128);
  const valueDim = c.count('linear_value_head_dim', () => 128);
  if (valueDim !== headDim) {
    throw new UnsupportedModelError(c.file, `linear_value_head_dim ${valueDim} ≠ linear_key_head_dim ${headDim} is not supported`);
  }
  const numKHeads = c.count('linear_num_key_heads', () => 16);
  const numVHeads = c.count('linear_num_value_heads', () => 32);
  if (numVHeads % numKHeads !== 0) {
    throw new ModelFormatError(c.file, `linear_num_value_heads ${numVHeads} is not a multiple of linear_num_key_heads ${numKHeads}`);
  }
  const convKernel = c.count('linear_conv_kernel_dim', () => 4);
  if (convKernel < 2) throw c.bad('linear_conv_kernel_dim', 'at least 2');
  const types = c.raw('layer_types');
  let layers: boolean[];
  if (types !== undefined && types !== null) {
    if (!Array.isArray(types) || types.length !== numLayers || !types.every((t) => t === 'linear_attention' || t === 'full_attention')) {
      throw c.bad('layer_types', `${numLayers} of "linear_attention" / "full_attention"`);
    }
    layers = types.map((t) => t === 'linear_attention');
  } else {
    const interval = c.count('full_attention_interval', () => 4);
    layers = Array.from({ length: numLayers }, (_, i) => (i + 1) % interval !== 0);
  }
  return { layers, convKernel, headDim, numKHeads, numVHeads };
}

/** canonical block tensor (after `blk.N.`) → its HF name under model.layers.N */
const QWEN35_BLOCK: Readonly<Record<string, string>> = {
  'attn_norm.weight': 'input_layernorm.weight',
  'post_attention_norm.weight': 'post_attention_layernorm.weight',
  'attn_q.weight': 'self_attn.q_proj.weight',
  'attn_k.weight': 'self_attn.k_proj.weight',
  'attn_v.weight': 'self_attn.v_proj.weight',
  'attn_output.weight': 'self_attn.o_proj.weight',
  'attn_q_norm.weight': 'self_attn.q_norm.weight',
  'attn_k_norm.weight': 'self_attn.k_norm.weight',
  'ffn_gate.weight': 'mlp.gate_proj.weight',
  'ffn_up.weight': 'mlp.up_proj.weight',
  'ffn_down.weight': 'mlp.down_proj.weight',
  'attn_qkv.weight': 'linear_attn.in_proj_qkv.weight',
  'attn_gate.weight': 'linear_attn.in_proj_z.weight',
  'ssm_beta.weight': 'linear_attn.in_proj_b.weight',
  'ssm_alpha.weight': 'linear_attn.in_proj_a.weight',
  'ssm_dt.bias': 'linear_attn.dt_bias',
  ssm_a: 'linear_attn.A_log',
  'ssm_conv1d.weight': 'linear_attn.conv1d.weight',
  'ssm_norm.weight': 'linear_attn.norm.weight',
  'ssm_out.weight': 'linear_attn.out_proj.weight',
  // qwen35moe: the router, the shared expert and its gate, and the experts as transformers' 3-D tensors
  'ffn_gate_inp.weight': 'mlp.gate.weight',
  'ffn_gate_inp_shexp.weight': 'mlp.shared_expert_gate.weight',
  'ffn_gate_shexp.weight': 'mlp.shared_expert.gate_proj.weight',
  'ffn_up_shexp.weight': 'mlp.shared_expert.up_proj.weight',
  'ffn_down_shexp.weight': 'mlp.shared_expert.down_proj.weight',
  'ffn_gate_up_exps.weight': 'mlp.experts.gate_up_proj',
  'ffn_down_exps.weight': 'mlp.experts.down_proj',
};

/** one expert's matrix (gguf-config-moe.ts's expertTensorName) → mlp.experts.E.{gate,up,down}_proj */
const EXPERT = /^(ffn_(gate|up|down)_exps)\.(\d+)\.weight$/;

const QWEN35_GLOBAL: Readonly<Record<string, string>> = {
  'token_embd.weight': 'model.embed_tokens.weight',
  'output_norm.weight': 'model.norm.weight',
  'output.weight': 'lm_head.weight',
};

/** The HF names a canonical Qwen3.5 tensor may have (first found wins), or undefined when there is none. */
export function qwen35HFNames(numLayers: number, canonical: string): string[] | undefined {
  const names = qwen35CausalLMNames(numLayers, canonical);
  // Qwen3_5ForConditionalGeneration keeps the text model under model.language_model
  return names?.flatMap((n) => (n.startsWith('model.') ? [n, `model.language_model.${n.slice('model.'.length)}`] : [n]));
}

function qwen35CausalLMNames(numLayers: number, canonical: string): string[] | undefined {
  const global = QWEN35_GLOBAL[canonical];
  if (global) return [global];
  const m = /^blk\.(\d+)\.(.+)$/.exec(canonical);
  if (!m || Number(m[1]) >= numLayers) return undefined;
  const expert = EXPERT.exec(m[2]!);
  if (expert) return [`model.layers.${m[1]}.mlp.experts.${expert[3]}.${expert[2]}_proj.weight`];
  const path = QWEN35_BLOCK[m[2]!];
  if (!path) return undefined;
  const name = `model.layers.${m[1]}.${path}`;
  // transformers' 3-D expert parameters have no .weight suffix; some exports add one
  return path.startsWith('mlp.experts.') ? [name, `${name}.weight`] : [name];
}

/** The (1 + w) RMSNorms: every norm but the gated one of the linear layers */
const OFFSET_NORMS = new Set(['attn_norm.weight', 'post_attention_norm.weight', 'attn_q_norm.weight', 'attn_k_norm.weight']);

/** The tensor as llama.cpp's converter would have written it (see the top of this file). */
export function qwen35Transform(config: ModelConfig, canonical: string, t: WeightTensor): WeightTensor {
  const l = config.linearAttention!;
  const S = l.headDim;
  const perGroup = l.numVHeads / l.numKHeads;
  const order = tiledOrder(l.numKHeads, perGroup);
  const suffix = canonical === 'output_norm.weight' ? canonical : canonical.replace(/^blk\.\d+\./, '');
  if (suffix === 'output_norm.weight' || OFFSET_NORMS.has(suffix)) return f32Tensor(t, t.dims, toF32(t).map((x) => x + 1));
  switch (suffix) {
    case 'ssm_a':
      return f32Tensor(t, [l.numVHeads], permuteRows(toF32(t).map((x) => Math.fround(-Math.exp(x))), order));
    case 'ssm_dt.bias':
      return f32Tensor(t, [l.numVHeads], permuteRows(toF32(t), order));
    case 'ssm_conv1d.weight': {
      // [channels, 1, kernel] (ggml dims [kernel, 1, channels]): q and k channels, then the value heads'
      const channels = t.dims[t.dims.length - 1]!;
      const values = toF32(t);
      const qk = 2 * l.numKHeads * S;
      const v = permuteRows(values.subarray(qk * l.convKernel), order, S * l.convKernel);
      const out = new Float32Array(values.length);
      out.set(values.subarray(0, qk * l.convKernel));
      out.set(v, qk * l.convKernel);
      return f32Tensor(t, [l.convKernel, channels], out);
    }
    case 'attn_qkv.weight':
      return permuteRowBytes(t, 2 * l.numKHeads * S, order, S);
    case 'attn_gate.weight':
      return permuteRowBytes(t, 0, order, S);
    case 'ssm_beta.weight':
    case 'ssm_alpha.weight':
      return permuteRowBytes(t, 0, order, 1);
    case 'ssm_out.weight':
      return permuteColumnBytes(t, order, S);
    default:
      return t;
  }
}

/** order[newBlock] = oldBlock for `perGroup` value heads per key head: grouped g·r + i → tiled i·hk + g */
function tiledOrder(numKHeads: number, perGroup: number): Int32Array {
  const order = new Int32Array(numKHeads * perGroup);
  for (let g = 0; g < numKHeads; g++) for (let i = 0; i < perGroup; i++) order[i * numKHeads + g] = g * perGroup + i;
  return order;
}

function toF32(t: WeightTensor): Float32Array {
  const n = t.dims.reduce((a, b) => a * b, 1);
  const out = new Float32Array(n);
  dequantizeRow(t.type, t.data, 0, n, out, 0);
  return out;
}

function f32Tensor(t: WeightTensor, dims: readonly number[], values: Float32Array): WeightTensor {
  return { name: t.name, type: GGMLType.F32, dims, data: new Uint8Array(values.buffer, values.byteOffset, values.byteLength) };
}

/** blocks of `blockSize` values reordered: out block b = in block order[b] */
function permuteRows(values: Float32Array, order: Int32Array, blockSize = values.length / order.length): Float32Array {
  const out = new Float32Array(values.length);
  order.forEach((from, b) => out.set(values.subarray(from * blockSize, (from + 1) * blockSize), b * blockSize));
  return out;
}

/** rows from `firstRow` on, in blocks of `rowsPerBlock` rows, reordered (bytes copied in the tensor's own type) */
function permuteRowBytes(t: WeightTensor, firstRow: number, order: Int32Array, rowsPerBlock: number): WeightTensor {
  const rows = t.dims[1]!;
  const rowBytes = t.data.length / rows;
  const blockBytes = rowsPerBlock * rowBytes;
  if (firstRow + order.length * rowsPerBlock !== rows) throw new ModelFormatError(t.name, `has ${rows} rows, expected ${firstRow + order.length * rowsPerBlock}`);
  const out = new Uint8Array(t.data.length);
  out.set(t.data.subarray(0, firstRow * rowBytes));
  const base = firstRow * rowBytes;
  order.forEach((from, b) => out.set(t.data.subarray(base + from * blockBytes, base + (from + 1) * blockBytes), base + b * blockBytes));
  return { ...t, data: out };
}

/** within every row, blocks of `colsPerBlock` columns reordered (out_proj's inputs are the value heads) */
function permuteColumnBytes(t: WeightTensor, order: Int32Array, colsPerBlock: number): WeightTensor {
  const [cols, rows] = [t.dims[0]!, t.dims[1]!];
  if (cols !== order.length * colsPerBlock) throw new ModelFormatError(t.name, `has ${cols} columns, expected ${order.length * colsPerBlock}`);
  const rowBytes = t.data.length / rows;
  const blockBytes = rowBytes / order.length;
  const out = new Uint8Array(t.data.length);
  for (let r = 0; r < rows; r++) {
    const row = r * rowBytes;
    order.forEach((from, b) => out.set(t.data.subarray(row + from * blockBytes, row + (from + 1) * blockBytes), row + b * blockBytes));
  }
  return { ...t, data: out };
}
