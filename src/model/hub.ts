// Where a --model argument points: a local path as given, or `hf:ORG/REPO[@REV][:FILE]`
// fetched from the Hugging Face Hub ($HF_ENDPOINT, token $HF_TOKEN) into a local cache
// first (layout in hub-ref.ts). Offline (--offline or HF_HUB_OFFLINE=1) the cache alone
// answers and nothing touches the network; online but unreachable, a cached copy still serves.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { listFiles } from '@huggingface/hub';
import { downloadToCache, fileLabel } from './hub-download.js';
import type { HubSession } from './hub-download.js';
import { HubNotCachedError, HubUnreachableError, hubFetch, toHubError } from './hub-errors.js';
import type { HubLog } from './hub-progress.js';
import { HubCache, assertRepoPath, defaultCacheDir, isHubRef, parseHubRef } from './hub-ref.js';
import { selectRepoModel, shardsOfIndex } from './hub-select.js';

export interface HubOptions {
  /** never contact the Hub; use the cache only (HF_HUB_OFFLINE=1 does the same) */
  readonly offline: boolean;
  /** default: $LOOM_CACHE or ~/.cache/loom */
  readonly cacheDir?: string | undefined;
  /** progress lines and notices; default: stderr, with a progress bar when it is a terminal */
  readonly log?: HubLog | undefined;
}

/** What `hf:ORG/REPO` (no FILE) resolved to when last online: `path` relative to the revision folder ('' = the folder). */
interface Resolved {
  readonly path: string;
  readonly files: readonly string[];
}

export function offlineFromEnv(): boolean {
  return /^(1|on|yes|true)$/i.test(process.env.HF_HUB_OFFLINE ?? '');
}

export async function resolveModelPath(model: string, opts: HubOptions): Promise<string> {
  if (!isHubRef(model)) return model;
  const ref = parseHubRef(model);
  const cache = new HubCache(opts.cacheDir ?? defaultCacheDir(), ref);
  const log = opts.log ?? ((line: string) => process.stderr.write(line + '\n'));
  if (opts.offline || offlineFromEnv()) {
    const cached = fromCache(cache);
    if (cached === undefined) throw new HubNotCachedError(model, cache.revisionDir);
    return cached;
  }
  const session: HubSession = {
    ref,
    cache,
    hubUrl: (process.env.HF_ENDPOINT || 'https://huggingface.co').replace(/\/+$/, ''),
    fetch: hubFetch(process.env.HF_TOKEN || undefined),
    log,
    tty: opts.log === undefined && process.stderr.isTTY === true,
  };
  try {
    return await download(session);
  } catch (err) {
    const cached = err instanceof HubUnreachableError ? fromCache(cache) : undefined;
    if (cached === undefined) throw err;
    log(`loom: ${err instanceof Error ? err.message : String(err)}; using the cached copy ${cached}`);
    return cached;
  }
}

/** The local path of a complete cached copy, or undefined. */
function fromCache(cache: HubCache): string | undefined {
  const file = cache.ref.file;
  if (file !== undefined) {
    const path = cache.filePath(file);
    return existsSync(path) ? path : undefined;
  }
  let resolved: Resolved;
  try {
    resolved = JSON.parse(readFileSync(cache.resolvedPath(), 'utf8')) as Resolved;
  } catch {
    return undefined;
  }
  if (!resolved.files.every((f) => existsSync(cache.filePath(f)))) return undefined;
  return resolved.path ? cache.filePath(resolved.path) : cache.revisionDir;
}

async function download(s: HubSession): Promise<string> {
  const { ref, cache } = s;
  if (ref.file !== undefined) return downloadToCache(s, ref.file);

  const paths: string[] = [];
  try {
    for await (const entry of listFiles({ repo: { type: 'model', name: ref.repo }, revision: ref.revision, hubUrl: s.hubUrl, fetch: s.fetch })) {
      if (entry.type === 'file') paths.push(entry.path);
    }
  } catch (err) {
    throw toHubError(ref.spec, err);
  }
  const model = selectRepoModel(ref.spec, paths);
  if (model.kind === 'gguf') {
    const more = model.count > 1 ? ` (one of ${model.count} GGUF files; choose with hf:${ref.repo}:FILE)` : '';
    s.log(`loom: ${ref.spec}: using ${model.file}${more}`);
    const path = await downloadToCache(s, model.file);
    writeResolved(cache, { path: model.file, files: [model.file] });
    return path;
  }
  const files = [...model.files];
  for (const f of model.files) await downloadToCache(s, f);
  if (model.index !== undefined) {
    for (const shard of shardsOfIndex(cache.filePath(model.index), fileLabel(ref, model.index))) {
      assertRepoPath(shard, fileLabel(ref, model.index));
      await downloadToCache(s, shard);
      files.push(shard);
    }
  }
  writeResolved(cache, { path: '', files });
  return cache.revisionDir;
}

function writeResolved(cache: HubCache, resolved: Resolved): void {
  const path = cache.resolvedPath();
  mkdirSync(dirname(path), { recursive: true });
  const tmp = join(dirname(path), `.${process.pid}.tmp`);
  writeFileSync(tmp, JSON.stringify(resolved));
  renameSync(tmp, path);
}
