// A Hugging Face image-text folder is its own projector: its vision tower, read as the mmproj
// file llama.cpp's converter would write from it. Gemma3ForConditionalGeneration (hf-gemma3.ts)
// and Qwen3_5(Moe)ForConditionalGeneration (hf-qwen3vl.ts). Such a folder serves images without
// --mmproj; --no-mmproj (or `mmproj: false`) serves it text only.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { UnsupportedModelError } from '../../errors.js';
import type { LoadOptions } from '../model-memory.js';
import { ModelMemory } from '../model-memory.js';
import { openSafetensorsModel } from '../safetensors-folder.js';
import type { ArchName, ModelConfig } from '../weights.js';
import { gemma3FolderProjector } from './hf-gemma3.js';
import { readJson } from './hf-folder-files.js';
import { qwen35FolderProjector } from './hf-qwen3vl.js';
import type { LoadedProjector } from './projector-file.js';

/** the image-text architectures whose folders carry a tower loom reads, and the text archs each serves */
const FOLDER_TOWERS: Readonly<Record<string, { family: string; textArchs: readonly ArchName[]; load: typeof gemma3FolderProjector }>> = {
  Gemma3ForConditionalGeneration: { family: 'Gemma 3', textArchs: ['gemma3'], load: gemma3FolderProjector },
  Qwen3_5ForConditionalGeneration: { family: 'Qwen3.5', textArchs: ['qwen35', 'qwen35moe'], load: qwen35FolderProjector },
  Qwen3_5MoeForConditionalGeneration: { family: 'Qwen3.5', textArchs: ['qwen35', 'qwen35moe'], load: qwen35FolderProjector },
};

export function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function towerOf(dir: string): (typeof FOLDER_TOWERS)[string] | undefined {
  const config = readJson(join(dir, 'config.json'));
  const archs = config?.['architectures'];
  const arch = Array.isArray(archs) && typeof archs[0] === 'string' ? archs[0] : undefined;
  return arch !== undefined && config?.['vision_config'] !== undefined ? FOLDER_TOWERS[arch] : undefined;
}

/** The model path itself when it is a folder of an image-text checkpoint loom reads images with
 *  (and its weights hold the tower: a folder stripped to its text model serves text), else undefined. */
export function builtInProjector(modelPath: string): string | undefined {
  if (!isFolder(modelPath) || towerOf(modelPath) === undefined) return undefined;
  const names = openSafetensorsModel(modelPath).names();
  return names.some((n) => TOWER_NAME.test(n)) ? modelPath : undefined;
}

/** where Gemma 3's (vision_tower.vision_model.*) and Qwen3.5's (model.visual.*) towers keep their tensors */
const TOWER_NAME = /^(model\.)?(vision_tower\.vision_model|visual)\./;

/** The folder's vision tower as a projector for `text`, refused in one line naming the folder when it has none or is for other models. */
export function loadFolderProjector(dir: string, text: ModelConfig, opts: LoadOptions = {}): LoadedProjector {
  const tower = towerOf(dir);
  if (!tower) throw new UnsupportedModelError(dir, `not a vision projector: the folder's config.json names no image-text architecture loom reads (${Object.keys(FOLDER_TOWERS).join(', ')}) with a vision_config`);
  if (!tower.textArchs.includes(text.arch)) throw new UnsupportedModelError(dir, `a ${tower.family} vision tower is for ${tower.family} models, not a ${text.arch} model`);
  const memory = new ModelMemory(opts);
  try {
    const projector = tower.load(dir, text, memory.inPlace);
    if (!projector) throw new UnsupportedModelError(dir, 'the folder has a vision_config but no vision tower weights');
    const dispose = projector.dispose;
    return Object.assign(projector, { dispose: () => { dispose(); memory.release(); } });
  } catch (e) {
    memory.release();
    throw e;
  }
}
