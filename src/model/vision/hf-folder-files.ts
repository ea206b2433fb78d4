// The JSON files beside a Hugging Face image-text folder's weights that its vision tower reads:
// config.json and the image preprocessor's settings, merged as llama.cpp's converter merges
// them (MmprojModel: preprocessor_config.json, then processor_config.json's image_processor).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ModelFormatError } from '../../errors.js';
import type { InPlaceBytes } from '../model-memory.js';
import { openSafetensorsModel } from '../safetensors-folder.js';

export function readJson(path: string): Record<string, unknown> | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new ModelFormatError(path, `not valid JSON (${(e as Error).message})`);
  }
}

/** preprocessor_config.json, else processor_config.json's image_processor (the converter reads both) */
export function preprocessorConfig(dir: string): Record<string, unknown> {
  const processor = readJson(join(dir, 'processor_config.json'));
  return { ...((processor?.['image_processor'] as Record<string, unknown> | undefined) ?? processor ?? {}), ...(readJson(join(dir, 'preprocessor_config.json')) ?? {}) };
}

/** image_mean / image_std: 3 numbers */
export function preprocessorStats(dir: string, pre: Record<string, unknown>, key: string): number[] {
  const x = pre[key];
  if (!Array.isArray(x) || x.length < 3 || !x.every((y) => typeof y === 'number')) {
    throw new ModelFormatError(join(dir, 'preprocessor_config.json'), `${key} should be 3 numbers (the folder's image preprocessor)`);
  }
  return x as number[];
}

/** A folder's vision tower: its config.json (with a vision_config), its weights and the prefix
 *  under which `patch` (the tower's first tensor) is found; undefined when it has no tower. */
export function visionTower(dir: string, prefixes: readonly string[], patch: string, inPlace?: InPlaceBytes) {
  const configPath = join(dir, 'config.json');
  const config = readJson(configPath);
  const vision = config?.['vision_config'];
  if (!config || typeof vision !== 'object' || vision === null) return undefined;
  const model = openSafetensorsModel(dir, inPlace);
  const prefix = prefixes.find((p) => model.has(p + patch));
  if (prefix === undefined) return undefined;
  return { configPath, config, vision: vision as Record<string, unknown>, model, prefix };
}
