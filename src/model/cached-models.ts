// The models in the local Hub cache (layout in hub-ref.ts), as `loom list` shows them and as
// short names find them: a GGUF file is one model named after the file (`SmolLM2-135M-Q8_0`),
// a Hugging Face folder (a revision holding config.json) one model named after the repo.
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { InvalidArgumentError } from '../errors.js';

export interface CachedModel {
  /** the short name: `loom serve --model NAME` */
  readonly name: string;
  /** the full reference it came from: hf:ORG/REPO[@REV][:FILE] */
  readonly ref: string;
  /** the GGUF file or the model folder */
  readonly path: string;
  readonly bytes: number;
  readonly kind: 'gguf' | 'hf';
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile() && !entry.name.endsWith('.part')) out.push(path);
  }
  return out;
}

function dirs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
    .map((e) => e.name)
    .sort();
}

export function listCachedModels(cacheDir: string): CachedModel[] {
  const hub = join(cacheDir, 'hub');
  const models: CachedModel[] = [];
  for (const repoDir of dirs(hub)) {
    const repo = repoDir.replace('--', '/');
    for (const revDir of dirs(join(hub, repoDir))) {
      const revision = decodeURIComponent(revDir);
      const at = revision === 'main' ? '' : `@${revision}`;
      const root = join(hub, repoDir, revDir);
      const files = filesUnder(root);
      const ggufs = files.filter((f) => f.toLowerCase().endsWith('.gguf'));
      for (const f of ggufs) {
        const file = relative(root, f).split(sep).join('/');
        const base = file.split('/').pop()!.replace(/\.gguf$/i, '');
        models.push({ name: base, ref: `hf:${repo}${at}:${file}`, path: f, bytes: statSync(f).size, kind: 'gguf' });
      }
      if (existsSync(join(root, 'config.json'))) {
        const bytes = files.filter((f) => !ggufs.includes(f)).reduce((sum, f) => sum + statSync(f).size, 0);
        models.push({ name: repo.split('/').pop()!, ref: `hf:${repo}${at}`, path: root, bytes, kind: 'hf' });
      }
    }
  }
  return models;
}

/**
 * The cached models a name means: a short name, `ORG/REPO`, `ORG/REPO:FILE` or the full
 * `hf:` reference. More than one match is an error naming them all.
 */
export function findCachedModel(cacheDir: string, name: string): CachedModel | undefined {
  const key = name.startsWith('hf:') ? name.slice(3) : name;
  const all = listCachedModels(cacheDir);
  const hits = all.filter((m) => {
    const ref = m.ref.slice(3);
    const repo = ref.split(':')[0]!;
    return m.name === key || ref === key || repo === key || `${m.name}.gguf` === key;
  });
  if (hits.length > 1) {
    throw new InvalidArgumentError(`"${name}" matches ${hits.length} cached models: ${hits.map((m) => m.ref).join(', ')}; name one of them`);
  }
  return hits[0];
}

/** Deletes a cached model's files (and its repo folder once nothing is left in it); returns what went. */
export function removeCachedModel(cacheDir: string, name: string): CachedModel {
  const model = findCachedModel(cacheDir, name);
  if (!model) throw new InvalidArgumentError(`no cached model is called "${name}" (see loom list)`);
  rmSync(model.path, { recursive: true, force: true });
  rmSync(model.path + '.part', { force: true });
  const repoDir = join(cacheDir, 'hub', model.ref.slice(3).split(/[@:]/)[0]!.replace('/', '--'));
  const revision = /@([^:]+)/.exec(model.ref)?.[1] ?? 'main';
  const revDir = join(repoDir, encodeURIComponent(revision));
  if (model.kind === 'hf' || filesUnder(revDir).length === 0) {
    rmSync(revDir, { recursive: true, force: true });
    rmSync(join(repoDir, '.etags', encodeURIComponent(revision)), { recursive: true, force: true });
    rmSync(join(repoDir, '.resolved', `${encodeURIComponent(revision)}.json`), { force: true });
  } else {
    // a resolved `hf:ORG/REPO` that named this file now names nothing
    rmSync(join(repoDir, '.resolved', `${encodeURIComponent(revision)}.json`), { force: true });
  }
  if (dirs(repoDir).length === 0) rmSync(repoDir, { recursive: true, force: true });
  return model;
}
