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
import { gptOssBenchMetadata, gptOssBenchTensors } from './make-model-gptoss.js';
import { mixType } from './quant-mix.js';
import { randomBlockRows } from './random-blocks.js';
import type { AttnVPosition } from './quant-mix.js';
import { moeBenchMetadata, moeBenchTensors } from './make-model-moe.js';
import { entry as kv, writeGGUFStream } from './gguf-stream.js';
import type { StreamEntry, StreamTensor } from './gguf-stream.js';
import { modelVocab } from './model-vocab.js';
import { BENCH_POOLING, embedBenchMetadata, embedBenchTensors } from './make-model-embed.js';
import type { ModelVocab } from './model-vocab.js';
import { BENCH_SHAPES, isEncoder } from './bench-shapes.js';
import type { BenchShape, BenchShapeName } from './bench-shapes.js';

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
