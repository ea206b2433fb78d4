// loadProjector: an mmproj GGUF file (llama.cpp's --mmproj) into the VisionProjector its
// clip.projector_type names, for the text model it is to serve. Tensors are views of the mapped
// file (as the text model's), except the few a projector rewrites at load. A file loom cannot
// run for this model is refused in one line naming the file: not a projector file, a projector
// type loom does not run, a projector of another family, or one whose output width is not the
// text model's hidden size.
import { openGGUF } from '../gguf.js';
import { ModelMemory } from '../model-memory.js';
import type { LoadOptions } from '../model-memory.js';
import type { ArchName, ModelConfig } from '../weights.js';
import { ClipFile } from './clip-file.js';
import { isFolder, loadFolderProjector } from './folder-projector.js';
import { Gemma3Projector } from './gemma3.js';
import { Gemma4VisionProjector } from './gemma4v.js';
import { Qwen3vlProjector } from './qwen3vl.js';
import type { VisionProjector } from './projector.js';

export interface ProjectorType {
  /** the text architectures its embeddings are made for */
  readonly textArchs: readonly ArchName[];
  /** the family as people name it, for messages */
  readonly family: string;
  readonly create: (file: ClipFile, text: ModelConfig) => VisionProjector;
}

/** llama.cpp's projector_type names loom runs (clip-impl.h PROJECTOR_TYPE_NAMES) → their
 *  encoder. Another family registers here (qwen3vl_merger: src/model/vision/qwen3vl.ts). */
export const PROJECTOR_TYPES = new Map<string, ProjectorType>([
  ['gemma3', { textArchs: ['gemma3'], family: 'Gemma 3', create: (file) => new Gemma3Projector(file) }],
  ['gemma4v', { textArchs: ['gemma4'], family: 'Gemma 4', create: (file, text) => new Gemma4VisionProjector(file, text) }],
  ['qwen3vl_merger', { textArchs: ['qwen35', 'qwen35moe'], family: 'Qwen3.5', create: (file, text) => new Qwen3vlProjector(file, text) }],
]);

/** A loaded projector; dispose unmaps its file (after which it must not encode). */
export interface LoadedProjector extends VisionProjector {
  dispose(): void;
}

/** `path`: an mmproj GGUF, or a Hugging Face image-text folder (its vision tower: folder-projector.ts). */
export function loadProjector(path: string, textConfig: ModelConfig, opts: LoadOptions = {}): LoadedProjector {
  if (isFolder(path)) return loadFolderProjector(path, textConfig, opts);
  const memory = new ModelMemory(opts);
  const gguf = openGGUF(path, memory.take, undefined, memory.inPlace);
  try {
    const file: ClipFile = new ClipFile(gguf);
    const arch = file.meta.string('general.architecture', '');
    if (arch !== 'clip') file.refuse(`not a vision projector (mmproj) file: general.architecture is ${arch === '' ? 'missing' : `"${arch}"`}, not "clip"`);
    if (!file.meta.bool('clip.has_vision_encoder', false)) file.refuse('the projector file has no vision encoder (clip.has_vision_encoder)');
    // clip.cpp: clip.projector_type, else (files with audio too) clip.vision.projector_type
    const typeName = file.meta.optionalString('clip.projector_type') ?? file.meta.optionalString('clip.vision.projector_type');
    if (typeName === undefined) file.refuse('the projector file names no projector type (clip.projector_type)');
    const type = PROJECTOR_TYPES.get(typeName);
    if (!type) file.refuse(`projector type "${typeName}" is not one loom runs (loom runs ${[...PROJECTOR_TYPES.keys()].join(', ')})`);
    if (!type.textArchs.includes(textConfig.arch)) {
      file.refuse(`a ${typeName} projector is for ${type.family} models, not a ${textConfig.arch} model`);
    }
    const projector = type.create(file, textConfig);
    if (projector.outputSize !== textConfig.hiddenSize) {
      file.refuse(`the projector's embeddings are ${projector.outputSize} wide but the text model's hidden size is ${textConfig.hiddenSize}`);
    }
    gguf.close();
    return Object.assign(projector, { dispose: () => memory.release() });
  } catch (e) {
    gguf.close();
    memory.release();
    throw e;
  }
}
