// Which type llama-quantize gives each tensor of a model for a file type, as
// llama_tensor_get_type (llama.cpp src/llama-quant.cpp) decides it for the bench shapes
// (not Falcon, not 70B, not 8-expert Mixtral), so benchmark files have the shape of the
// Q4_K_M / Q5_K_M files people download. A fused attn_qkv counts as an attn_v there
// (category_is_attn_v), and an expert or shared-expert ffn_down as an ffn_down.
import { GGMLType } from '../tensor/weight-types.js';

export type MixFileType = 'q4_k_m' | 'q5_k_m';

/** llama.cpp's use_more_bits: the first and last eighth of the layers and every third between */
export function useMoreBits(layer: number, layers: number): boolean {
  const e = Math.trunc(layers / 8);
  return layer < e || layer >= Math.trunc((7 * layers) / 8) || (layer - e) % 3 === 2;
}

/** tensor_type_fallback: a 256-block type for rows that are not whole 256-blocks */
export function fallbackType(type: GGMLType, rowLength: number): GGMLType {
  if (rowLength % 256 === 0) return type;
  const fallback = { [GGMLType.Q4_K]: GGMLType.Q5_0, [GGMLType.Q5_K]: GGMLType.Q5_1, [GGMLType.Q6_K]: GGMLType.Q8_0 }[type as number];
  if (fallback === undefined) return type;
  return rowLength % 32 === 0 ? fallback : GGMLType.F16;
}

/** where an attn_v-like matrix (attn_v, a fused attn_qkv) falls among the file's: llama-quantize counts them in file order */
export interface AttnVPosition {
  readonly index: number;
  readonly count: number;
}

/**
 * The type of matrix `name` (GGUF naming: token_embd, output, blk.N.attn_v, …) with rows of
 * `rowLength` values, in a model of `layers` layers whose output is tied to token_embd when
 * `tied`. Q4_K_M: Q4_K, Q5_K_M: Q5_K, except the output and a tied model's token tables (Q6_K;
 * Q8_0 for rows that are not whole 256-blocks), per_layer_model_proj (kept F16), and Q6_K for the attn_v-like matrices (attn_v, a fused attn_qkv) at a
 * use_more_bits position among them (`attnV`; default: the layer's number of `layers`) and for
 * every ffn_down (dense, experts, shared expert) of a use_more_bits layer; then the fallback
 * for rows that are not whole 256-blocks (Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0). Routers
 * (ffn_gate_inp) are never quantized: the caller keeps them F32.
 */
export function mixType(fileType: MixFileType, name: string, rowLength: number, layers: number, tied: boolean, attnV?: AttnVPosition): GGMLType {
  const base = fileType === 'q4_k_m' ? GGMLType.Q4_K : GGMLType.Q5_K;
  // never quantized: kept in the type of the F16 file llama-quantize starts from
  if (name === 'per_layer_model_proj.weight') return GGMLType.F16;
  // a tied model's token tables (Gemma 4's per-layer one too) take the output's type
  if (name === 'output.weight' || (tied && (name === 'token_embd.weight' || name === 'per_layer_token_embd.weight'))) {
    return rowLength % 256 !== 0 ? GGMLType.Q8_0 : GGMLType.Q6_K;
  }
  let type = base;
  const layer = /^blk\.(\d+)\./.exec(name);
  if (layer && /\.(attn_v|attn_qkv)\.weight$/.test(name)) {
    const at = attnV ?? { index: Number(layer[1]), count: layers };
    if (useMoreBits(at.index, at.count)) type = GGMLType.Q6_K;
  }
  if (layer && /\.ffn_down(_exps|_shexp)?\.weight$/.test(name) && useMoreBits(Number(layer[1]), layers)) type = GGMLType.Q6_K;
  return fallbackType(type, rowLength);
}
