// gpt-oss's tensors and keys for `loom bench make-model` (the gpt-oss-20b shape): the names and
// metadata llama.cpp's converter writes (conversion/gpt_oss.py), random weights at the scales of
// the other bench shapes. The experts are 3-D [in, out, experts] tensors; with --type mxfp4_moe
// they are MXFP4 and every other matrix Q8_0 (llama-quantize's MXFP4_MOE, ftype 38); the router
// stays F32 (llama-quantize never quantizes ffn_gate_inp), as do norms, biases and sinks.
// mxfp4_moe's weights are random blocks by default (random-blocks.ts): the whole-size file,
// about 12 GB, is written in minutes (issue 36's start-up benchmark, `bench start-peer`).
import type { StreamEntry } from './gguf-stream.js';
import { entry as kv } from './gguf-stream.js';
import type { BenchShapeCore, Matrix, Vector } from './bench-writers.js';

export interface GptOssBenchShape {
  readonly experts: number;
  readonly expertsUsed: number;
  /** the sliding window of layers 0, 2, 4, … */
  readonly window: number;
  /** YaRN as the released files: factor over the original context */
  readonly yarnFactor: number;
  readonly yarnOrigContext: number;
}


type Experts = (name: string, inF: number, outF: number, experts: number, std: number) => void;
/** a matrix kept in F32 whatever the type (the router; the experts' biases [width, experts] with std 0.1) */
type F32Matrix = (name: string, inF: number, outF: number, std: number) => void;

export function gptOssBenchTensors(s: BenchShapeCore, g: GptOssBenchShape, t: { matrix: Matrix; experts: Experts; vector: Vector; f32Matrix: F32Matrix }): void {
  const d = s.hidden;
  const q = s.heads * s.headDim;
  const kvw = s.kvHeads * s.headDim;
  const hidden = 1 / Math.sqrt(d);
  t.matrix('token_embd.weight', d, s.vocab, 1);
  for (let i = 0; i < s.layers; i++) {
    const p = `blk.${i}.`;
    t.vector(`${p}attn_norm.weight`, d, 0.1, 1);
    t.matrix(`${p}attn_q.weight`, d, q, 2 * hidden);
    t.vector(`${p}attn_q.bias`, q, 0.2, 0);
    t.matrix(`${p}attn_k.weight`, d, kvw, 2 * hidden);
    t.vector(`${p}attn_k.bias`, kvw, 0.2, 0);
    t.matrix(`${p}attn_v.weight`, d, kvw, hidden);
    t.vector(`${p}attn_v.bias`, kvw, 0.1, 0);
    t.matrix(`${p}attn_output.weight`, q, d, 1 / Math.sqrt(q));
    t.vector(`${p}attn_output.bias`, d, 0.05, 0);
    t.vector(`${p}attn_sinks.weight`, s.heads, 1, 0);
    t.vector(`${p}post_attention_norm.weight`, d, 0.1, 1);
    t.f32Matrix(`${p}ffn_gate_inp.weight`, d, g.experts, hidden);
    t.vector(`${p}ffn_gate_inp.bias`, g.experts, 0.1, 0);
    t.experts(`${p}ffn_gate_exps.weight`, d, s.ffn, g.experts, hidden);
    t.f32Matrix(`${p}ffn_gate_exps.bias`, s.ffn, g.experts, 0.1);
    t.experts(`${p}ffn_up_exps.weight`, d, s.ffn, g.experts, hidden);
    t.f32Matrix(`${p}ffn_up_exps.bias`, s.ffn, g.experts, 0.1);
    t.experts(`${p}ffn_down_exps.weight`, s.ffn, d, g.experts, 1 / Math.sqrt(s.ffn));
    t.f32Matrix(`${p}ffn_down_exps.bias`, d, g.experts, 0.05);
  }
  t.vector('output_norm.weight', d, 0.1, 1);
  t.matrix('output.weight', d, s.vocab, hidden);
}

/** The gpt-oss.* keys beyond the common ones. */
export function gptOssBenchMetadata(s: BenchShapeCore, g: GptOssBenchShape): StreamEntry[] {
  const a = 'gpt-oss';
  return [
    kv.u32(`${a}.attention.key_length`, s.headDim),
    kv.u32(`${a}.attention.value_length`, s.headDim),
    kv.u32(`${a}.attention.sliding_window`, g.window),
    kv.u32(`${a}.expert_count`, g.experts),
    kv.u32(`${a}.expert_used_count`, g.expertsUsed),
    kv.u32(`${a}.expert_feed_forward_length`, s.ffn),
    kv.str(`${a}.rope.scaling.type`, 'yarn'),
    kv.f32(`${a}.rope.scaling.factor`, g.yarnFactor),
    kv.u32(`${a}.rope.scaling.original_context_length`, g.yarnOrigContext),
  ];
}
