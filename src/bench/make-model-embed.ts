// Embedding models for `loom bench make-model` (the bge-small-en-v1.5 / all-minilm-l6-v2 and
// nomic-embed-text-v1.5 shapes): BERT and nomic-bert GGUFs with the names and keys llama.cpp's
// converter writes (bert.* / nomic-bert.*, pooling_type, a WordPiece vocabulary in its
// phantom-space spelling), random weights at the fixtures' scales. Qwen3-Embedding is the
// qwen3 decoder with a pooling_type (make-model.ts).
import type { StreamEntry } from './gguf-stream.js';
import { entry as kv } from './gguf-stream.js';
import type { BenchShapeCore, Matrix, Vector } from './bench-writers.js';

/** llama.cpp's LLAMA_POOLING_TYPE_* of the pooling a bench shape declares */
export const BENCH_POOLING = { mean: 1, cls: 2, last: 3 } as const;
export type BenchPooling = keyof typeof BENCH_POOLING;

export interface EmbedBenchShape extends BenchShapeCore {
  readonly arch: string;
  readonly context: number;
  readonly ropeBase: number;
  readonly rmsEps: number;
  readonly pooling?: BenchPooling;
}

const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
const CONTROL = 3;
const NORMAL = 1;

/**
 * A WordPiece vocabulary of `size` tokens as conversion/bert.py stores it: the specials, then
 * word-initial pieces (▁ + letters) and continuation pieces (letters alone), every one distinct.
 */
export function wordPieceVocab(size: number): { tokens: string[]; tokenTypes: number[] } {
  const tokens = [...SPECIALS];
  const word = (i: number): string => {
    let s = '';
    for (let n = i + 1; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(97 + ((n - 1) % 26)) + s;
    return s;
  };
  for (let i = 0; tokens.length < size; i++) {
    tokens.push(`\u2581${word(i)}`);
    if (tokens.length < size) tokens.push(word(i));
  }
  return { tokens, tokenTypes: tokens.map((_, i) => (i < SPECIALS.length ? CONTROL : NORMAL)) };
}

/** the encoder's tensors: bert (separate q/k/v with biases, learned positions, GELU FFN) or nomic-bert (fused qkv, RoPE, SwiGLU, no biases) */
export function embedBenchTensors(s: EmbedBenchShape, matrix: Matrix, vector: Vector, f32Matrix: Matrix): void {
  const d = s.hidden;
  const hidden = 1 / Math.sqrt(d);
  const nomic = s.arch === 'nomic-bert';
  matrix('token_embd.weight', d, s.vocab, 0.5);
  // kept F32, as the converter keeps them
  f32Matrix('token_types.weight', d, 2, 0.5);
  if (!nomic) f32Matrix('position_embd.weight', d, s.context, 0.5);
  vector('token_embd_norm.weight', d, 0.1, 1);
  vector('token_embd_norm.bias', d, 0.1, 0);
  for (let i = 0; i < s.layers; i++) {
    const p = `blk.${i}.`;
    if (nomic) {
      matrix(`${p}attn_qkv.weight`, d, 3 * d, hidden);
    } else {
      for (const m of ['attn_q', 'attn_k', 'attn_v']) {
        matrix(`${p}${m}.weight`, d, d, hidden);
        vector(`${p}${m}.bias`, d, 0.1, 0);
      }
    }
    matrix(`${p}attn_output.weight`, d, d, hidden);
    if (!nomic) vector(`${p}attn_output.bias`, d, 0.1, 0);
    vector(`${p}attn_output_norm.weight`, d, 0.1, 1);
    vector(`${p}attn_output_norm.bias`, d, 0.1, 0);
    if (nomic) matrix(`${p}ffn_gate.weight`, d, s.ffn, hidden);
    matrix(`${p}ffn_up.weight`, d, s.ffn, hidden);
    if (!nomic) vector(`${p}ffn_up.bias`, s.ffn, 0.1, 0);
    matrix(`${p}ffn_down.weight`, s.ffn, d, 1 / Math.sqrt(s.ffn));
    if (!nomic) vector(`${p}ffn_down.bias`, d, 0.1, 0);
    vector(`${p}layer_output_norm.weight`, d, 0.1, 1);
    vector(`${p}layer_output_norm.bias`, d, 0.1, 0);
  }
}

/** the encoder's keys, after general.* */
export function embedBenchMetadata(s: EmbedBenchShape): StreamEntry[] {
  const a = s.arch;
  const vocab = wordPieceVocab(s.vocab);
  return [
    kv.u32(`${a}.context_length`, s.context),
    kv.u32(`${a}.embedding_length`, s.hidden),
    kv.u32(`${a}.block_count`, s.layers),
    kv.u32(`${a}.feed_forward_length`, s.ffn),
    kv.u32(`${a}.attention.head_count`, s.heads),
    kv.f32(`${a}.attention.layer_norm_epsilon`, s.rmsEps),
    kv.bool(`${a}.attention.causal`, false),
    ...(a === 'nomic-bert' ? [kv.f32(`${a}.rope.freq_base`, s.ropeBase)] : []),
    kv.u32(`${a}.pooling_type`, BENCH_POOLING[s.pooling ?? 'mean']),
    kv.str('tokenizer.ggml.model', 'bert'),
    kv.str('tokenizer.ggml.pre', 'default'),
    kv.strings('tokenizer.ggml.tokens', vocab.tokens),
    kv.i32s('tokenizer.ggml.token_type', vocab.tokenTypes),
    kv.u32('tokenizer.ggml.token_type_count', 2),
    kv.u32('tokenizer.ggml.unknown_token_id', 1),
    kv.u32('tokenizer.ggml.bos_token_id', 2),
    kv.u32('tokenizer.ggml.seperator_token_id', 3),
    kv.u32('tokenizer.ggml.padding_token_id', 0),
    kv.u32('tokenizer.ggml.mask_token_id', 4),
  ];
}
