// Which type llama-quantize gives each tensor of a model for a file type, as
// llama_tensor_get_type (llama.cpp src/llama-quant.cpp) decides it for llama/qwen2-style
// and phi3-style models (no experts, not Falcon, not 70B), so benchmark files have the
// shape of the Q4_K_M / Q5_K_M files people download.
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

/**
 * The type of matrix `name` (GGUF naming: token_embd, output, blk.N.attn_v, …) with rows of
 * `rowLength` values, in a model of `layers` layers whose output is tied to token_embd when
 * `tied`. Q4_K_M: Q4_K, Q5_K_M: Q5_K, except the output (Q6_K; Q8_0 for rows that are not
 * whole 256-blocks), attn_v / ffn_down of the use_more_bits layers (Q6_K) and a fused
 * attn_qkv (Q5_K / Q6_K); then the
 * fallback for rows that are not whole 256-blocks (Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0).
 */
export function mixType(fileType: MixFileType, name: string, rowLength: number, layers: number, tied: boolean): GGMLType {
  const base = fileType === 'q4_k_m' ? GGMLType.Q4_K : GGMLType.Q5_K;
  if (name === 'output.weight' || (tied && name === 'token_embd.weight')) {
    return rowLength % 256 !== 0 ? GGMLType.Q8_0 : GGMLType.Q6_K;
  }
  let type = base;
  if (/\.attn_qkv\.weight$/.test(name)) type = fileType === 'q4_k_m' ? GGMLType.Q5_K : GGMLType.Q6_K;
  const m = /^blk\.(\d+)\.(attn_v|ffn_down)\.weight$/.exec(name);
  if (m && useMoreBits(Number(m[1]), layers)) type = GGMLType.Q6_K;
  return fallbackType(type, rowLength);
}
