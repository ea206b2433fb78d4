// A Hugging Face model folder's weights: one model.safetensors, or shards listed by
// model.safetensors.index.json's weight_map (every shard opened once, every listed tensor
// checked to be in its shard), read through safetensors.ts's file reader.
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { ModelFormatError } from '../errors.js';
import type { InPlaceBytes } from './model-memory.js';
import { openSafetensors } from './safetensors.js';
import type { SafetensorsFile } from './safetensors.js';

/** A model folder's weights: one `model.safetensors`, or shards listed by the index's weight_map. */
export interface SafetensorsModel {
  readonly dir: string;
  readonly files: readonly SafetensorsFile[];
  /** bytes read from disk over all files */
  readonly bytesRead: number;
  names(): string[];
  has(name: string): boolean;
  /** the file holding the tensor, or undefined */
  fileOf(name: string): SafetensorsFile | undefined;
}

export const SINGLE_FILE = 'model.safetensors';
export const INDEX_FILE = 'model.safetensors.index.json';

export function openSafetensorsModel(dir: string, inPlace?: InPlaceBytes): SafetensorsModel {
  const single = join(dir, SINGLE_FILE);
  if (existsSync(single)) return folderModel(dir, [openSafetensors(single, inPlace)], undefined);
  const indexPath = join(dir, INDEX_FILE);
  if (!existsSync(indexPath)) {
    if (!existsSync(dir)) throw new ModelFormatError(dir, 'no such folder');
    const bin = existsSync(join(dir, 'pytorch_model.bin')) ? ' (only PyTorch .bin weights, which loom does not read)' : '';
    throw new ModelFormatError(dir, `no ${SINGLE_FILE} or ${INDEX_FILE}${bin}`);
  }
  const weightMap = readWeightMap(indexPath);
  const byShard = new Map<string, SafetensorsFile>();
  const owner = new Map<string, SafetensorsFile>();
  for (const [name, shard] of weightMap) {
    let file = byShard.get(shard);
    if (!file) {
      const shardPath = join(dir, shard);
      if (!existsSync(shardPath)) throw new ModelFormatError(shardPath, `missing shard (listed in ${indexPath})`);
      file = openSafetensors(shardPath, inPlace);
      byShard.set(shard, file);
    }
    if (!file.has(name)) throw new ModelFormatError(file.path, `has no tensor ${name}, which ${indexPath} places there`);
    owner.set(name, file);
  }
  return folderModel(dir, [...byShard.values()], owner);
}

/** weight_map of an index file as [tensor name, shard file name] pairs */
function readWeightMap(indexPath: string): [string, string][] {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(indexPath, 'utf8'));
  } catch (e) {
    throw new ModelFormatError(indexPath, `cannot read index JSON (${(e as Error).message})`);
  }
  const map = (json as { weight_map?: unknown } | null)?.weight_map;
  if (typeof map !== 'object' || map === null || Array.isArray(map)) {
    throw new ModelFormatError(indexPath, 'weight_map is missing or not an object');
  }
  const pairs = Object.entries(map as Record<string, unknown>);
  for (const [name, shard] of pairs) {
    if (typeof shard !== 'string' || shard === '' || basename(shard) !== shard) {
      throw new ModelFormatError(indexPath, `weight_map entry for ${name} is not a file name`);
    }
  }
  return pairs as [string, string][];
}

function folderModel(dir: string, files: SafetensorsFile[], owner: Map<string, SafetensorsFile> | undefined): SafetensorsModel {
  const only = files[0];
  const fileOf = (name: string): SafetensorsFile | undefined => (owner ? owner.get(name) : only?.has(name) ? only : undefined);
  return {
    dir,
    files,
    get bytesRead() {
      return files.reduce((s, f) => s + f.bytesRead, 0);
    },
    names: () => (owner ? [...owner.keys()] : (only?.names() ?? [])),
    has: (name) => fileOf(name) !== undefined,
    fileOf,
  };
}
