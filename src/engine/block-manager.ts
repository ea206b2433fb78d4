// The paged KV cache's bookkeeping: reference counts, automatic prefix caching, copy-on-write.
// The only code that changes block tables. Every block is in exactly one state:
//   free    refcount 0, unregistered                  FreeBlocks (a sequence's next block next to its last)
//   cached  refcount 0, mapped in the prefix cache    intrusive LRU list (head = next evicted)
//   held    refcount > 0 (= number of tables holding it), mapped or not
// Prefix cache: a registered full block has a content id (cid) naming its exact token prefix;
// cid 0 is the empty prefix, cids are never reused. The map is hash53(parent cid, token ids) → block,
// and lookups verify the stored parent cid and ids, so a hash collision costs a hit, never wrong KV.
// A registered block is full, never written again, and its cid names the exact prefix of every table
// holding it (tables may share a block after different but identical-content blocks: same cid).
// Checkpoints of what KV blocks cannot rebuild (state-checkpoints.ts, window-checkpoints.ts) hang on registered blocks: the
// `uncached` hook tells them when a block leaves the prefix cache (evicted or reset), and a lookup
// may stop at the deepest block that carries one (findCachedPrefix's `usable`).
// A sliding-window pool (swa-blocks.ts, prefix caching off) releases a table's leading blocks once
// no window can reach them: their entries become NONE (-1) and keep the positions of the rest.

import { hashBlock } from './block-hash.js';
import { FreeBlocks } from './free-blocks.js';
import type { BlockHashFn } from './block-hash.js';
import type { KvEventRecorder } from './kv-events.js';

export type { BlockHashFn };

export interface BlockOwner {
  /** block ids in position order; mutated only by the BlockManager */
  readonly blockTable: number[];
  /** the content id its prefix chain starts from: 0 (shared by all), or a cache salt's (saltRoot) */
  readonly prefixRoot?: number;
}

/**
 * The chain root of a cache salt (vLLM's cache_salt): requests with different salts never
 * share prefix blocks. A 53-bit hash of the salt in [2^52, 2^53), far above any cid the
 * manager hands out, so a salted chain cannot meet an unsalted one.
 */
export function saltRoot(salt: string | undefined): number {
  if (salt === undefined) return 0;
  const codes = Array.from(salt, (c) => c.codePointAt(0)!);
  return 2 ** 52 + (hashBlock(0x5a17, codes, 0, codes.length) % 2 ** 52);
}
/** copy-on-write: copy KV block src → dst (all layers) before writing dst */
export interface CopyOp { readonly src: number; readonly dst: number }
/** a full block entered the prefix cache (or was named after an identical one): block ids, the chain's root, its tokens at start */
export type RegisterHook = (block: number, parentBlock: number, root: number, tokens: ArrayLike<number>, start: number) => void;
/** in tokens */
export interface PrefixCacheStats { queries: number; hits: number }

const NONE = -1;

export class BlockManager {
  readonly blockSize: number;
  readonly numBlocks: number;
  readonly enablePrefixCaching: boolean;
  readonly stats: PrefixCacheStats = { queries: 0, hits: 0 };

  private readonly hash: BlockHashFn;
  private readonly refCount: Int32Array;  // [numBlocks]
  private readonly fill: Int32Array;      // [numBlocks] slots written or allocated, shared by all holders
  private readonly freeBlocks: FreeBlocks;
  private readonly prev: Int32Array;      // [numBlocks + 1] LRU links; index numBlocks is the sentinel
  private readonly next: Int32Array;
  private lruSize = 0;
  private readonly cid: Float64Array;       // [numBlocks] content id of a registered block, else NONE
  private readonly key: Float64Array;       // [numBlocks] map key if this block is the mapped one, else NONE
  private readonly parentCid: Float64Array; // [numBlocks] of mapped blocks
  private readonly ids: Int32Array;         // [numBlocks, blockSize] token ids of mapped blocks
  private readonly cache = new Map<number, number>(); // key → mapped block
  private nextCid = 1;

  /** told when blocks enter and leave the prefix cache (KV events for a router), if set */
  private readonly events: KvEventRecorder | undefined;
  /** told when a block leaves the prefix cache (evicted, or the cache reset), if set */
  private readonly uncached: ((block: number) => void) | undefined;
  /** told when a block is registered: its parent block (-1: first), the chain's root, its tokens (disk prefix cache) */
  private readonly onRegister: RegisterHook | undefined;

  constructor(opts: {
    numBlocks: number; blockSize: number; enablePrefixCaching: boolean; hash?: BlockHashFn; events?: KvEventRecorder;
    uncached?: (block: number) => void; onRegister?: RegisterHook;
  }) {
    const { numBlocks, blockSize } = opts;
    if (!(Number.isInteger(numBlocks) && numBlocks > 0)) throw new RangeError(`numBlocks must be a positive integer, got ${numBlocks}`);
    if (!(Number.isInteger(blockSize) && blockSize > 0)) throw new RangeError(`blockSize must be a positive integer, got ${blockSize}`);
    this.numBlocks = numBlocks;
    this.blockSize = blockSize;
    this.enablePrefixCaching = opts.enablePrefixCaching;
    this.hash = opts.hash ?? hashBlock;
    this.events = opts.events;
    this.uncached = opts.uncached;
    this.onRegister = opts.onRegister;
    this.refCount = new Int32Array(numBlocks);
    this.fill = new Int32Array(numBlocks);
    this.freeBlocks = new FreeBlocks(numBlocks); // block 0 is taken first
    this.prev = new Int32Array(numBlocks + 1).fill(numBlocks);
    this.next = new Int32Array(numBlocks + 1).fill(numBlocks);
    this.cid = new Float64Array(numBlocks).fill(NONE);
    this.key = new Float64Array(numBlocks).fill(NONE);
    this.parentCid = new Float64Array(numBlocks).fill(NONE);
    this.ids = new Int32Array(numBlocks * blockSize);
  }

  /** free + evictable cached blocks (refcount 0) */
  get numFreeBlocks(): number {
    return this.freeBlocks.size + this.lruSize;
  }

  /** blocks in the prefix cache (held or evictable) */
  get numCachedBlocks(): number {
    return this.cache.size;
  }

  /** fraction of blocks held by live owners (refcount > 0), 0..1 */
  usage(): number {
    return 1 - this.numFreeBlocks / this.numBlocks;
  }

  /** Longest prefix of `tokens` held in cached full blocks, leaving ≥ 1 token to compute: the blocks,
   *  not yet taken (pass them to canAllocate/allocate before any other allocate can evict them).
   *  `usable`: only a prefix whose last block passes it counts (a hybrid model's: one with a state checkpoint). */
  findCachedPrefix(tokens: ArrayLike<number>, root = 0, usable?: (block: number) => boolean): number[] {
    const found = this.cachedPrefix(tokens, root);
    if (!this.enablePrefixCaching) return found;
    if (usable) while (found.length > 0 && !usable(found[found.length - 1]!)) found.pop();
    this.stats.queries += tokens.length;
    this.stats.hits += found.length * this.blockSize;
    return found;
  }

  /** The longest prefix of `tokens` in cached full blocks, leaving ≥ 1 token to compute (a peek: no stats). */
  cachedPrefix(tokens: ArrayLike<number>, root = 0): number[] {
    const found: number[] = [];
    if (!this.enablePrefixCaching) return found;
    const bs = this.blockSize;
    const maxBlocks = Math.floor(Math.max(0, tokens.length - 1) / bs);
    for (let i = 0, parent = root; i < maxBlocks; i++) {
      const b = this.lookup(parent, tokens, i * bs);
      if (b === NONE) break;
      found.push(b);
      parent = this.cid[b]!;
    }
    return found;
  }

  /** Whether owner can grow to cover `numTokens` tokens in total after taking `cached`. */
  canAllocate(owner: BlockOwner, numTokens: number, cached: readonly number[] = []): boolean {
    return this.blocksNeeded(owner, numTokens, cached) <= this.numFreeBlocks;
  }

  /** Takes `cached` (only into an empty table), then appends fresh blocks until owner covers numTokens.
   *  Returns a copy op when owner's partly filled last block is shared and is about to be written
   *  (a fresh block replaces it in owner's table; the caller copies src → dst first). Throws if short. */
  allocate(owner: BlockOwner, numTokens: number, cached: readonly number[] = []): CopyOp[] {
    const needed = this.blocksNeeded(owner, numTokens, cached);
    if (needed > this.numFreeBlocks) throw new Error(`allocate: need ${needed} blocks, ${this.numFreeBlocks} free`);
    const bs = this.blockSize;
    const table = owner.blockTable;
    for (const b of cached) {
      if (this.refCount[b]!++ === 0) this.unlink(b);
      table.push(b);
    }
    const covered = this.coverage(table);
    const ops: CopyOp[] = [];
    if (numTokens <= covered) return ops;
    if (covered % bs !== 0) {
      let last = table[table.length - 1]!;
      if (this.refCount[last]! > 1) { // shared partial block (fork): write into a private copy
        const dst = this.take();
        this.refCount[last]!--;
        this.fill[dst] = this.fill[last]!;
        table[table.length - 1] = dst;
        ops.push({ src: last, dst });
        last = dst;
      }
      this.fill[last] = Math.min(bs, numTokens - (table.length - 1) * bs);
    }
    while (table.length * bs < numTokens) {
      const b = this.take(table.length > 0 ? table[table.length - 1]! : NONE);
      this.fill[b] = Math.min(bs, numTokens - table.length * bs);
      table.push(b);
    }
    return ops;
  }

  /** Registers owner's full blocks among its first numComputed tokens (`tokens` = owner's tokens so far).
   *  Returns how many of them entered the prefix cache (a block whose content was already cached does not). */
  cacheFullBlocks(owner: BlockOwner, tokens: ArrayLike<number>, numComputed: number): number {
    if (!this.enablePrefixCaching) return 0;
    const bs = this.blockSize;
    const table = owner.blockTable;
    const computed = Math.min(numComputed, tokens.length);
    if (computed > this.coverage(table)) throw new Error(`cacheFullBlocks: ${computed} tokens computed but only ${this.coverage(table)} allocated`);
    const numFull = Math.floor(computed / bs);
    let i = numFull; // walk back to the last registered block: its cid names our prefix up to it
    while (i > 0 && this.cid[table[i - 1]!] === NONE) i--;
    let parent = i === 0 ? (owner.prefixRoot ?? 0) : this.cid[table[i - 1]!]!;
    let entered = 0;
    for (; i < numFull; i++) {
      const b = table[i]!;
      const start = i * bs;
      const h = this.hash(parent, tokens, start, bs);
      const found = this.cache.get(h);
      const entersCache = found === undefined;
      if (entersCache) {
        entered++;
        this.cache.set(h, b);
        this.key[b] = h;
        this.parentCid[b] = parent;
        for (let j = 0; j < bs; j++) this.ids[b * bs + j] = tokens[start + j]!;
        this.cid[b] = this.nextCid++;
      } else if (this.matches(found, parent, tokens, start)) {
        this.cid[b] = this.cid[found]!; // same content computed twice: same name, stays unmapped
      } else {
        this.cid[b] = this.nextCid++; // hash collision: named (children can be cached) but unmapped
      }
      this.events?.registered(b, i === 0 ? -1 : table[i - 1]!, tokens, start, entersCache);
      this.onRegister?.(b, i === 0 ? -1 : table[i - 1]!, owner.prefixRoot ?? 0, tokens, start);
      parent = this.cid[b]!;
    }
    return entered;
  }

  /** child (empty table) shares all of parent's blocks, refcount + 1 each. */
  fork(parent: BlockOwner, child: BlockOwner): void {
    if (child.blockTable.length !== 0) throw new Error('fork: child already holds blocks');
    for (const b of parent.blockTable) {
      if (b !== NONE) this.refCount[b]!++;
      child.blockTable.push(b);
    }
  }

  /** Releases owner's blocks at table indices < `count` (already released ones are NONE); never the
   *  last block. Only for tables that are not registered in the prefix cache. */
  releaseLeading(owner: BlockOwner, count: number): void {
    const table = owner.blockTable;
    const end = Math.min(count, table.length - 1);
    for (let i = 0; i < end; i++) {
      const b = table[i]!;
      if (b === NONE) continue;
      if (this.key[b] !== NONE) throw new Error(`releaseLeading: block ${b} is in the prefix cache`);
      if (--this.refCount[b]! === 0) this.release(b);
      table[i] = NONE;
    }
  }

  /** Shrinks owner's table to cover numTokens (> 0) tokens: the blocks past them (taken for
   *  speculative tokens that were rejected: held by owner alone, unregistered) are freed. */
  truncate(owner: BlockOwner, numTokens: number): void {
    const table = owner.blockTable;
    const bs = this.blockSize;
    const keep = Math.ceil(numTokens / bs);
    if (!(keep > 0) || keep > table.length) throw new Error(`truncate: ${numTokens} tokens, ${table.length} blocks held`);
    while (table.length > keep) {
      const b = table.pop()!;
      if (this.refCount[b] !== 1 || this.key[b] !== NONE) throw new Error(`truncate: block ${b} is shared or cached`);
      this.refCount[b] = 0;
      this.release(b);
    }
    const last = table[keep - 1]!;
    const fill = numTokens - (keep - 1) * bs;
    if (fill < this.fill[last]!) {
      if (this.refCount[last] !== 1 || this.key[last] !== NONE) throw new Error(`truncate: block ${last} is shared or cached`);
      this.fill[last] = fill;
    }
  }

  /** Releases owner's blocks, tail first so that tails are evicted before their prefixes. */
  free(owner: BlockOwner): void {
    const table = owner.blockTable;
    for (let i = table.length - 1; i >= 0; i--) {
      const b = table[i]!;
      if (b === NONE) continue; // released by releaseLeading
      if (!(this.refCount[b]! > 0)) throw new Error(`free: block ${b} is not held`);
      if (--this.refCount[b]! > 0) continue;
      if (this.key[b] !== NONE) this.append(b);
      else this.release(b);
    }
    table.length = 0;
  }

  /** Empties the prefix cache: evictable blocks become free, held blocks become unregistered (their
   *  owners re-register them on their next cacheFullBlocks). Always succeeds: returns true. */
  resetPrefixCache(): boolean {
    const s = this.numBlocks;
    for (let b = this.next[s]!; b !== s; ) {
      const n = this.next[b]!;
      this.key[b] = NONE;
      this.release(b);
      b = n;
    }
    this.next[s] = this.prev[s] = s;
    this.lruSize = 0;
    for (const b of this.cache.values()) {
      this.key[b] = NONE;
      this.uncached?.(b);
    }
    this.cache.clear();
    this.cid.fill(NONE);
    this.events?.cleared();
    return true;
  }

  /** whether block b is in the prefix cache (mapped: a lookup can reach it) */
  isCached(b: number): boolean {
    return this.key[b] !== NONE;
  }

  /** The block a lookup reaches for the content of owner's i-th block: that block when it is
   *  mapped; when the same content was cached first by another table (ours then stays unmapped),
   *  that table's block; else undefined. */
  mappedTwin(owner: BlockOwner, tokens: ArrayLike<number>, i: number): number | undefined {
    const b = owner.blockTable[i];
    if (b === undefined || this.cid[b] === NONE) return undefined;
    if (this.isCached(b)) return b;
    const parent = i === 0 ? (owner.prefixRoot ?? 0) : this.cid[owner.blockTable[i - 1]!]!;
    const twin = this.lookup(parent, tokens, i * this.blockSize);
    return twin === NONE ? undefined : twin;
  }

  /** the evictable cached blocks, the next to be evicted first */
  *evictionOrder(): Generator<number> {
    const s = this.numBlocks;
    for (let b = this.next[s]!; b !== s; b = this.next[b]!) yield b;
  }

  /** Checks every invariant in O(numBlocks + table lengths); with owners, also refcounts = table counts. */
  assertConsistent(owners?: Iterable<BlockOwner>): void {
    const n = this.numBlocks;
    const state = new Uint8Array(n); // 0 held, 1 free, 2 cached
    const fail = (msg: string): never => { throw new Error(`BlockManager inconsistent: ${msg}`); };
    for (const b of this.freeBlocks) {
      if (state[b] !== 0) fail(`block ${b} twice in the free list`);
      if (this.refCount[b] !== 0 || this.key[b] !== NONE || this.cid[b] !== NONE) fail(`free block ${b} is held or registered`);
      state[b] = 1;
    }
    let count = 0;
    for (let b = this.next[n]!; b !== n; b = this.next[b]!) {
      if (state[b] !== 0) fail(`block ${b} in two lists`);
      if (this.next[this.prev[b]!] !== b || this.prev[this.next[b]!] !== b) fail(`LRU links broken at ${b}`);
      if (this.refCount[b] !== 0 || this.key[b] === NONE) fail(`cached block ${b} is held or unmapped`);
      state[b] = 2;
      if (++count > n) fail('LRU cycle');
    }
    if (count !== this.lruSize) fail(`LRU size ${this.lruSize}, ${count} linked`);
    let mapped = 0;
    for (let b = 0; b < n; b++) {
      if (state[b] === 0 && !(this.refCount[b]! > 0)) fail(`block ${b} in no list and not held`);
      if (this.key[b] === NONE) continue;
      mapped++;
      if (this.cache.get(this.key[b]!) !== b || this.cid[b] === NONE) fail(`block ${b} has a stale key`);
    }
    if (mapped !== this.cache.size) fail(`map holds ${this.cache.size} blocks, ${mapped} keyed`);
    if (!owners) return;
    const counts = new Int32Array(n);
    for (const { blockTable: t } of owners) {
      for (let i = 0; i < t.length; i++) {
        const b = t[i]!;
        if (b === NONE) {
          if (i === t.length - 1) fail('a table ends in a released block');
          continue;
        }
        counts[b]!++;
        if (i < t.length - 1 && this.fill[b] !== this.blockSize) fail(`block ${b} is not full but not last`);
        if (this.cid[b] !== NONE && this.fill[b] !== this.blockSize) fail(`registered block ${b} is not full`);
      }
    }
    for (let b = 0; b < n; b++) if (counts[b] !== this.refCount[b]) fail(`block ${b} refcount ${this.refCount[b]}, in ${counts[b]} tables`);
  }

  /** tokens the owner's blocks cover (all but the last block are full) */
  private coverage(table: readonly number[]): number {
    return table.length === 0 ? 0 : (table.length - 1) * this.blockSize + this.fill[table[table.length - 1]!]!;
  }

  /** blocks taken out of the free + evictable pool by allocate(owner, numTokens, cached) */
  private blocksNeeded(owner: BlockOwner, numTokens: number, cached: readonly number[]): number {
    const table = owner.blockTable;
    let needed = 0;
    if (cached.length > 0) {
      if (table.length !== 0) throw new Error('allocate: cached blocks can only start an empty table');
      let parent = owner.prefixRoot ?? 0;
      for (const b of cached) { // a stale list (blocks evicted since findCachedPrefix) would share wrong KV
        if (this.key[b] === NONE || this.parentCid[b] !== parent) throw new Error(`allocate: cached block ${b} is no longer cached`);
        parent = this.cid[b]!;
        if (this.refCount[b] === 0) needed++;
      }
    }
    const bs = this.blockSize;
    const covered = cached.length > 0 ? cached.length * bs : this.coverage(table);
    if (numTokens <= covered) return needed;
    const last = table[table.length - 1];
    if (covered % bs !== 0 && last !== undefined && this.refCount[last]! > 1) needed++; // copy-on-write
    return needed + Math.ceil(numTokens / bs) - Math.max(table.length, cached.length);
  }

  /** the mapped block holding exactly (parent prefix, tokens[start, start + blockSize)), or NONE */
  private lookup(parent: number, tokens: ArrayLike<number>, start: number): number {
    const b = this.cache.get(this.hash(parent, tokens, start, this.blockSize));
    return b !== undefined && this.matches(b, parent, tokens, start) ? b : NONE;
  }

  private matches(b: number, parent: number, tokens: ArrayLike<number>, start: number): boolean {
    if (this.parentCid[b] !== parent) return false;
    const bs = this.blockSize;
    for (let j = 0; j < bs; j++) if (this.ids[b * bs + j] !== tokens[start + j]) return false;
    return true;
  }

  /** a fresh block (refcount 1, empty): from the free pool (the one after `after` when that one is
   *  free), else evicts the least recently used */
  private take(after = NONE): number {
    let b = after === NONE ? NONE : this.freeBlocks.takeIfFree(after + 1);
    if (b === NONE) b = this.freeBlocks.take();
    if (b === NONE) {
      b = this.next[this.numBlocks]!;
      if (b === this.numBlocks) throw new Error('BlockManager: out of blocks');
      this.unlink(b);
      this.events?.removed(b);
      this.uncached?.(b);
      this.cache.delete(this.key[b]!);
      this.key[b] = NONE;
      this.cid[b] = NONE;
    }
    this.refCount[b] = 1;
    this.fill[b] = 0;
    return b;
  }

  private release(b: number): void {
    this.cid[b] = NONE;
    this.freeBlocks.release(b);
  }

  private append(b: number): void { // at the LRU tail (most recently used)
    const s = this.numBlocks;
    const tail = this.prev[s]!;
    this.prev[b] = tail;
    this.next[b] = s;
    this.next[tail] = b;
    this.prev[s] = b;
    this.lruSize++;
  }

  private unlink(b: number): void {
    const p = this.prev[b]!, n = this.next[b]!;
    this.next[p] = n;
    this.prev[n] = p;
    this.lruSize--;
  }
}
