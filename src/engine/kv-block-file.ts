// One prefix block's K/V on disk (--kv-cache-dir): the file format, the names that key it, and
// the model file's identity. A file is trusted only whole: its header names the format version,
// the model, the cache dtype, the block size, the layer layout and the block's chain hash, and a
// crc32 covers the header and the payload, so a partial, corrupt or foreign file is refused.
import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

/** loom's KV block file format; a change to it (or to what a block's bytes mean) bumps it */
export const KV_BLOCK_FORMAT = 1;
const MAGIC = Buffer.from('LOOMKVB\0', 'latin1');
const PREFIX = MAGIC.length + 12; // magic, u32 version, u32 header length, u32 crc32

/** what a file must say of itself to be loaded into this engine's cache */
export interface KvBlockKey {
  readonly model: string;
  readonly dtype: string;
  readonly blockSize: number;
  /** bytes of each array a block spans (k and v of every layer keeping its own), joined */
  readonly layout: string;
}

/**
 * A block's name across restarts: sha256 over its parent's name and its token ids (the prefix
 * cache's own ids are per process). The chain starts at the request's prefix root, which is 0 or
 * its cache salt's hash (saltRoot), so salted prefixes get names of their own.
 */
export function chainHash(parent: string | number, tokens: ArrayLike<number>, start: number, length: number): string {
  const ids = new Int32Array(length);
  for (let i = 0; i < length; i++) ids[i] = tokens[start + i]!;
  const h = createHash('sha256').update(typeof parent === 'number' ? `root:${parent}` : parent);
  return h.update(new Uint8Array(ids.buffer)).digest('hex').slice(0, 32);
}

/** The file's first bytes (prefix and header JSON, its checksum covering `payload` too): the file
 *  is these, then the payload arrays' bytes in order, written from where they lie (no copy). */
export function encodeBlockHeader(key: KvBlockKey, hash: string, payload: readonly Uint8Array[]): Buffer {
  const payloadBytes = payload.reduce((n, p) => n + p.byteLength, 0);
  const header = Buffer.from(JSON.stringify({ ...key, hash, payloadBytes }), 'utf8');
  const out = Buffer.allocUnsafe(PREFIX + header.length);
  MAGIC.copy(out, 0);
  out.writeUInt32LE(KV_BLOCK_FORMAT, 8);
  out.writeUInt32LE(header.length, 12);
  header.copy(out, PREFIX);
  let crc = crc32(out.subarray(PREFIX), crc32(out.subarray(MAGIC.length, MAGIC.length + 8)));
  for (const p of payload) crc = crc32(p, crc);
  out.writeUInt32LE(crc, 16);
  return out;
}

/** the whole file in one buffer */
export function encodeBlockFile(key: KvBlockKey, hash: string, payload: readonly Uint8Array[]): Buffer {
  return Buffer.concat([encodeBlockHeader(key, hash, payload), ...payload]);
}

/** The payload of a file, or why it must not be loaded (a partial, corrupt or foreign file). */
export function decodeBlockFile(file: Buffer, key: KvBlockKey, hash: string): { payload: Buffer } | { refused: string } {
  if (file.length < PREFIX || !file.subarray(0, 8).equals(MAGIC)) return { refused: 'not a loom KV block file' };
  const version = file.readUInt32LE(8);
  if (version !== KV_BLOCK_FORMAT) return { refused: `format version ${version}, this loom writes ${KV_BLOCK_FORMAT}` };
  const headerLength = file.readUInt32LE(12);
  if (PREFIX + headerLength > file.length) return { refused: 'truncated header' };
  if (checksum(file) !== file.readUInt32LE(16)) return { refused: 'checksum mismatch (partial or corrupt)' };
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(file.subarray(PREFIX, PREFIX + headerLength).toString('utf8')) as Record<string, unknown>;
  } catch {
    return { refused: 'unreadable header' };
  }
  for (const field of ['model', 'dtype', 'blockSize', 'layout'] as const) {
    if (header[field] !== key[field]) return { refused: `${field} ${String(header[field])}, expected ${key[field]}` };
  }
  if (header.hash !== hash) return { refused: `holds block ${String(header.hash)}` };
  const payload = file.subarray(PREFIX + headerLength);
  if (payload.length !== header.payloadBytes) return { refused: `payload of ${payload.length} bytes, header says ${String(header.payloadBytes)}` };
  return { payload };
}

/** crc32 of everything but the magic and the checksum itself: version, header length, header, payload */
function checksum(file: Buffer): number {
  return crc32(file.subarray(PREFIX), crc32(file.subarray(MAGIC.length, MAGIC.length + 8)));
}

const IDENTITY_BYTES = 1 << 20;

/**
 * The model's identity, cheap to take: per file (the path, or the files directly in a model
 * directory), its name, size, mtime and sha256 of its first MiB (a GGUF's header and most of its
 * metadata). A re-downloaded or re-quantized file gets a new identity; a copy keeps its own mtime.
 */
export function modelIdentity(path: string): string {
  const h = createHash('sha256');
  const st = statSync(path);
  const files = st.isDirectory() ? readdirSync(path).sort().map((f) => join(path, f)).filter((f) => statSync(f).isFile()) : [path];
  const head = Buffer.allocUnsafe(IDENTITY_BYTES);
  for (const f of files) {
    const s = statSync(f);
    h.update(`${f.slice(f.lastIndexOf('/') + 1)}\0${s.size}\0${s.mtimeMs}\0`);
    const fd = openSync(f, 'r');
    try {
      h.update(head.subarray(0, readSync(fd, head, 0, IDENTITY_BYTES, 0)));
    } finally {
      closeSync(fd);
    }
  }
  return h.digest('hex').slice(0, 16);
}
