// One file from the Hub into the cache: the library looks it up (size, ETag, URL); the
// bytes come over plain fetch into `<file>.part`, resumed with `Range: bytes=N-` after an
// interruption (this run or an earlier one), checked, then renamed into place.
//
// Why not the library's Blob for the bytes: its ranged reads do not check that a 206 came
// back for the asked offset, and a server (or proxy) that answers 200 with the whole file
// would silently corrupt an appended `.part`.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileDownloadInfo } from '@huggingface/hub';
import { HubError, HubUnreachableError, httpError, toHubError } from './hub-errors.js';
import type { HubLog } from './hub-progress.js';
import { createProgress, formatBytes } from './hub-progress.js';
import type { HubCache, HubRef } from './hub-ref.js';

/** Everything a download needs: where from, how, where to, how to show it. */
export interface HubSession {
  readonly ref: HubRef;
  readonly cache: HubCache;
  readonly hubUrl: string;
  readonly fetch: typeof fetch;
  readonly log: HubLog;
  /** draw a progress bar (stderr is a terminal) instead of start/end lines */
  readonly tty: boolean;
}

/** Tries per file within one run; each one after the first resumes where the last stopped. */
export const DOWNLOAD_ATTEMPTS = 3;

/** The transfer broke off or went wrong in a way another attempt may fix. */
class TransferInterrupted extends HubError {}

export function fileLabel(ref: HubRef, file: string): string {
  return `hf:${ref.repo}${ref.revision === 'main' ? '' : `@${ref.revision}`}:${file}`;
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return -1;
  }
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Downloads `file` (a path inside the repo) unless the cache holds the current version; returns its local path. */
export async function downloadToCache(s: HubSession, file: string): Promise<string> {
  const label = fileLabel(s.ref, file);
  const target = s.cache.filePath(file);
  const part = s.cache.partPath(file);
  const etagFile = s.cache.etagPath(file);
  let info;
  try {
    info = await fileDownloadInfo({ repo: { type: 'model', name: s.ref.repo }, path: file, revision: s.ref.revision, hubUrl: s.hubUrl, fetch: s.fetch });
  } catch (err) {
    throw toHubError(label, err);
  }
  if (!info) throw new HubError(`${label}: no such file in ${s.ref.repo} at revision ${s.ref.revision}`);

  if (readText(etagFile) === info.etag && existsSync(target)) return target; // cached and current
  mkdirSync(dirname(target), { recursive: true });
  mkdirSync(dirname(etagFile), { recursive: true });
  if (readText(`${etagFile}.part`) !== info.etag) {
    // a .part of another version (or of unknown origin) cannot be continued
    rmSync(part, { force: true });
    writeFileSync(`${etagFile}.part`, info.etag);
  }
  for (let attempt = 1; ; attempt++) {
    try {
      await transfer(s, label, info.url, part, info.size);
      break;
    } catch (err) {
      const retry = err instanceof TransferInterrupted || err instanceof HubUnreachableError;
      if (!retry || attempt >= DOWNLOAD_ATTEMPTS) throw toHubError(label, err);
      s.log(`loom: ${err instanceof Error ? err.message : String(err)}; resuming (attempt ${attempt + 1} of ${DOWNLOAD_ATTEMPTS})`);
    }
  }
  await verify(label, part, info.size, info.etag);
  renameSync(part, target);
  // after the rename: a crash in between costs a download, never a stale file taken as current
  writeFileSync(etagFile, info.etag);
  rmSync(`${etagFile}.part`, { force: true });
  return target;
}

/** Brings `part` to `size` bytes from `url`, continuing from what it already holds. */
async function transfer(s: HubSession, label: string, url: string, part: string, size: number): Promise<void> {
  let done = Math.max(0, sizeOf(part));
  if (done > size) {
    rmSync(part, { force: true });
    done = 0;
  }
  if (done === size && size > 0) return;
  const res = await s.fetch(url, done > 0 ? { headers: { range: `bytes=${done}-` } } : {});
  if (res.status === 416 && done > 0) {
    await res.body?.cancel();
    rmSync(part, { force: true });
    throw new TransferInterrupted(`${label}: the server would not resume at byte ${done}; starting over`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw httpError(label, 'GET', url, res.status);
  }
  let offset = 0;
  if (res.status === 206) {
    const range = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(res.headers.get('content-range') ?? '');
    offset = Number(range?.[1] ?? -1);
    if (offset !== done) {
      await res.body?.cancel();
      rmSync(part, { force: true });
      throw new TransferInterrupted(`${label}: asked for bytes from ${done}, got ${res.headers.get('content-range') ?? 'no Content-Range'}; starting over`);
    }
  } else if (done > 0) {
    s.log(`loom: ${label}: the server sent the whole file instead of the rest; starting over`);
  }

  const progress = createProgress(s.log, s.tty);
  progress.start(label, size, offset);
  const fh = await open(part, offset > 0 ? 'a' : 'w');
  let written = offset;
  try {
    if (res.body) {
      for await (const chunk of res.body) {
        if (written + chunk.byteLength > size) throw new TransferInterrupted(`${label}: the server sent more than the ${size} bytes it announced`);
        await fh.write(chunk);
        written += chunk.byteLength;
        progress.update(written);
      }
    }
  } catch (err) {
    progress.abort();
    if (err instanceof HubError) throw err;
    const why = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    throw new TransferInterrupted(`${label}: the transfer from ${url} broke off after ${formatBytes(written)} of ${formatBytes(size)} (${why})`);
  } finally {
    await fh.close();
  }
  if (written !== size) {
    progress.abort();
    throw new TransferInterrupted(`${label}: the transfer from ${url} ended after ${formatBytes(written)} of ${formatBytes(size)}`);
  }
  progress.finish();
}

/** Size always; content too when the ETag is a SHA-256 (the Hub's ETag for LFS files). */
async function verify(label: string, part: string, size: number, etag: string): Promise<void> {
  const got = sizeOf(part);
  if (got !== size) throw new HubError(`${label}: downloaded ${got} bytes, expected ${size}`);
  const sha = /^(?:W\/)?"?([0-9a-f]{64})"?$/.exec(etag)?.[1];
  if (!sha) return;
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(part)) hash.update(chunk as Buffer);
  const actual = hash.digest('hex');
  if (actual !== sha) {
    rmSync(part, { force: true });
    throw new HubError(`${label}: the download is corrupt (sha256 ${actual}, the Hub says ${sha}); removed it, run again`);
  }
}
