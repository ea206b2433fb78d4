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
import { InvalidArgumentError } from '../errors.js';
import { writeGGUFStream } from './gguf-stream.js';
import type { StreamEntry, StreamTensor } from './gguf-stream.js';
import { modelVocab } from './model-vocab.js';
import { embedBenchMetadata } from './make-model-embed.js';
import { generalMetadata, modelMetadata, tokenizerMetadata } from './make-model-metadata.js';
import { benchTensors } from './make-model-tensors.js';
import { BENCH_SHAPES, isEncoder } from './bench-shapes.js';
import type { BenchShape, BenchShapeName } from './bench-shapes.js';
import { defaultBenchWeights } from './bench-types.js';
import type { BenchWeightOptions } from './bench-types.js';

/** bump when the generator's output changes, so cached files are rebuilt */
const GENERATOR_VERSION = 3;

export interface MakeModelOptions extends BenchWeightOptions {
  readonly shape: BenchShapeName;
  /** fewer (or more) layers than the shape has: a draft model with the shape's vocabulary */
  readonly layers?: number;
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

/** <project>/dist/bench-models (this file runs from dist/src/bench/) */
export const BENCH_MODELS_DIR = fileURLToPath(new URL('../../bench-models/', import.meta.url));
