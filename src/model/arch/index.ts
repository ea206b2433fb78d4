import type { ModelConfig, TensorSource } from '../weights.js';
import type { Architecture } from './architecture.js';
import { BertArchitecture } from './bert.js';
import { Gpt2Architecture } from './gpt2.js';
import { GemmaArchitecture } from './gemma.js';
import { Gemma4Architecture } from './gemma4.js';
import { LlamaArchitecture } from './llama.js';
import { Qwen35Architecture } from './qwen35.js';
import { Qwen3MoeArchitecture } from './qwen3moe.js';
import { GptOssArchitecture } from './gpt-oss.js';

export type { Architecture } from './architecture.js';

/** `contextLength`: the per-sequence context the caller serves (default the model's); longrope picks its factors by it. */
export function createArchitecture(config: ModelConfig, tensors: TensorSource, contextLength?: number): Architecture {
  switch (config.arch) {
    case 'llama':
    case 'qwen2':
    case 'qwen3':
    case 'phi3':
    case 'smollm3':
      return new LlamaArchitecture(config, tensors, contextLength);
    case 'gpt2':
      return new Gpt2Architecture(config, tensors);
    case 'gemma2':
    case 'gemma3':
    case 'gemma-embedding':
      return new GemmaArchitecture(config, tensors, contextLength);
    case 'qwen35':
    case 'qwen35moe':
      return new Qwen35Architecture(config, tensors);
    case 'gemma4':
      return new Gemma4Architecture(config, tensors, contextLength);
    case 'qwen3moe':
      return new Qwen3MoeArchitecture(config, tensors, contextLength);
    case 'gpt-oss':
      return new GptOssArchitecture(config, tensors, contextLength);
    case 'bert':
    case 'nomic-bert':
      return new BertArchitecture(config, tensors);
  }
}
