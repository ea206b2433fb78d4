// Prefix blocks kept on disk (--kv-cache-dir) so that a restarted engine finds them again.
// Write: when a full block enters the prefix cache (BlockManager's onRegister hook), its K/V for
// every layer go to DIR/<namespace>/<chain hash>.kv, through a temporary name and a rename, so a
// crash or kill never leaves a partial file under a real name, and blocks survive a kill -9
// (writing only at eviction, as LMCache does, would lose everything a crash held in memory).
// Read: before the scheduler looks a waiting sequence's prefix up, the blocks after its cached
// prefix whose chain hashes are on disk are loaded into free blocks and registered, so the lookup
// finds them. The directory is bounded (maxBytes over every namespace): least recently used file
// out first, by mtime (set on write and on every load; atime is unreliable under noatime).
// Synchronous fs on the engine thread: a block is a few hundred KiB at most and goes to the page
// cache (no fsync: a torn file after a power loss fails its checksum and is skipped).
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, utimesSync, writevSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { threadId } from 'node:worker_threads';
import type { KvCache } from '../model/kv-cache.js';
import type { BlockManager } from './block-manager.js';
import { chainHash, decodeBlockFile, encodeBlockHeader, KV_BLOCK_FORMAT } from './kv-block-file.js';
import type { KvBlockKey } from './kv-block-file.js';

export interface KvCacheDirConfig {
  /** the directory (shared by models: each gets a namespace under it) */
  readonly path: string;
  /** bytes the directory's block files may take, all namespaces together */
  readonly maxBytes: number;
  /** the model file's identity (kv-block-file.ts modelIdentity) */
  readonly modelId: string;
}

/** cumulative since the engine started */
export interface DiskCacheStats {
  /** tokens of prompts looked up on disk: each lookup's tokens past its prefix in memory (vLLM's external_prefix_cache_queries) */
  queries: number;
  /** tokens loaded from disk into the prefix cache (vLLM's external_prefix_cache_hits) */
  hits: number;
  blocksLoaded: number;
  blocksWritten: number;
  filesRefused: number;
  filesEvicted: number;
  readMs: number;
  writeMs: number;
}

/** a file used again sooner than this keeps its mtime (its place in memory moves at once) */
const TOUCH_INTERVAL_MS = 60_000;
const STALE_TMP_MS = 3_600_000;

export class DiskPrefixCache {
  readonly stats: DiskCacheStats = { queries: 0, hits: 0, blocksLoaded: 0, blocksWritten: 0, filesRefused: 0, filesEvicted: 0, readMs: 0, writeMs: 0 };
  /** this model's, dtype's and block size's files */
  readonly dir: string;
  private readonly key: KvBlockKey;
  /** every block file under the root, least recently used first: its bytes and when its mtime was set */
  private readonly files = new Map<string, { readonly size: number; touched: number }>();
  private totalBytes = 0;
  /** block id → its chain hash, set when the block is registered (valid while it is) */
  private readonly names = new Map<number, string>();
  private writeFailed = false;
  /** where the one line per refused file or failed write goes */
  log: (line: string) => void = (line) => void process.stderr.write(`${line}\n`);

  constructor(
    readonly config: KvCacheDirConfig,
    private readonly kv: KvCache,
    private readonly blockSize: number,
  ) {
    const dtype = kv.shape.dtype;
    this.key = { model: config.modelId, dtype, blockSize, layout: kv.blockBytes(0).map((v) => v.byteLength).join(',') };
    this.dir = join(config.path, `${config.modelId}-${dtype}-b${blockSize}-v${KV_BLOCK_FORMAT}`);
    mkdirSync(this.dir, { recursive: true });
    this.scan();
    this.trim();
  }

  /** bytes of block files in the directory (all namespaces) */
  get bytes(): number {
    return this.totalBytes;
  }

  /** BlockManager's onRegister: names the block and saves it unless the directory has it */
  registered(block: number, parentBlock: number, root: number, tokens: ArrayLike<number>, start: number): void {
    const parent = parentBlock < 0 ? root : this.names.get(parentBlock);
    if (parent === undefined) return; // not reached: a registered block's parent is registered
    const hash = chainHash(parent, tokens, start, this.blockSize);
    this.names.set(block, hash);
    const path = this.pathOf(hash);
    if (this.files.has(path)) return;
    const t0 = performance.now();
    const payload = this.kv.blockBytes(block);
    const parts = [encodeBlockHeader(this.key, hash, payload), ...payload];
    const bytes = parts.reduce((n, p) => n + p.byteLength, 0);
    const tmp = `${path}.${process.pid}-${threadId}.tmp`; // replicas may be threads of one process
    try {
      const fd = openSync(tmp, 'w');
      try {
        // from the cache's arrays as they lie; a regular file takes a writev whole
        const written = writevSync(fd, parts);
        if (written !== bytes) throw new Error(`wrote ${written} of ${bytes} bytes`);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, path);
    } catch (err) {
      try { unlinkSync(tmp); } catch { /* never written */ }
      if (!this.writeFailed) this.log(`kv-cache-dir: cannot write ${path}: ${err instanceof Error ? err.message : String(err)} (further write errors are not logged)`);
      this.writeFailed = true;
      return;
    }
    this.add(path, bytes);
    this.stats.blocksWritten++;
    this.stats.writeMs += performance.now() - t0;
    this.trim();
  }

  /**
   * Loads the blocks of `tokens` (a waiting sequence's, its chain rooted at `root`) that follow its
   * prefix in memory and are on disk, consecutively, into free blocks, and registers them: the
   * scheduler's findCachedPrefix then finds them. Leaves ≥ 1 token to compute, as the lookup does.
   */
  fill(blocks: BlockManager, tokens: ArrayLike<number>, root: number): void {
    const bs = this.blockSize;
    const maxBlocks = Math.floor(Math.max(0, tokens.length - 1) / bs);
    const inMemory = blocks.cachedPrefix(tokens, root);
    this.stats.queries += tokens.length - inMemory.length * bs;
    // a prefix used from memory is used on disk too: tail first, so that its head is the last to go
    for (let i = inMemory.length - 1; i >= 0; i--) {
      const name = this.names.get(inMemory[i]!);
      if (name !== undefined) this.touch(this.pathOf(name));
    }
    let parent: string | number | undefined = inMemory.length === 0 ? root : this.names.get(inMemory[inMemory.length - 1]!);
    if (parent === undefined) return;
    const found: string[] = [];
    for (let i = inMemory.length; i < maxBlocks; i++) {
      const hash = chainHash(parent, tokens, i * bs, bs);
      if (!this.files.has(this.pathOf(hash))) break;
      found.push(hash);
      parent = hash;
    }
    if (found.length === 0) return;
    const owner = { blockTable: [] as number[], prefixRoot: root };
    const covered = (n: number) => (inMemory.length + n) * bs;
    let n = found.length;
    while (n > 0 && !blocks.canAllocate(owner, covered(n), inMemory)) n--; // never more than the free pool holds
    if (n === 0) return;
    const t0 = performance.now();
    blocks.allocate(owner, covered(n), inMemory);
    let loaded = 0;
    while (loaded < n && this.load(found[loaded]!, owner.blockTable[inMemory.length + loaded]!)) loaded++;
    if (loaded < n) {
      if (inMemory.length + loaded === 0) {
        blocks.free(owner);
        return;
      }
      blocks.truncate(owner, covered(loaded));
    }
    blocks.cacheFullBlocks(owner, tokens, covered(loaded));
    blocks.free(owner);
    for (let i = loaded - 1; i >= 0; i--) this.touch(this.pathOf(found[i]!));
    this.stats.blocksLoaded += loaded;
    this.stats.hits += loaded * bs;
    this.stats.readMs += performance.now() - t0;
  }

  /**
   * Removes this namespace's block files, the ones this engine could load (POST
   * /reset_prefix_cache?reset_external=true); other models', dtypes' and block sizes' files stay.
   * A block still held in memory is written again when it is registered again.
   */
  clear(): number {
    let removed = 0;
    for (const name of readdirSync(this.dir)) {
      if (!name.endsWith('.kv')) continue; // a .tmp is another writer's, still writing
      const path = join(this.dir, name);
      if (this.files.has(path)) this.remove(path);
      else try { unlinkSync(path); } catch { /* removed meanwhile */ }
      removed++;
    }
    return removed;
  }

  /** reads, checks and copies one file into block b; false (one log line, the file removed) when refused */
  private load(hash: string, b: number): boolean {
    const path = this.pathOf(hash);
    let refused: string;
    try {
      const decoded = decodeBlockFile(readFileSync(path), this.key, hash);
      if ('payload' in decoded) {
        let at = 0;
        for (const view of this.kv.blockBytes(b)) {
          view.set(decoded.payload.subarray(at, at + view.byteLength));
          at += view.byteLength;
        }
        return true;
      }
      refused = decoded.refused;
    } catch (err) {
      refused = err instanceof Error ? err.message : String(err);
    }
    this.log(`kv-cache-dir: skipped ${path}: ${refused}`);
    this.stats.filesRefused++;
    this.remove(path);
    return false;
  }

  /** moves a file to the most recently used end; its mtime (what a restart orders by) is set at most once a minute */
  private touch(path: string): void {
    const f = this.files.get(path);
    if (!f) return;
    this.files.delete(path);
    this.files.set(path, f);
    const now = Date.now();
    if (now - f.touched < TOUCH_INTERVAL_MS) return;
    f.touched = now;
    try {
      utimesSync(path, now / 1000, now / 1000);
    } catch { /* removed by another process: found missing on its next load */ }
  }

  private pathOf(hash: string): string {
    return join(this.dir, `${hash}.kv`);
  }

  /** every block file under the root, oldest first */
  private scan(): void {
    const found: { path: string; size: number; mtime: number }[] = [];
    for (const ns of readdirSync(this.config.path, { withFileTypes: true })) {
      if (!ns.isDirectory()) continue;
      const dir = join(this.config.path, ns.name);
      for (const name of readdirSync(dir)) {
        const tmp = name.endsWith('.tmp');
        if (!tmp && !name.endsWith('.kv')) continue;
        try {
          const s = statSync(join(dir, name));
          // a temporary file an hour old was left by a killed writer, not one still writing
          if (tmp && Date.now() - s.mtimeMs > STALE_TMP_MS) unlinkSync(join(dir, name));
          else if (!tmp && s.isFile()) found.push({ path: join(dir, name), size: s.size, mtime: s.mtimeMs });
        } catch { /* removed meanwhile */ }
      }
    }
    found.sort((a, b) => a.mtime - b.mtime);
    for (const f of found) this.add(f.path, f.size, f.mtime);
  }

  private add(path: string, size: number, touched = Date.now()): void {
    this.files.set(path, { size, touched });
    this.totalBytes += size;
  }

  private remove(path: string): void {
    const f = this.files.get(path);
    if (f === undefined) return;
    this.files.delete(path);
    this.totalBytes -= f.size;
    try { unlinkSync(path); } catch { /* already gone */ }
  }

  /** least recently used files out until the directory fits its bound */
  private trim(): void {
    for (const path of this.files.keys()) {
      if (this.totalBytes <= this.config.maxBytes) break;
      this.remove(path);
      this.stats.filesEvicted++;
    }
  }
}
