// The package's public API: `import { LLM } from 'loom-llm'`.
export { LLM } from './llm.js';
export type { GenerateOptions, GenerateResult, LLMOptions, StreamPiece } from './llm.js';
export type { EngineOptions } from './engine/options.js';
export type { SamplingParamsInput } from './engine/sampling-params.js';
export { LoomError, ModelFormatError, UnsupportedModelError, ContextLengthExceededError, InvalidArgumentError, EngineRefusedError } from './errors.js';
export { IMAGE_MARKER } from './pipeline/image-input.js';
export type { ImageInput } from './pipeline/image-input.js';
export type { TextImagesPrompt } from './pipeline/prompt.js';
