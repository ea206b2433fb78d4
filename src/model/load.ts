// Opens a model by path: a GGUF file or a Hugging Face model folder. Reads metadata and
// the tokenizer now; tensors are read when an architecture asks for them.
import { statSync } from 'node:fs';
import { ModelFormatError } from '../errors.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { tokenizerFromGGUF } from '../tokenizer/gguf-tokenizer.js';
import { tokenizerFromHFFolder } from '../tokenizer/hf-tokenizer.js';
import { allocateLarge, nativeR16Interleaver } from '../kernels/native.js';
import { openGGUF } from './gguf.js';
import { ggufModelConfig } from './gguf-config.js';
import { readHFConfig } from './hf-config.js';
import { hfTensorSource } from './hf-weights.js';
import { WeightArena } from './weight-arena.js';
import type { ModelConfig, TensorSource } from './weights.js';

export interface LoadedModel {
  readonly path: string;
  readonly format: 'gguf' | 'hf';
  readonly config: ModelConfig;
  readonly tensors: TensorSource;
  readonly tokenizer: Tokenizer;
}

export function loadModel(path: string): LoadedModel {
  let isDir: boolean;
  try {
    isDir = statSync(path).isDirectory();
  } catch {
    throw new ModelFormatError(path, 'no such file or folder');
  }
  if (isDir) {
    const config = readHFConfig(path);
    const tensors = hfTensorSource(path, config);
    return { path, format: 'hf', config, tensors, tokenizer: tokenizerFromHFFolder(path) };
  }
  const arena = new WeightArena(allocateLarge);
  // Q4_0 matrices in the layout the native kernels read fastest, where they have one
  const gguf = openGGUF(path, (bytes) => arena.take(bytes), nativeR16Interleaver());
  const config = ggufModelConfig(path, gguf.metadata, gguf);
  return { path, format: 'gguf', config, tensors: gguf, tokenizer: tokenizerFromGGUF(path, gguf.metadata) };
}

/** The tokenizer of a model path alone (a tokenizer worker's): the GGUF header is read once, no tensor. */
export function loadTokenizer(path: string): Tokenizer {
  let isDir: boolean;
  try {
    isDir = statSync(path).isDirectory();
  } catch {
    throw new ModelFormatError(path, 'no such file or folder');
  }
  if (isDir) return tokenizerFromHFFolder(path);
  const gguf = openGGUF(path);
  try {
    return tokenizerFromGGUF(path, gguf.metadata);
  } finally {
    gguf.close();
  }
}
