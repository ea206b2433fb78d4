// `loom bench make-model`: a random-weight GGUF file of a real model's shape, for benchmarks.
// Weights are seeded (the same shape, type and seed give the same bytes) with the scales of
// the test fixtures: hidden projections near unit gain, so activations neither vanish nor
// blow up over 24-30 layers; tied embeddings of std 1 give peaked logits. Matrices take the
// requested type; for q4_k a matrix whose rows are not a multiple of 256 values (K-quant
// blocks) is stored as Q8_0 instead; q4_k_m and q5_k_m mix types as llama-quantize's presets
// do (quant-mix.ts: Q6_K promotions, Q5_0/Q5_1/Q8_0 fallbacks). Norm weights and biases stay
// F32, as llama.cpp keeps them. With weights 'blocks' (mxfp4_moe's default) quantized matrices
// are random blocks drawn directly (random-blocks.ts) instead of quantized Gaussians: the same
// RMS, minutes instead of hours for a whole-size file.
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Rng } from '../engine/rng.js';
import { InvalidArgumentError } from '../errors.js';
import { GGMLType, rowBytes } from '../tensor/weight-types.js';
import { quantize } from '../tensor/quant/quantize.js';
import { llama3FreqFactors, longropeAttnFactor } from '../tensor/rope-scaling.js';
import { gemma4BenchMetadata, gemma4BenchTensors } from './make-model-gemma4.js';
import type { Gemma4BenchShape } from './make-model-gemma4.js';
import { gptOssBenchMetadata, gptOssBenchTensors } from './make-model-gptoss.js';
import type { GptOssBenchShape } from './make-model-gptoss.js';
import { mixType } from './quant-mix.js';
import { randomBlockRows } from './random-blocks.js';
import type { AttnVPosition } from './quant-mix.js';
import { moeBenchMetadata, moeBenchTensors } from './make-model-moe.js';
import type { MoeBenchShape } from './make-model-moe.js';
import { entry as kv, writeGGUFStream } from './gguf-stream.js';
import type { StreamEntry, StreamTensor } from './gguf-stream.js';
import { modelVocab } from './model-vocab.js';
import { BENCH_POOLING, embedBenchMetadata, embedBenchTensors } from './make-model-embed.js';
import type { BenchPooling } from './make-model-embed.js';
import type { ModelVocab } from './model-vocab.js';

export interface BenchShape {
  readonly arch: 'llama' | 'qwen2' | 'qwen3' | 'phi3' | 'gemma3' | 'gemma4' | 'qwen35' | 'qwen3moe' | 'qwen35moe' | 'gpt-oss' | 'bert' | 'nomic-bert' | 'gemma-embedding';
  readonly name: string;
  readonly hidden: number;
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly ffn: number;
  readonly vocab: number;
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
export const BENCH_TYPES = ['q8_0', 'q4_k', 'q4_k_m', 'q5_k_m', 'f16', 'q4_0', 'mxfp4_moe'] as const;
export type BenchWeightType = (typeof BENCH_TYPES)[number];

/** how random weights are made: Gaussians quantized (slow in TypeScript), or random blocks drawn directly */
export const BENCH_WEIGHTS = ['quantized', 'blocks'] as const;
export type BenchWeights = (typeof BENCH_WEIGHTS)[number];

/** blocks where a whole-size file is the point and quantizing would take hours (gpt-oss-20b's 12 GB of MXFP4) */
export function defaultBenchWeights(type: BenchWeightType): BenchWeights {
  return type === 'mxfp4_moe' ? 'blocks' : 'quantized';
}

/** llama_ftype: MOSTLY_Q8_0, MOSTLY_Q4_K_S, MOSTLY_Q4_K_M, MOSTLY_Q5_K_M, MOSTLY_F16, MOSTLY_Q4_0, MOSTLY_MXFP4_MOE */
const FILE_TYPE: Record<BenchWeightType, number> = { q8_0: 7, q4_k: 14, q4_k_m: 15, q5_k_m: 17, f16: 1, q4_0: 2, mxfp4_moe: 38 };
/** bump when the generator's output changes, so cached files are rebuilt */
const GENERATOR_VERSION = 3;

export interface MakeModelOptions {
  readonly shape: BenchShapeName;
  readonly type: BenchWeightType;
  readonly seed: number;
  /** fewer (or more) layers than the shape has: a draft model with the shape's vocabulary */
  readonly layers?: number;
  /** default: defaultBenchWeights(type) */
  readonly weights?: BenchWeights;
}

/** The type matrix `name` (rows of `rowLength` values, bench models tie output to token_embd) is stored in. */
export function matrixType(type: BenchWeightType, name: string, rowLength: number, layers: number, attnV?: AttnVPosition): GGMLType {
  switch (type) {
    case 'q8_0': return GGMLType.Q8_0;
    case 'f16': return GGMLType.F16;
    case 'q4_k': return rowLength % 256 !== 0 ? GGMLType.Q8_0 : GGMLType.Q4_K;
    case 'q4_0': return GGMLType.Q4_0;
    // llama-quantize's MXFP4_MOE: every 2-D matrix Q8_0 (the experts' 3-D tensors MXFP4: expertType)
    case 'mxfp4_moe': return GGMLType.Q8_0;
    default: return mixType(type, name, rowLength, layers, true, attnV);
  }
}

/** where `ensureBenchModel` caches a file: dist/bench-models/<shape>-<type>-s<seed>-v<n>.gguf */
export function benchModelPath(dir: string, o: MakeModelOptions): string {
  const blocks = (o.weights ?? defaultBenchWeights(o.type)) === 'blocks' ? '-blocks' : '';
  return join(dir, `${o.shape}${o.layers !== undefined ? `-l${o.layers}` : ''}-${o.type}${blocks}-s${o.seed}-v${GENERATOR_VERSION}.gguf`);
}

/** The cached file for these options, written first when missing (via a temporary name). */
export function ensureBenchModel(dir: string, o: MakeModelOptions, log?: (line: string) => void): { path: string; made: boolean } {
  const path = benchModelPath(dir, o);
  if (existsSync(path)) return { path, made: false };
  mkdirSync(dir, { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    makeModel(tmp, o, log);
    renameSync(tmp, path);
  } finally {
    rmSync(tmp, { force: true });
  }
  return { path, made: true };
}

/** Writes the model to `path`. */
export function makeModel(path: string, o: MakeModelOptions, log?: (line: string) => void): void {
  const { name, metadata, tensors } = benchModelContents(o);
  log?.(`make-model: writing a ${name}-shaped ${o.type} model (${o.weights ?? defaultBenchWeights(o.type)} weights), seed ${o.seed} …`);
  writeGGUFStream(path, metadata, tensors);
}

/** The model's keys and tensors (each tensor's bytes made only when asked for). */
export function benchModelContents(o: MakeModelOptions): { name: string; metadata: StreamEntry[]; tensors: StreamTensor[] } {
  const base: BenchShape = BENCH_SHAPES[o.shape];
  if (!base) throw new InvalidArgumentError(`unknown shape "${o.shape}" (known: ${Object.keys(BENCH_SHAPES).join(', ')})`);
  if (o.layers !== undefined && base.linear && o.layers % base.linear.interval !== 0) throw new InvalidArgumentError(`--layers of a ${base.name} shape must be a multiple of ${base.linear.interval}`);
  const shape: BenchShape = o.layers !== undefined ? { ...base, layers: o.layers, name: `${base.name} (${o.layers} layers)` } : base;
  if (isEncoder(shape)) return { name: shape.name, metadata: [...generalMetadata(shape, o), ...embedBenchMetadata(shape)], tensors: benchTensors(shape, o) };
  const vocab = modelVocab(shape.vocab, !/^(qwen2|qwen3|qwen3moe|qwen35moe)$/.test(shape.arch));
  return { name: shape.name, metadata: [...modelMetadata(shape, o), ...tokenizerMetadata(shape, vocab)], tensors: benchTensors(shape, o) };
}

function isEncoder(s: BenchShape): boolean {
  return s.arch === 'bert' || s.arch === 'nomic-bert';
}

function benchTensors(s: BenchShape, o: MakeModelOptions): StreamTensor[] {
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
        matrix(`${p}attn_q.weight`, d, 2 * q, 2 * hidden);
        matrix(`${p}attn_k.weight`, d, kvw, 2 * hidden);
        matrix(`${p}attn_v.weight`, d, kvw, hidden);
        vector(`${p}attn_q_norm.weight`, s.headDim, 0.1, 1);
        vector(`${p}attn_k_norm.weight`, s.headDim, 0.1, 1);
        matrix(`${p}attn_output.weight`, q, d, 1 / Math.sqrt(q));
      }
      vector(`${p}post_attention_norm.weight`, d, 0.1, 1);
      ffn(p, d);
      continue;
    }
    if (gemma) {
      // Gemma 3's block (norms stored as 1 + w, as converted)
      vector(`${p}attn_norm.weight`, d, 0.1, 1);
      matrix(`${p}attn_q.weight`, d, q, 2 * hidden);
      matrix(`${p}attn_k.weight`, d, kvw, 2 * hidden);
      matrix(`${p}attn_v.weight`, d, kvw, hidden);
      vector(`${p}attn_q_norm.weight`, s.headDim, 0.1, 1);
      vector(`${p}attn_k_norm.weight`, s.headDim, 0.1, 1);
      matrix(`${p}attn_output.weight`, q, d, 1 / Math.sqrt(q));
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
/** Phi-4-mini's original_max_position_embeddings */
const PHI_ORIG_CONTEXT = 4096;

/**
 * A matrix of outF rows of inF N(0, std²) values in `type`, generated and quantized a few
 * million values at a time (Gemma 4's per-layer embedding has 2.3G): the values are those of
 * one pass over the seeded stream, since every chunk holds an even number of them.
 */
export function quantizedRows(type: GGMLType, inF: number, outF: number, std: number, seed: number): Uint8Array {
  const rng = new Rng(seed);
  const row = rowBytes(type, inF)!;
  const out = new Uint8Array(row * outF);
  const rows = Math.max(1, Math.floor(CHUNK_VALUES / inF));
  for (let r = 0; r < outF; r += rows) {
    const n = Math.min(rows, outF - r);
    out.set(quantize(type, gaussian(n * inF, std, 0, rng), inF), r * row);
  }
  return out;
}
const CHUNK_VALUES = 1 << 22;

/** n samples of mean + std·N(0, 1) (Box–Muller over sfc32), as f32 */
export function gaussian(n: number, std: number, mean: number, rng: Rng): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const r = std * Math.sqrt(-2 * Math.log(1 - rng.next()));
    const a = 2 * Math.PI * rng.next();
    out[i] = mean + r * Math.cos(a);
    if (i + 1 < n) out[i + 1] = mean + r * Math.sin(a);
  }
  return out;
}

function modelMetadata(s: BenchShape, o: MakeModelOptions): StreamEntry[] {
  const experts = s.moe ? moeBenchMetadata(s.arch, s.moe) : [];
  if (s.gemma4) {
    const common = commonMetadata(s, o).filter((e) => !/\.(feed_forward_length|attention\.head_count_kv)$/.test(e.key));
    return [...common, ...gemma4BenchMetadata(s, s.gemma4), ...experts];
  }
  if (s.gptOss) return [...commonMetadata(s, o), ...gptOssBenchMetadata(s, s.gptOss)];
  return [...commonMetadata(s, o), ...experts];
}

function generalMetadata(s: BenchShape, o: MakeModelOptions): StreamEntry[] {
  return [
    kv.str('general.architecture', s.arch),
    kv.str('general.name', `${s.name} (random weights, loom bench, seed ${o.seed})`),
    kv.u32('general.file_type', FILE_TYPE[o.type]),
    kv.u32('general.quantization_version', 2),
  ];
}

function commonMetadata(s: BenchShape, o: MakeModelOptions): StreamEntry[] {
  const a = s.arch;
  return [
    ...generalMetadata(s, o),
    ...(s.pooling ? [kv.u32(`${a}.pooling_type`, BENCH_POOLING[s.pooling])] : []),
    ...(s.dense
      ? [kv.u32(`${a}.dense_2_feat_in`, s.hidden), kv.u32(`${a}.dense_2_feat_out`, s.dense), kv.u32(`${a}.dense_3_feat_in`, s.dense), kv.u32(`${a}.dense_3_feat_out`, s.hidden)]
      : []),
    kv.u32(`${a}.context_length`, s.context),
    kv.u32(`${a}.embedding_length`, s.hidden),
    kv.u32(`${a}.block_count`, s.layers),
    kv.u32(`${a}.feed_forward_length`, s.ffn),
    kv.u32(`${a}.attention.head_count`, s.heads),
    kv.u32(`${a}.attention.head_count_kv`, s.kvHeads),
    kv.f32(`${a}.attention.layer_norm_rms_epsilon`, s.rmsEps),
    kv.f32(`${a}.rope.freq_base`, s.ropeBase),
    ...(a === 'qwen3' || a === 'qwen3moe' ? [kv.u32(`${a}.attention.key_length`, s.headDim), kv.u32(`${a}.attention.value_length`, s.headDim)] : []),
    ...(a === 'llama' ? [kv.u32(`${a}.rope.dimension_count`, s.headDim), kv.u32(`${a}.vocab_size`, s.vocab)] : []),
    ...(a === 'phi3'
      ? [
          kv.u32(`${a}.rope.dimension_count`, s.ropeDim ?? s.headDim),
          kv.u32(`${a}.rope.scaling.original_context_length`, PHI_ORIG_CONTEXT),
          kv.f32(`${a}.rope.scaling.attn_factor`, longropeAttnFactor(s.context, PHI_ORIG_CONTEXT)),
          kv.u32(`${a}.attention.sliding_window`, 0),
        ]
      : []),
    ...(s.linear
      ? [
          kv.u32(`${a}.attention.key_length`, s.headDim),
          kv.u32(`${a}.attention.value_length`, s.headDim),
          kv.u32(`${a}.rope.dimension_count`, s.ropeDim ?? s.headDim),
          kv.i32s(`${a}.rope.dimension_sections`, [...s.linear.ropeSections]),
          kv.u32(`${a}.ssm.conv_kernel`, s.linear.convKernel),
          kv.u32(`${a}.ssm.state_size`, s.linear.stateSize),
          kv.u32(`${a}.ssm.group_count`, s.linear.kHeads),
          kv.u32(`${a}.ssm.time_step_rank`, s.linear.vHeads),
          kv.u32(`${a}.ssm.inner_size`, s.linear.vHeads * s.linear.stateSize),
          kv.u32(`${a}.full_attention_interval`, s.linear.interval),
        ]
      : []),
    ...(s.slidingWindow
      ? [
          kv.u32(`${a}.attention.key_length`, s.headDim),
          kv.u32(`${a}.attention.value_length`, s.headDim),
          kv.u32(`${a}.attention.sliding_window`, s.slidingWindow.size),
          kv.f32(`${a}.rope.freq_base_swa`, s.slidingWindow.ropeBase),
        ]
      : []),
  ];
}

function tokenizerMetadata(s: BenchShape, v: ModelVocab): StreamEntry[] {
  return [
    kv.str('tokenizer.ggml.model', 'gpt2'),
    kv.str('tokenizer.ggml.pre', s.pre),
    kv.strings('tokenizer.ggml.tokens', v.tokens),
    kv.i32s('tokenizer.ggml.token_type', v.tokenTypes),
    kv.strings('tokenizer.ggml.merges', v.merges),
    kv.u32('tokenizer.ggml.bos_token_id', v.bosId),
    kv.u32('tokenizer.ggml.eos_token_id', v.eosId),
    kv.u32('tokenizer.ggml.padding_token_id', v.eosId),
    kv.bool('tokenizer.ggml.add_bos_token', false),
    kv.str('tokenizer.chat_template', v.chatTemplate),
  ];
}

/** <project>/dist/bench-models (this file runs from dist/src/bench/) */
export const BENCH_MODELS_DIR = fileURLToPath(new URL('../../bench-models/', import.meta.url));
