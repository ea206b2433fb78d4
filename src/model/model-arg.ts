// What a `--model` argument (or its absence) means, in this order: nothing → the built-in
// stories260K; `hf:…` → the Hub (hub.ts); an existing file or folder → itself; a cached
// model's short name (cached-models.ts) → its path; anything else → the path as given, so
// loading it says "no such file or folder".
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../package-info.js';
import { findCachedModel } from './cached-models.js';
import { resolveModelPath } from './hub.js';
import type { HubOptions } from './hub.js';
import { defaultCacheDir, isHubRef } from './hub-ref.js';

/** stories260K (llama2.c, MIT), shipped in the package's models/ folder */
export const DEFAULT_MODEL_PATH = join(PACKAGE_ROOT, 'models', 'stories260K.gguf');
export const DEFAULT_MODEL_NAME = 'stories260K';

export interface ResolvedModel {
  readonly path: string;
  /** what to call it (served model name, chat banner) */
  readonly name: string;
}

export async function resolveModelArg(model: string | undefined, opts: HubOptions): Promise<ResolvedModel> {
  const log = opts.log ?? ((line: string) => process.stderr.write(line + '\n'));
  if (model === undefined || model === '') {
    log(`loom: no --model given; using the built-in ${DEFAULT_MODEL_NAME} (a 260K-parameter story model from llama2.c) at ${DEFAULT_MODEL_PATH}`);
    return { path: DEFAULT_MODEL_PATH, name: DEFAULT_MODEL_NAME };
  }
  if (isHubRef(model)) return { path: await resolveModelPath(model, opts), name: hubName(model) };
  if (!existsSync(model)) {
    const cached = findCachedModel(opts.cacheDir ?? defaultCacheDir(), model);
    if (cached) return { path: cached.path, name: cached.name };
  }
  return { path: model, name: fileName(model) };
}

function hubName(model: string): string {
  const [repo, file] = model.slice(3).split(':');
  if (file) return file.split('/').pop()!.replace(/\.gguf$/i, '');
  return repo!.split('@')[0]!;
}

function fileName(model: string): string {
  const base = model.replace(/[/\\]+$/, '').split(/[/\\]/).pop() || model;
  return base.replace(/\.gguf$/i, '');
}
