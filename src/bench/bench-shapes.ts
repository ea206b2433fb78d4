// The shapes `loom bench make-model` writes random-weight GGUF files of: each a real model's
// sizes as its GGUF carries them (heads, widths, vocabulary, context, RoPE), with the family
// parts (sliding windows, Gated DeltaNet, Gemma 4, experts, pooling) its writers read.
import type { Gemma4BenchShape } from './make-model-gemma4.js';
import type { GptOssBenchShape } from './make-model-gptoss.js';
import type { MoeBenchShape } from './make-model-moe.js';
import type { BenchPooling } from './make-model-embed.js';
import type { BenchShapeCore } from './bench-writers.js';

/** a real model's shape: the sizes every writer reads (BenchShapeCore), then the rest */
export interface BenchShape extends BenchShapeCore {
  readonly arch: 'llama' | 'qwen2' | 'qwen3' | 'phi3' | 'gemma3' | 'gemma4' | 'qwen35' | 'qwen3moe' | 'qwen35moe' | 'gpt-oss' | 'bert' | 'nomic-bert' | 'gemma-embedding';
  readonly name: string;
  readonly context: number;
  readonly ropeBase: number;
  readonly rmsEps: number;
  /** q/k/v projections carry biases (Qwen2) */
  readonly qkvBias: boolean;
  /** GGUF tokenizer.ggml.pre */
  readonly pre: 'smollm' | 'qwen2' | 'llama-bpe';
  /** rotated dims per head when not all (Phi-4-mini: 96 of 128) */
  readonly ropeDim?: number;
  /** RoPE scaling as the real model's GGUF carries it: Llama 3's rope_freqs tensor, Phi's longrope factor pair */
  readonly rope?: 'llama3' | 'longrope';
  /** Gemma 3: sliding window of 5 in 6 layers and their RoPE base */
  readonly slidingWindow?: { readonly size: number; readonly ropeBase: number };
  /** Qwen3.5: Gated DeltaNet layers (all but every `interval`-th), their ssm.* sizes, the RoPE sections */
  readonly linear?: {
    readonly interval: number;
    readonly convKernel: number;
    readonly stateSize: number;
    readonly kHeads: number;
    readonly vHeads: number;
    readonly ropeSections: readonly number[];
  };
  /** Gemma 4: per-layer embeddings, shared-KV layers, the sliding layers' own heads (headDim: the global layers') */
  readonly gemma4?: Gemma4BenchShape;
  /** routed experts in place of (Gemma 4: beside) the dense FFN */
  readonly moe?: MoeBenchShape;
  /** gpt-oss: routed experts (ffn: each expert's width), the sliding window of every other layer, YaRN */
  readonly gptOss?: GptOssBenchShape;
  /** an embedding model: the file's pooling_type (bert, nomic-bert: rmsEps is their LayerNorm epsilon) */
  readonly pooling?: BenchPooling;
  /** EmbeddingGemma's sentence-transformers Dense modules: hidden → this → hidden after pooling */
  readonly dense?: number;
}

export const BENCH_SHAPES = {
  'smollm2-135m': {
    arch: 'llama', name: 'SmolLM2-135M', hidden: 576, layers: 30, heads: 9, kvHeads: 3, headDim: 64, ffn: 1536,
    vocab: 49152, context: 8192, ropeBase: 100000, rmsEps: 1e-5, qkvBias: false, pre: 'smollm',
  },
  'qwen2.5-0.5b': {
    arch: 'qwen2', name: 'Qwen2.5-0.5B', hidden: 896, layers: 24, heads: 14, kvHeads: 2, headDim: 64, ffn: 4864,
    vocab: 151936, context: 32768, ropeBase: 1000000, rmsEps: 1e-6, qkvBias: true, pre: 'qwen2',
  },
  'qwen2.5-1.5b': {
    arch: 'qwen2', name: 'Qwen2.5-1.5B', hidden: 1536, layers: 28, heads: 12, kvHeads: 2, headDim: 128, ffn: 8960,
    vocab: 151936, context: 32768, ropeBase: 1000000, rmsEps: 1e-6, qkvBias: true, pre: 'qwen2',
  },
  // heads of 128 although 2560 / 32 = 80 (the GGUF's key_length), per-head q/k RMSNorm, tied embeddings
  'qwen3-4b': {
    arch: 'qwen3', name: 'Qwen3-4B', hidden: 2560, layers: 36, heads: 32, kvHeads: 8, headDim: 128, ffn: 9728,
    vocab: 151936, context: 40960, ropeBase: 1000000, rmsEps: 1e-6, qkvBias: false, pre: 'qwen2',
  },
  'llama-3.2-1b': {
    arch: 'llama', name: 'Llama-3.2-1B', hidden: 2048, layers: 16, heads: 32, kvHeads: 8, headDim: 64, ffn: 8192,
    vocab: 128256, context: 131072, ropeBase: 500000, rmsEps: 1e-5, qkvBias: false, pre: 'llama-bpe', rope: 'llama3',
  },
  // fused qkv and gate|up as Phi-3 GGUFs store them; the real tokenizer's pre-tokenizer is gpt-4o,
  // a byte-level BPE like the others (the benchmark measures the model, not the split regex)
  'phi-4-mini': {
    arch: 'phi3', name: 'Phi-4-mini', hidden: 3072, layers: 32, heads: 24, kvHeads: 8, headDim: 128, ropeDim: 96, ffn: 8192,
    vocab: 200064, context: 131072, ropeBase: 10000, rmsEps: 1e-5, qkvBias: false, pre: 'llama-bpe', rope: 'longrope',
  },
  // Gemma 3 1B's shape (a byte-level BPE vocabulary of its size stands in for its SentencePiece one)
  'gemma3-1b': {
    arch: 'gemma3', name: 'Gemma-3-1B', hidden: 1152, layers: 26, heads: 4, kvHeads: 1, headDim: 256, ffn: 6912,
    vocab: 262144, context: 32768, ropeBase: 1000000, rmsEps: 1e-6, qkvBias: false, pre: 'smollm',
    slidingWindow: { size: 512, ropeBase: 10000 },
  },
  // Gemma 3 4B's text decoder (the vision benchmark's Gemma 3 shape; its SigLIP projector is
  // make-mmproj.ts's gemma3-4b); its global layers' linear RoPE scaling is left out (no cost)
  'gemma3-4b': {
    arch: 'gemma3', name: 'Gemma-3-4B', hidden: 2560, layers: 34, heads: 8, kvHeads: 4, headDim: 256, ffn: 10240,
    vocab: 262144, context: 131072, ropeBase: 1000000, rmsEps: 1e-6, qkvBias: false, pre: 'smollm',
    slidingWindow: { size: 1024, ropeBase: 10000 },
  },
  // Qwen3.5-2B's shape as llama.cpp's 24-layer, 2048-wide qwen35 case: 18 Gated DeltaNet layers
  // (16 key and 16 value heads of 128) and 6 gated attention layers (8 heads of 256, a quarter
  // rotated), tied embeddings; a qwen2 BPE vocabulary of its size stands in for its own
  'qwen3.5-2b': {
    arch: 'qwen35', name: 'Qwen3.5-2B', hidden: 2048, layers: 24, heads: 8, kvHeads: 2, headDim: 256, ropeDim: 64, ffn: 6144,
    vocab: 248320, context: 262144, ropeBase: 10000000, rmsEps: 1e-6, qkvBias: false, pre: 'qwen2',
    linear: { interval: 4, convKernel: 4, stateSize: 128, kHeads: 16, vHeads: 16, ropeSections: [11, 11, 10, 0] },
  },
  // Gemma 4 E2B's text decoder as its config.json gives it (hidden 1536, 35 layers, every 5th
  // global; sliding layers 8 heads of 256, global 8 of 512, one KV head each; the last 20 layers
  // share the KV of layers 13/14 and have double-wide FFNs; per-layer inputs of 256; tied)
  'gemma-4-e2b': {
    arch: 'gemma4', name: 'Gemma-4-E2B', hidden: 1536, layers: 35, heads: 8, kvHeads: 1, headDim: 512, ffn: 6144,
    vocab: 262144, context: 131072, ropeBase: 1000000, rmsEps: 1e-6, qkvBias: false, pre: 'smollm',
    gemma4: {
      swaHeadDim: 256, swaKvHeads: 1, globalEvery: 5, sharedKvLayers: 20, perLayerInput: 256, window: 512,
      swaRopeBase: 10000, partialRotary: 0.25, finalSoftcap: 30, doubleWideMlp: true,
    },
  },
  // Qwen3-30B-A3B (and Qwen3-Coder-30B-A3B): 48 layers of 32 query / 4 KV heads of 128 and
  // 128 experts of 768, 8 used per token, softmax routing renormalized over the 8 (tied here,
  // as every bench shape: the head reads the same bytes either way)
  'qwen3-30b-a3b': {
    arch: 'qwen3moe', name: 'Qwen3-30B-A3B', hidden: 2048, layers: 48, heads: 32, kvHeads: 4, headDim: 128, ffn: 6144,
    vocab: 151936, context: 40960, ropeBase: 1000000, rmsEps: 1e-6, qkvBias: false, pre: 'qwen2',
    moe: { experts: 128, used: 8, expertFfn: 768 },
  },
  // Qwen3.5-35B-A3B: the Qwen3.5 hybrid (30 Gated DeltaNet layers of 16 key / 32 value heads,
  // 10 gated attention layers of 16 heads of 256, 2 KV heads) with 256 experts of 512, 8 used,
  // and a shared expert of 512 in every layer (tied here, as above)
  'qwen3.5-35b-a3b': {
    arch: 'qwen35moe', name: 'Qwen3.5-35B-A3B', hidden: 2048, layers: 40, heads: 16, kvHeads: 2, headDim: 256, ropeDim: 64, ffn: 512,
    vocab: 248320, context: 262144, ropeBase: 10000000, rmsEps: 1e-6, qkvBias: false, pre: 'qwen2',
    linear: { interval: 4, convKernel: 4, stateSize: 128, kHeads: 16, vHeads: 32, ropeSections: [11, 11, 10, 0] },
    moe: { experts: 256, used: 8, expertFfn: 512, sharedFfn: 512 },
  },
  // Gemma 4 26B-A4B's text decoder: 30 layers, every 6th global (16 heads of 512, 2 KV heads,
  // V = K), sliding ones 16 heads of 256 with 8 KV heads over a window of 1024; a dense GeGLU
  // MLP of 2112 beside 128 experts of 704, 8 used; no per-layer inputs or shared KV; tied
  'gemma4-26b-a4b': {
    arch: 'gemma4', name: 'Gemma-4-26B-A4B', hidden: 2816, layers: 30, heads: 16, kvHeads: 2, headDim: 512, ffn: 2112,
    vocab: 262144, context: 262144, ropeBase: 1000000, rmsEps: 1e-6, qkvBias: false, pre: 'smollm',
    gemma4: {
      swaHeadDim: 256, swaKvHeads: 8, globalEvery: 6, sharedKvLayers: 0, perLayerInput: 0, window: 1024,
      swaRopeBase: 10000, partialRotary: 0.25, finalSoftcap: 30, doubleWideMlp: false, globalKEqV: true,
    },
    moe: { experts: 128, used: 8, expertFfn: 704, gemma4: true },
  },
  // gpt-oss-20b as its config.json gives it: 24 layers of 2880, 64 heads of 64 (8 KV heads), 32
  // experts of 2880 (4 a token), every other layer over a window of 128, YaRN ×32 over 4096;
  // its o200k_harmony vocabulary's size, a byte-level BPE standing in (llama-quantize's mix: --type mxfp4_moe)
  'gpt-oss-20b': {
    arch: 'gpt-oss', name: 'gpt-oss-20b', hidden: 2880, layers: 24, heads: 64, kvHeads: 8, headDim: 64, ffn: 2880,
    vocab: 201088, context: 131072, ropeBase: 150000, rmsEps: 1e-5, qkvBias: true, pre: 'llama-bpe',
    gptOss: { experts: 32, expertsUsed: 4, window: 128, yarnFactor: 32, yarnOrigContext: 4096 },
  },
  // embedding models (issue 39's benchmark): BGE-small and all-MiniLM-L6 (BERT, 384 wide, WordPiece),
  // nomic-embed-text v1.5 (nomic-bert: RoPE base 1000, SwiGLU, trained context 2048) and
  // Qwen3-Embedding-0.6B (the Qwen3-0.6B decoder pooling its last token; tied embeddings)
  'bge-small-en-v1.5': {
    arch: 'bert', name: 'bge-small-en-v1.5', hidden: 384, layers: 12, heads: 12, kvHeads: 12, headDim: 32, ffn: 1536,
    vocab: 30522, context: 512, ropeBase: 10000, rmsEps: 1e-12, qkvBias: true, pre: 'smollm', pooling: 'cls',
  },
  'all-minilm-l6-v2': {
    arch: 'bert', name: 'all-MiniLM-L6-v2', hidden: 384, layers: 6, heads: 12, kvHeads: 12, headDim: 32, ffn: 1536,
    vocab: 30522, context: 512, ropeBase: 10000, rmsEps: 1e-12, qkvBias: true, pre: 'smollm', pooling: 'mean',
  },
  'nomic-embed-text-v1.5': {
    arch: 'nomic-bert', name: 'nomic-embed-text-v1.5', hidden: 768, layers: 12, heads: 12, kvHeads: 12, headDim: 64, ffn: 3072,
    vocab: 30528, context: 2048, ropeBase: 1000, rmsEps: 1e-12, qkvBias: false, pre: 'smollm', pooling: 'mean',
  },
  // EmbeddingGemma-300m: Gemma 3's layers as an encoder (24 layers, 3 heads of 256, 1 KV head,
  // every 6th layer global, the others a symmetric window of 512), mean pooling, then the Dense
  // modules 768 → 3072 → 768 (a converter run with --sentence-transformers-dense-modules)
  'embeddinggemma-300m': {
    arch: 'gemma-embedding', name: 'EmbeddingGemma-300m', hidden: 768, layers: 24, heads: 3, kvHeads: 1, headDim: 256, ffn: 1152,
    vocab: 262144, context: 2048, ropeBase: 1000000, rmsEps: 1e-6, qkvBias: false, pre: 'smollm',
    slidingWindow: { size: 512, ropeBase: 10000 }, pooling: 'mean', dense: 3072,
  },
  'qwen3-embedding-0.6b': {
    arch: 'qwen3', name: 'Qwen3-Embedding-0.6B', hidden: 1024, layers: 28, heads: 16, kvHeads: 8, headDim: 128, ffn: 3072,
    vocab: 151669, context: 32768, ropeBase: 1000000, rmsEps: 1e-6, qkvBias: false, pre: 'qwen2', pooling: 'last',
  },
} as const satisfies Record<string, BenchShape>;

export type BenchShapeName = keyof typeof BENCH_SHAPES;

/** BERT-style encoders (bert, nomic-bert): their own tensors and keys, no byte-level BPE tokenizer */
export function isEncoder(s: BenchShape): boolean {
  return s.arch === 'bert' || s.arch === 'nomic-bert';
}
