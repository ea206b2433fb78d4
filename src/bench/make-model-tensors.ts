// The tensors of a bench model (make-model.ts): each a seeded stream of its own, made only when
// written. The dense decoders' blocks (Llama, Qwen2/3, Phi-3, Gemma 3, Qwen3.5's Gated DeltaNet
// and gated attention) are here; Gemma 4, gpt-oss, the encoders and the routed experts have
// writers of their own (make-model-*.ts), called with the same matrix and vector callbacks.
import { Rng } from '../engine/rng.js';
import { GGMLType } from '../tensor/weight-types.js';
import { llama3FreqFactors } from '../tensor/rope-scaling.js';
import { gemma4BenchTensors } from './make-model-gemma4.js';
import { gptOssBenchTensors } from './make-model-gptoss.js';
import { moeBenchTensors } from './make-model-moe.js';
import { embedBenchTensors } from './make-model-embed.js';
import { randomBlockRows } from './random-blocks.js';
import { gaussian, quantizedRows } from './gaussian-weights.js';
import type { StreamTensor } from './gguf-stream.js';
import { isEncoder } from './bench-shapes.js';
import type { BenchShape } from './bench-shapes.js';
import { defaultBenchWeights, matrixType } from './bench-types.js';
import type { BenchWeightOptions } from './bench-types.js';

export function benchTensors(s: BenchShape, o: BenchWeightOptions): StreamTensor[] {
  const out: StreamTensor[] = [];
  // one seeded stream per tensor: a tensor's values depend only on (seed, its index)
  const seedOf = (): number => (o.seed * 7919 + out.length + 1) >>> 0;
  const blocks = (o.weights ?? defaultBenchWeights(o.type)) === 'blocks';
  const rowsOf = (type: GGMLType, inF: number, rows: number, std: number, seed: number): Uint8Array | Iterable<Uint8Array> =>
    (blocks ? randomBlockRows(type, inF, rows, std, seed) : undefined) ?? quantizedRows(type, inF, rows, std, seed);
  // attn_v-like matrices take their type once all are listed: llama-quantize's choice depends on
  // their position among them (layers without one: Gemma 4's shared-KV and V = K layers)
  const attnV: { name: string; inF: number; entry: { type: GGMLType } }[] = [];
  const matrix = (name: string, inF: number, outF: number, std: number, experts?: number): void => {
    const seed = seedOf();
    const rows = outF * (experts ?? 1);
    const entry = { name, type: matrixType(o.type, name, inF, s.layers), dims: experts === undefined ? [inF, outF] : [inF, outF, experts], produce: () => rowsOf(entry.type, inF, rows, std, seed) };
    if (/\.(attn_v|attn_qkv)\.weight$/.test(name)) attnV.push({ name, inF, entry });
    out.push(entry);
  };
  const f32Matrix = (name: string, inF: number, outF: number, std: number): void => {
    const seed = seedOf();
    out.push({ name, type: GGMLType.F32, dims: [inF, outF], produce: () => new Uint8Array(gaussian(inF * outF, std, 0, new Rng(seed)).buffer) });
  };
  const ffn = (p: string, d: number): void => {
    if (s.moe) return moeBenchTensors(p, d, s.moe, matrix, vector, f32Matrix);
    matrix(`${p}ffn_gate.weight`, d, s.ffn, 1 / Math.sqrt(d));
    matrix(`${p}ffn_up.weight`, d, s.ffn, 1 / Math.sqrt(d));
    matrix(`${p}ffn_down.weight`, s.ffn, d, 1 / Math.sqrt(s.ffn));
  };
  const vector = (name: string, n: number, std: number, mean: number): void => {
    const seed = seedOf();
    out.push({ name, type: GGMLType.F32, dims: [n], produce: () => new Uint8Array(gaussian(n, std, mean, new Rng(seed)).buffer) });
  };
  const f32 = (name: string, values: Float32Array): void => {
    out.push({ name, type: GGMLType.F32, dims: [values.length], produce: () => new Uint8Array(values.buffer) });
  };
  const positioned = (): StreamTensor[] => {
    attnV.forEach((m, index) => (m.entry.type = matrixType(o.type, m.name, m.inF, s.layers, { index, count: attnV.length })));
    return out;
  };
  if (s.gemma4) {
    gemma4BenchTensors(s, s.gemma4, matrix, vector, f32, s.moe && ((p) => moeBenchTensors(p, s.hidden, s.moe!, matrix, vector, f32Matrix)));
    return positioned();
  }
  if (isEncoder(s)) {
    embedBenchTensors(s, matrix, vector, f32Matrix);
    return positioned();
  }
  if (s.gptOss) {
    const experts = (name: string, inF: number, outF: number, n: number, std: number): void => {
      const type = o.type === 'mxfp4_moe' ? GGMLType.MXFP4 : matrixType(o.type, name, inF, s.layers);
      const seed = seedOf();
      out.push({ name, type, dims: [inF, outF, n], produce: () => rowsOf(type, inF, outF * n, std, seed) });
    };
    const f32Matrix = (name: string, inF: number, outF: number, std: number): void => {
      const seed = seedOf();
      out.push({ name, type: GGMLType.F32, dims: [inF, outF], produce: () => new Uint8Array(gaussian(inF * outF, std, 0, new Rng(seed)).buffer) });
    };
    gptOssBenchTensors(s, s.gptOss, { matrix, experts, vector, f32Matrix });
    return out;
  }
  const d = s.hidden;
  const q = s.heads * s.headDim;
  const kvw = s.kvHeads * s.headDim;
  const hidden = 1 / Math.sqrt(d);
  const gemma = s.arch === 'gemma3' || s.arch === 'gemma-embedding';
  // q (qRows wide: Qwen3.5's gated attention adds a gate per head), k, v, per-head q/k norms, the output
  const normedAttention = (p: string, qRows: number): void => {
    matrix(`${p}attn_q.weight`, d, qRows, 2 * hidden);
    matrix(`${p}attn_k.weight`, d, kvw, 2 * hidden);
    matrix(`${p}attn_v.weight`, d, kvw, hidden);
    vector(`${p}attn_q_norm.weight`, s.headDim, 0.1, 1);
    vector(`${p}attn_k_norm.weight`, s.headDim, 0.1, 1);
    matrix(`${p}attn_output.weight`, q, d, 1 / Math.sqrt(q));
  };
  // Gemma scales embeddings by √hidden: rows of std 1/√hidden keep the stream near unit scale
  matrix('token_embd.weight', d, s.vocab, gemma ? hidden : 1);
  for (let i = 0; i < s.layers; i++) {
    const p = `blk.${i}.`;
    if (s.linear) {
      // Qwen3.5's block: Gated DeltaNet or gated attention (q projection [q | gate] per head), post-attention norm, SwiGLU
      const l = s.linear;
      vector(`${p}attn_norm.weight`, d, 0.1, 1);
      if ((i + 1) % l.interval !== 0) {
        const conv = (2 * l.kHeads + l.vHeads) * l.stateSize;
        const inner = l.vHeads * l.stateSize;
        matrix(`${p}attn_qkv.weight`, d, conv, 2 * hidden);
        matrix(`${p}attn_gate.weight`, d, inner, hidden);
        matrix(`${p}ssm_beta.weight`, d, l.vHeads, hidden);
        matrix(`${p}ssm_alpha.weight`, d, l.vHeads, hidden);
        vector(`${p}ssm_dt.bias`, l.vHeads, 0.5, 0);
        vector(`${p}ssm_a`, l.vHeads, 0.3, -1);
        vector(`${p}ssm_conv1d.weight`, l.convKernel * conv, 0.5, 0);
        out[out.length - 1] = { ...out[out.length - 1]!, dims: [l.convKernel, conv] };
        vector(`${p}ssm_norm.weight`, l.stateSize, 0.1, 1);
        matrix(`${p}ssm_out.weight`, inner, d, 1 / Math.sqrt(inner));
      } else {
        normedAttention(p, 2 * q);
      }
      vector(`${p}post_attention_norm.weight`, d, 0.1, 1);
      ffn(p, d);
      continue;
    }
    if (gemma) {
      // Gemma 3's block (norms stored as 1 + w, as converted)
      vector(`${p}attn_norm.weight`, d, 0.1, 1);
      normedAttention(p, q);
      vector(`${p}post_attention_norm.weight`, d, 0.1, 1);
      vector(`${p}ffn_norm.weight`, d, 0.1, 1);
      matrix(`${p}ffn_gate.weight`, d, s.ffn, hidden);
      matrix(`${p}ffn_up.weight`, d, s.ffn, hidden);
      matrix(`${p}ffn_down.weight`, s.ffn, d, 1 / Math.sqrt(s.ffn));
      vector(`${p}post_ffw_norm.weight`, d, 0.1, 1);
      continue;
    }
    vector(`${p}attn_norm.weight`, d, 0.1, 1);
    if (s.arch === 'phi3') {
      matrix(`${p}attn_qkv.weight`, d, q + 2 * kvw, 2 * hidden);
    } else {
      matrix(`${p}attn_q.weight`, d, q, 2 * hidden);
      matrix(`${p}attn_k.weight`, d, kvw, 2 * hidden);
      matrix(`${p}attn_v.weight`, d, kvw, hidden);
    }
    if (s.arch === 'qwen3' || s.arch === 'qwen3moe') {
      vector(`${p}attn_q_norm.weight`, s.headDim, 0.1, 1);
      vector(`${p}attn_k_norm.weight`, s.headDim, 0.1, 1);
    }
    if (s.qkvBias) {
      vector(`${p}attn_q.bias`, q, 0.2, 0);
      vector(`${p}attn_k.bias`, kvw, 0.2, 0);
      vector(`${p}attn_v.bias`, kvw, 0.2, 0);
    }
    matrix(`${p}attn_output.weight`, q, d, 1 / Math.sqrt(q));
    vector(`${p}ffn_norm.weight`, d, 0.1, 1);
    if (s.arch === 'phi3') {
      matrix(`${p}ffn_up.weight`, d, 2 * s.ffn, hidden);
      matrix(`${p}ffn_down.weight`, s.ffn, d, 1 / Math.sqrt(s.ffn));
    } else {
      ffn(p, d);
    }
  }
  vector('output_norm.weight', d, 0.1, 1);
  if (s.dense) {
    matrix('dense_2.weight', d, s.dense, hidden);
    matrix('dense_3.weight', s.dense, d, 1 / Math.sqrt(s.dense));
  }
  const ropeDim = s.ropeDim ?? s.headDim;
  if (s.rope === 'llama3') f32('rope_freqs.weight', llama3FreqFactors(ropeDim, s.ropeBase, LLAMA3_1_ROPE));
  if (s.rope === 'longrope') {
    // Phi-3.5/4-style: short factors near 1, long ones growing with the pair index
    f32('rope_factors_long.weight', Float32Array.from({ length: ropeDim / 2 }, (_, i) => 1 + (i / (ropeDim / 2)) ** 2 * 40));
    f32('rope_factors_short.weight', Float32Array.from({ length: ropeDim / 2 }, (_, i) => 1 + (i / (ropeDim / 2)) * 0.1));
  }
  return positioned();
}

/** Llama 3.1/3.2's rope_scaling (config.json) */
const LLAMA3_1_ROPE = { factor: 32, lowFreqFactor: 1, highFreqFactor: 4, origContext: 8192 };
