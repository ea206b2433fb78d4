// A Hugging Face model folder: config.json plus safetensors weights, read lazily.
import { statSync } from 'node:fs';
import { ModelFormatError } from '../errors.js';
import { readHFConfig } from './hf-config.js';
import { hfTensorSource } from './hf-weights.js';
import type { HFTensorSource } from './hf-weights.js';
import type { ModelConfig } from './weights.js';

export interface HFModel {
  readonly dir: string;
  readonly config: ModelConfig;
  readonly tensors: HFTensorSource;
}

/** Opens `dir`: checks it is a folder, parses config.json, opens the weights' headers. */
export function openHFModel(dir: string): HFModel {
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    throw new ModelFormatError(dir, 'no such folder');
  }
  if (!isDir) throw new ModelFormatError(dir, 'not a folder (a Hugging Face model is a folder with config.json and safetensors)');
  const config = readHFConfig(dir);
  const tensors = hfTensorSource(dir, config);
  checkShapes(dir, config, tensors);
  return { dir, config, tensors };
}

/** The embedding's ggml dims must be [hiddenSize, vocabSize] (read from the header only). */
function checkShapes(dir: string, config: ModelConfig, tensors: HFTensorSource): void {
  const dims = tensors.dimsOf('token_embd.weight');
  if (dims === undefined) throw new ModelFormatError(dir, 'no token embedding tensor');
  if (dims[0] !== config.hiddenSize || dims[1] !== config.vocabSize) {
    throw new ModelFormatError(
      dir,
      `token embedding has shape [${[...dims].reverse().join(', ')}] but config.json says vocab_size ${config.vocabSize}, hidden size ${config.hiddenSize}`,
    );
  }
}
