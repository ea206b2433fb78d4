// Opens a model by path: a GGUF file or a Hugging Face model folder. Reads metadata and
// the tokenizer now; tensors are served when an architecture asks for them, in place from a
// mapping of the file unless the options say otherwise (model-memory.ts).
import { statSync } from 'node:fs';
import { ModelFormatError } from '../errors.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { tokenizerFromGGUF } from '../tokenizer/gguf-tokenizer.js';
import { tokenizerFromHFFolder } from '../tokenizer/hf-tokenizer.js';
import { nativeR16Interleaver } from '../kernels/native.js';
import { openGGUF } from './gguf.js';
import { ggufModelConfig } from './gguf-config.js';
import { readHFConfig } from './hf-config.js';
import { hfTensorSource } from './hf-weights.js';
import { ModelMemory } from './model-memory.js';
import type { LoadOptions } from './model-memory.js';
import type { ModelConfig, TensorSource } from './weights.js';

export interface LoadedModel {
  readonly path: string;
  readonly format: 'gguf' | 'hf';
  readonly config: ModelConfig;
  readonly tensors: TensorSource;
  readonly tokenizer: Tokenizer;
  /** Unmaps the model's files and closes them: its tensors read as empty afterwards. */
  dispose(): void;
}

export type { LoadOptions } from './model-memory.js';

export function loadModel(path: string, opts: LoadOptions = {}): LoadedModel {
  let isDir: boolean;
  try {
    isDir = statSync(path).isDirectory();
  } catch {
    throw new ModelFormatError(path, 'no such file or folder');
  }
  const memory = new ModelMemory(opts);
  if (isDir) {
    const config = readHFConfig(path);
    const tensors = hfTensorSource(path, config, memory.inPlace);
    return { path, format: 'hf', config, tensors, tokenizer: tokenizerFromHFFolder(path), dispose: () => memory.release() };
  }
  // Q4_0 and Q8_0 matrices in the layout the native kernels read fastest, where they have one
  const gguf = openGGUF(path, memory.take, nativeR16Interleaver(), memory.inPlace);
  try {
    const config = ggufModelConfig(path, gguf.metadata, gguf);
    const tokenizer = tokenizerFromGGUF(path, gguf.metadata);
    const dispose = (): void => {
      memory.release();
      gguf.close();
    };
    return { path, format: 'gguf', config, tensors: gguf, tokenizer, dispose };
  } catch (e) {
    memory.release();
    gguf.close();
    throw e;
  }
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
