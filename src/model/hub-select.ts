// Which files of a repo make "the model" when `hf:ORG/REPO` names no file.
import { readFileSync } from 'node:fs';
import { HubError } from './hub-errors.js';

/** Small files a Hugging Face model folder needs beside its weights (each only if present); an
 *  image-text folder's vision tower reads its image preprocessor's settings */
export const FOLDER_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json', 'special_tokens_map.json', 'preprocessor_config.json', 'processor_config.json'] as const;

export type RepoModel =
  /** a Hugging Face folder: `files` (config, tokenizer…) then `weights`; `index` lists further shards */
  | { readonly kind: 'folder'; readonly files: readonly string[]; readonly index: string | undefined }
  /** one GGUF file picked among `count` */
  | { readonly kind: 'gguf'; readonly file: string; readonly count: number };

/** `paths`: the files at the repo's top level. */
export function selectRepoModel(spec: string, paths: readonly string[]): RepoModel {
  const has = new Set(paths);
  if (has.has('config.json') && (has.has('model.safetensors') || has.has('model.safetensors.index.json'))) {
    const small = FOLDER_FILES.filter((f) => has.has(f));
    if (has.has('model.safetensors')) return { kind: 'folder', files: [...small, 'model.safetensors'], index: undefined };
    return { kind: 'folder', files: [...small, 'model.safetensors.index.json'], index: 'model.safetensors.index.json' };
  }
  const ggufs = paths.filter((p) => /\.gguf$/i.test(p) && !/(^|\/)mmproj/i.test(p)).sort();
  const file = ggufs.find((p) => /q4_k_m/i.test(p)) ?? ggufs.find((p) => /q8_0/i.test(p)) ?? ggufs[0];
  if (file !== undefined) return { kind: 'gguf', file, count: ggufs.length };
  throw new HubError(`${spec}: the repository has neither model.safetensors (or model.safetensors.index.json) with config.json, nor a .gguf file; name one with ${spec}:FILE`);
}

/** The shard files a `model.safetensors.index.json` names, each once, in order. */
export function shardsOfIndex(indexPath: string, label: string): string[] {
  let map: unknown;
  try {
    map = (JSON.parse(readFileSync(indexPath, 'utf8')) as { weight_map?: unknown }).weight_map;
  } catch (err) {
    throw new HubError(`${label}: not a safetensors index (${(err as Error).message})`);
  }
  if (typeof map !== 'object' || map === null) throw new HubError(`${label}: the safetensors index has no weight_map`);
  const shards = new Set<string>();
  for (const v of Object.values(map)) {
    if (typeof v !== 'string') throw new HubError(`${label}: the safetensors index maps a tensor to a non-string`);
    shards.add(v);
  }
  return [...shards];
}
