// Gemma 4's tensors and keys for `loom bench make-model` (the gemma-4-e2b shape): the names
// and metadata llama.cpp's converter writes (Gemma4Model in convert_hf_to_gguf), random
// weights at the scales of the other bench shapes.
import type { StreamEntry } from './gguf-stream.js';
import { entry as kv } from './gguf-stream.js';
import type { BenchShapeCore, Matrix, Vector } from './bench-writers.js';

export interface Gemma4BenchShape {
  /** head size and KV heads of the sliding-window layers (the shape's headDim/kvHeads are the global layers') */
  readonly swaHeadDim: number;
  readonly swaKvHeads: number;
  /** layer il is global when il % globalEvery == globalEvery − 1 */
  readonly globalEvery: number;
  readonly sharedKvLayers: number;
  readonly perLayerInput: number;
  readonly window: number;
  readonly swaRopeBase: number;
  /** the global layers rotate this fraction of each head ("proportional" RoPE through rope_freqs) */
  readonly partialRotary: number;
  readonly finalSoftcap: number;
  /** use_double_wide_mlp: the shared-KV layers' FFNs are twice as wide */
  readonly doubleWideMlp: boolean;
  /** attention_k_eq_v (26B, 31B): the global layers have no v projection, V is K's */
  readonly globalKEqV?: boolean;
}


type F32 = (name: string, values: Float32Array) => void;

function layout(s: BenchShapeCore, g: Gemma4BenchShape): { sliding: boolean[]; firstShared: number; ffn: number[] } {
  const sliding = Array.from({ length: s.layers }, (_, il) => il % g.globalEvery !== g.globalEvery - 1);
  const firstShared = s.layers - g.sharedKvLayers;
  const ffn = sliding.map((_, il) => (g.doubleWideMlp && il >= firstShared ? 2 * s.ffn : s.ffn));
  return { sliding, firstShared, ffn };
}

/** `experts(p)` writes layer p's routed experts (26B-A4B), beside its dense MLP */
export function gemma4BenchTensors(s: BenchShapeCore, g: Gemma4BenchShape, matrix: Matrix, vector: Vector, f32: F32, experts?: (p: string) => void): void {
  const d = s.hidden;
  const hidden = 1 / Math.sqrt(d);
  const pl = g.perLayerInput;
  const { sliding, firstShared, ffn } = layout(s, g);
  // scaled by √hidden and √perLayerInput in the model: rows of 1/√width keep both near unit scale
  matrix('token_embd.weight', d, s.vocab, hidden);
  if (pl > 0) {
    matrix('per_layer_token_embd.weight', pl * s.layers, s.vocab, 1 / Math.sqrt(pl));
    matrix('per_layer_model_proj.weight', d, pl * s.layers, hidden);
    vector('per_layer_proj_norm.weight', pl, 0.1, 1);
  }
  for (let il = 0; il < s.layers; il++) {
    const p = `blk.${il}.`;
    const headDim = sliding[il] ? g.swaHeadDim : s.headDim;
    const q = s.heads * headDim;
    const kvw = (sliding[il] ? g.swaKvHeads : s.kvHeads) * headDim;
    vector(`${p}attn_norm.weight`, d, 0.1, 1);
    matrix(`${p}attn_q.weight`, d, q, hidden);
    vector(`${p}attn_q_norm.weight`, headDim, 0.05, 0.3);
    if (il < firstShared) {
      matrix(`${p}attn_k.weight`, d, kvw, hidden);
      if (sliding[il] || !g.globalKEqV) matrix(`${p}attn_v.weight`, d, kvw, hidden);
      vector(`${p}attn_k_norm.weight`, headDim, 0.05, 0.3);
    }
    matrix(`${p}attn_output.weight`, q, d, 1 / Math.sqrt(q));
    vector(`${p}post_attention_norm.weight`, d, 0.1, 1);
    vector(`${p}ffn_norm.weight`, d, 0.1, 1);
    matrix(`${p}ffn_gate.weight`, d, ffn[il]!, 2 * hidden);
    matrix(`${p}ffn_up.weight`, d, ffn[il]!, hidden);
    matrix(`${p}ffn_down.weight`, ffn[il]!, d, 1 / Math.sqrt(ffn[il]!));
    vector(`${p}post_ffw_norm.weight`, d, 0.1, 1);
    if (pl > 0) {
      matrix(`${p}inp_gate.weight`, d, pl, 2 * hidden);
      matrix(`${p}proj.weight`, pl, d, 1 / Math.sqrt(pl));
      vector(`${p}post_norm.weight`, d, 0.1, 1);
    }
    vector(`${p}layer_output_scale.weight`, 1, 0.05, 0.9);
    experts?.(p);
  }
  vector('output_norm.weight', d, 0.1, 1);
  const rotated = Math.floor((s.headDim * g.partialRotary) / 2);
  f32('rope_freqs.weight', Float32Array.from({ length: s.headDim / 2 }, (_, i) => (i < rotated ? 1 : 1e30)));
}

/** The gemma4.* keys beyond the common ones (per-layer arrays, the sliding layers' sizes, sharing). */
export function gemma4BenchMetadata(s: BenchShapeCore, g: Gemma4BenchShape): StreamEntry[] {
  const a = 'gemma4';
  const { sliding, ffn } = layout(s, g);
  return [
    kv.i32s(`${a}.feed_forward_length`, ffn),
    kv.i32s(`${a}.attention.head_count_kv`, sliding.map((swa) => (swa ? g.swaKvHeads : s.kvHeads))),
    kv.u32(`${a}.attention.key_length`, s.headDim),
    kv.u32(`${a}.attention.value_length`, s.headDim),
    kv.u32(`${a}.attention.key_length_swa`, g.swaHeadDim),
    kv.u32(`${a}.attention.value_length_swa`, g.swaHeadDim),
    kv.u32(`${a}.rope.dimension_count`, s.headDim),
    kv.u32(`${a}.rope.dimension_count_swa`, g.swaHeadDim),
    kv.u32(`${a}.attention.sliding_window`, g.window),
    kv.bools(`${a}.attention.sliding_window_pattern`, sliding),
    kv.f32(`${a}.rope.freq_base_swa`, g.swaRopeBase),
    kv.f32(`${a}.final_logit_softcapping`, g.finalSoftcap),
    kv.u32(`${a}.attention.shared_kv_layers`, g.sharedKvLayers),
    kv.u32(`${a}.embedding_length_per_layer_input`, g.perLayerInput),
  ];
}
