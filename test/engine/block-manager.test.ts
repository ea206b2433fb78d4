// Block manager: allocation round trips, exact capacity checks, prefix-cache hits at block
// granularity, LRU eviction order, fork + copy-on-write, reset, stats, hash collisions, and a
// seeded model-based test that simulates the KV cache slot by slot through thousands of operations.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BlockManager } from '../../src/engine/block-manager.js';
import { hashBlock } from '../../src/engine/block-hash.js';
import type { BlockHashFn, BlockOwner } from '../../src/engine/block-manager.js';
import { Rng } from '../../src/engine/rng.js';
import { FreeBlocks, RUNWAY_BLOCKS } from '../../src/engine/free-blocks.js';

const owner = (): BlockOwner => ({ blockTable: [] });
const manager = (numBlocks: number, blockSize = 4, enablePrefixCaching = true, hash?: BlockHashFn): BlockManager =>
  new BlockManager({ numBlocks, blockSize, enablePrefixCaching, ...(hash ? { hash } : {}) });
const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

/** allocates, "computes" and registers `tokens` for a new owner, taking what the cache has */
function prefill(bm: BlockManager, tokens: number[], o: BlockOwner = owner()): BlockOwner {
  bm.allocate(o, tokens.length, bm.findCachedPrefix(tokens));
  bm.cacheFullBlocks(o, tokens, tokens.length);
  return o;
}

describe('BlockManager: allocation', () => {
  it('allocate/free round trips return to baseline', () => {
    const bm = manager(8);
    const a = owner();
    assert.deepEqual(bm.allocate(a, 10), []);
    assert.deepEqual(a.blockTable, [0, 1, 2]);
    assert.equal(bm.numFreeBlocks, 5);
    assert.equal(bm.usage(), 3 / 8);
    bm.allocate(a, 12); // the last block still has room
    assert.equal(a.blockTable.length, 3);
    bm.allocate(a, 13);
    assert.equal(a.blockTable.length, 4);
    bm.assertConsistent([a]);
    bm.free(a);
    assert.deepEqual(a.blockTable, []);
    assert.equal(bm.numFreeBlocks, 8);
    assert.equal(bm.usage(), 0);
    bm.assertConsistent([a]);
  });

  it('canAllocate is false exactly when blocks are short, and allocate then throws without changing anything', () => {
    const bm = manager(4);
    const a = owner(), b = owner();
    assert.equal(bm.canAllocate(a, 16), true);
    assert.equal(bm.canAllocate(a, 17), false);
    assert.throws(() => bm.allocate(a, 17), /need 5 blocks, 4 free/);
    assert.deepEqual(a.blockTable, []);
    assert.equal(bm.numFreeBlocks, 4);
    bm.allocate(a, 5); // 2 blocks, the second holding 1 token
    assert.equal(bm.canAllocate(a, 16), true);
    assert.equal(bm.canAllocate(a, 17), false);
    assert.equal(bm.canAllocate(b, 8), true);
    assert.equal(bm.canAllocate(b, 9), false);
    assert.equal(bm.canAllocate(a, 3), true); // already covered
    assert.deepEqual(bm.allocate(a, 3), []);
    bm.assertConsistent([a, b]);
  });
});

describe('BlockManager: releasing blocks behind a sliding window', () => {
  it('releaseLeading frees leading blocks (never the last), forks and frees skip them, refcounts hold', () => {
    const bm = manager(8, 4, false);
    const a = owner();
    bm.allocate(a, 14); // 4 blocks
    const [b0, b1] = a.blockTable;
    bm.releaseLeading(a, 2);
    assert.deepEqual(a.blockTable.slice(0, 2), [-1, -1]);
    assert.equal(bm.numFreeBlocks, 6);
    bm.releaseLeading(a, 10); // clamps: the last block stays
    assert.deepEqual(a.blockTable.map((b) => b >= 0), [false, false, false, true]);
    const c = owner();
    bm.fork(a, c);
    bm.assertConsistent([a, c]);
    bm.allocate(c, 15); // copy-on-write of the shared partial last block
    bm.assertConsistent([a, c]);
    bm.free(a);
    bm.free(c);
    assert.equal(bm.numFreeBlocks, 8);
    bm.assertConsistent([]);
    assert.ok(b0 !== undefined && b1 !== undefined);
  });

  it('refuses to release a block registered in the prefix cache', () => {
    const bm = manager(8, 4, true);
    const a = prefill(bm, range(10));
    assert.throws(() => bm.releaseLeading(a, 1), /prefix cache/);
  });
});

describe('BlockManager: prefix cache', () => {
  const P = range(10, 100); // 2.5 blocks of 4

  it('hits shared prefixes at block granularity', () => {
    const bm = manager(16);
    const a = prefill(bm, P);
    assert.equal(bm.numCachedBlocks, 2); // the half block is never cached
    const [a0, a1] = a.blockTable;
    assert.deepEqual(bm.findCachedPrefix([...P, 7, 7]), [a0, a1]);
    assert.deepEqual(bm.findCachedPrefix([...P.slice(0, 5), 1, 2, 3, 4]), [a0]);
    assert.deepEqual(bm.findCachedPrefix([1, ...P]), []);
    const b = prefill(bm, [...P.slice(0, 9), 55]);
    assert.deepEqual(b.blockTable.slice(0, 2), [a0, a1]);
    assert.notEqual(b.blockTable[2], a.blockTable[2]);
    bm.assertConsistent([a, b]);
  });

  it('leaves at least one token to compute', () => {
    const bm = manager(16);
    const a = prefill(bm, range(12, 100)); // 3 full blocks
    const [a0, a1, a2] = a.blockTable;
    assert.deepEqual(bm.findCachedPrefix(range(8, 100)), [a0]); // exactly 2 blocks: ≤ 7 tokens hit → 1 block
    assert.deepEqual(bm.findCachedPrefix(range(9, 100)), [a0, a1]);
    assert.deepEqual(bm.findCachedPrefix(range(12, 100)), [a0, a1]);
    assert.deepEqual(bm.findCachedPrefix(range(13, 100)), [a0, a1, a2]);
    assert.deepEqual(bm.findCachedPrefix([100]), []);
    assert.deepEqual(bm.findCachedPrefix([]), []);
  });

  it('registers only full blocks among the computed tokens (chunked prefill)', () => {
    const bm = manager(16);
    const a = owner();
    bm.allocate(a, 7);
    bm.cacheFullBlocks(a, P, 7);
    assert.equal(bm.numCachedBlocks, 1);
    bm.allocate(a, 10);
    bm.cacheFullBlocks(a, P, 10);
    assert.equal(bm.numCachedBlocks, 2);
    assert.throws(() => bm.cacheFullBlocks(a, [...P, 1, 2, 3], 13), /only 10 allocated/);
    bm.assertConsistent([a]);
  });

  it('reuses freed cached blocks for a later request', () => {
    const bm = manager(8);
    const a = prefill(bm, range(12, 100));
    const blocks = [...a.blockTable];
    bm.free(a);
    assert.equal(bm.numFreeBlocks, 8); // evictable counts as free
    assert.equal(bm.usage(), 0);
    const cached = bm.findCachedPrefix(range(13, 100));
    assert.deepEqual(cached, blocks);
    assert.equal(bm.canAllocate(a, 13, cached), true);
    const b = owner();
    bm.allocate(b, 13, cached);
    assert.deepEqual(b.blockTable.slice(0, 3), blocks);
    assert.equal(bm.numFreeBlocks, 4);
    bm.assertConsistent([b]);
  });

  it('takes truly free blocks before evicting, then evicts least recently used first, tails first', () => {
    const bm = manager(8);
    const seqs = [range(8, 100), range(8, 200), range(8, 300)].map((t) => ({ t, o: prefill(bm, t) }));
    for (const { o } of seqs) bm.free(o); // LRU: a1 a0 b1 b0 c1 c0; 2 truly free blocks
    const hits = (): number[] => seqs.map(({ t }) => bm.findCachedPrefix([...t, 1]).length);
    assert.deepEqual(hits(), [2, 2, 2]);
    const d = owner();
    bm.allocate(d, 8); // the free blocks
    assert.deepEqual(hits(), [2, 2, 2]);
    bm.allocate(d, 12); // evicts a1
    assert.deepEqual(hits(), [1, 2, 2]);
    // b is used again (its fresh block evicts a0), then freed: b's blocks move behind c's
    const b = owner();
    bm.allocate(b, 9, bm.findCachedPrefix([...seqs[1]!.t, 1]));
    assert.deepEqual(hits(), [0, 2, 2]);
    bm.free(b); // LRU: c1 c0 b1 b0; b's third block is truly free
    bm.allocate(d, 16); // the free block
    assert.deepEqual(hits(), [0, 2, 2]);
    bm.allocate(d, 20); // c1
    assert.deepEqual(hits(), [0, 2, 1]);
    bm.allocate(d, 24); // c0
    assert.deepEqual(hits(), [0, 2, 0]);
    bm.assertConsistent([d]);
    assert.equal(bm.numFreeBlocks, 2);
  });

  it('counts queries and hits in tokens; does nothing when disabled', () => {
    const bm = manager(8);
    prefill(bm, P);
    assert.deepEqual(bm.stats, { queries: 10, hits: 0 });
    bm.findCachedPrefix([...P, 1]);
    assert.deepEqual(bm.stats, { queries: 21, hits: 8 });
    const off = manager(8, 4, false);
    const a = prefill(off, P);
    assert.deepEqual(off.findCachedPrefix([...P, 1]), []);
    assert.deepEqual(off.stats, { queries: 0, hits: 0 });
    assert.equal(off.numCachedBlocks, 0);
    off.free(a);
    off.assertConsistent([a]);
  });

  it('resetPrefixCache empties the cache, frees evictable blocks and unregisters held ones', () => {
    const bm = manager(8);
    const a = prefill(bm, range(8, 100));
    const b = prefill(bm, range(9, 200));
    bm.free(a);
    assert.equal(bm.resetPrefixCache(), true);
    assert.equal(bm.numCachedBlocks, 0);
    assert.equal(bm.numFreeBlocks, 5);
    assert.deepEqual(bm.findCachedPrefix(range(9, 100)), []);
    assert.deepEqual(bm.findCachedPrefix(range(9, 200)), []);
    bm.assertConsistent([b]);
    bm.cacheFullBlocks(b, range(9, 200), 9); // the live owner registers again
    assert.deepEqual(bm.findCachedPrefix(range(9, 200)), b.blockTable.slice(0, 2));
    bm.assertConsistent([b]);
  });

  it('the same content computed twice shares one name (and enters the cache once): children of the copy are found', () => {
    const bm = manager(16);
    const t = range(12, 100);
    const a = owner(), b = owner();
    bm.allocate(a, 12);
    bm.allocate(b, 12); // both prefill before either registers
    assert.equal(bm.cacheFullBlocks(a, t, 12), 3, 'all three enter the cache');
    assert.equal(bm.cacheFullBlocks(b, t, 12), 0, 'none of the copies enters it');
    assert.equal(bm.numCachedBlocks, 3);
    const longer = [...t, 1, 2, 3, 4];
    bm.allocate(b, 16);
    assert.equal(bm.cacheFullBlocks(b, longer, 16), 1);
    assert.deepEqual(bm.findCachedPrefix([...longer, 5]), [...a.blockTable, b.blockTable[3]]);
    bm.free(b); // its first 3 blocks are unmapped duplicates: truly free
    assert.equal(bm.numCachedBlocks, 4);
    bm.assertConsistent([a, b]);
  });

  it('never shares blocks whose hash collides but whose content differs', () => {
    const bm = manager(16, 4, true, () => 42); // every block collides
    const a = prefill(bm, range(8, 100));
    const b = prefill(bm, range(8, 200));
    assert.deepEqual(bm.findCachedPrefix(range(9, 100)), [a.blockTable[0]]); // a0 is the mapped one
    assert.deepEqual(bm.findCachedPrefix(range(9, 200)), []);
    assert.deepEqual(bm.findCachedPrefix([...range(4, 200), ...range(5, 104)]), []);
    bm.assertConsistent([a, b]);
  });

  it('refuses a cached list whose blocks were evicted since findCachedPrefix', () => {
    const bm = manager(2);
    bm.free(prefill(bm, range(5, 100))); // 1 cached block, 1 free
    const cached = bm.findCachedPrefix(range(5, 100));
    assert.equal(cached.length, 1);
    bm.allocate(owner(), 8); // takes the free block and evicts the cached one
    assert.throws(() => bm.allocate(owner(), 5, cached), /no longer cached/);
  });
});

describe('BlockManager: fork and copy-on-write', () => {
  it('copies exactly the shared partial block, once per writer but the last', () => {
    const bm = manager(16);
    const parent = prefill(bm, range(10, 100));
    const [p0, p1, p2] = parent.blockTable;
    const c1 = owner(), c2 = owner();
    bm.fork(parent, c1);
    bm.fork(parent, c2);
    assert.equal(bm.numFreeBlocks, 13);
    const ops = bm.allocate(parent, 11);
    assert.equal(ops.length, 1);
    assert.deepEqual(ops[0], { src: p2, dst: parent.blockTable[2] });
    assert.deepEqual(parent.blockTable.slice(0, 2), [p0, p1]);
    assert.equal(bm.allocate(c1, 11).length, 1);
    assert.deepEqual(bm.allocate(c2, 11), []); // now its own
    assert.deepEqual(c2.blockTable, [p0, p1, p2]);
    for (const o of [parent, c1, c2]) assert.deepEqual(bm.allocate(o, 13), []);
    bm.assertConsistent([parent, c1, c2]);
    for (const o of [parent, c1, c2]) bm.free(o);
    assert.equal(bm.numFreeBlocks, 16);
    bm.assertConsistent([]);
  });

  it('copies nothing when the shared blocks are full', () => {
    const bm = manager(16);
    const parent = prefill(bm, range(8, 100));
    const child = owner();
    bm.fork(parent, child);
    assert.deepEqual(bm.allocate(parent, 9), []);
    assert.deepEqual(bm.allocate(child, 9), []);
    assert.deepEqual(parent.blockTable.slice(0, 2), child.blockTable.slice(0, 2));
    assert.notEqual(parent.blockTable[2], child.blockTable[2]);
    bm.assertConsistent([parent, child]);
  });

  it('counts the copy in canAllocate', () => {
    const bm = manager(3);
    const parent = prefill(bm, range(10, 100));
    const child = owner();
    bm.fork(parent, child);
    assert.equal(bm.canAllocate(parent, 10), true);
    assert.equal(bm.canAllocate(parent, 11), false);
    assert.throws(() => bm.fork(parent, child), /already holds/);
  });
});

interface Seq extends BlockOwner { tokens: number[]; computed: number }

/** Runs random operations, simulating the KV cache: each slot holds the id of the prefix whose last
 *  token wrote it, so any wrong sharing, lost copy or write into a shared block shows on read-back. */
function randomRun(seed: number, opts: { numBlocks: number; blockSize: number; prefix: boolean; hash?: BlockHashFn; ops: number }): void {
  const { numBlocks, blockSize: bs } = opts;
  const bm = manager(numBlocks, bs, opts.prefix, opts.hash);
  const rng = new Rng(seed);
  const int = (n: number): number => Math.floor(rng.next() * n);
  const slots: (string | undefined)[] = new Array(numBlocks * bs);
  const prefixId = (t: number[], p: number): string => t.slice(0, p + 1).join(',');
  const bases = [range(13, 100), range(6, 200), [...range(8, 100), ...range(9, 300)]];
  let live: Seq[] = [];
  let hits = 0, copies = 0, evictionsSeen = 0;

  const holders = (b: number): number => live.reduce((n, s) => n + s.blockTable.filter((x) => x === b).length, 0);
  const readBack = (s: Seq): void => {
    for (let p = 0; p < s.computed; p++) {
      assert.equal(slots[s.blockTable[Math.floor(p / bs)]! * bs + (p % bs)], prefixId(s.tokens, p), `seed ${seed}: slot of position ${p}`);
    }
  };
  /** grows s to `target` tokens if blocks allow (checked against the model), computing and registering them */
  const advance = (s: Seq, target: number): boolean => {
    const fresh = s.blockTable.length === 0;
    const cached = fresh ? bm.findCachedPrefix(s.tokens) : [];
    for (let p = 0; p < cached.length * bs; p++) assert.equal(slots[cached[Math.floor(p / bs)]! * bs + (p % bs)], prefixId(s.tokens, p), 'cache hit with wrong KV');
    hits += cached.length;
    const held = new Set(live.flatMap((x) => x.blockTable));
    const last = s.blockTable[s.blockTable.length - 1];
    const cow = s.computed % bs !== 0 && last !== undefined && holders(last) > 1;
    const need = Math.max(0, Math.ceil(target / bs) - (fresh ? cached.length : s.blockTable.length)) + (cow ? 1 : 0) + cached.filter((b) => !held.has(b)).length;
    assert.equal(bm.numFreeBlocks, numBlocks - held.size);
    const ok = bm.canAllocate(s, target, cached);
    assert.equal(ok, need <= numBlocks - held.size, `seed ${seed}: canAllocate`);
    if (!ok) return false;
    if (fresh) s.computed = cached.length * bs;
    target = Math.max(target, s.computed);
    const before = bm.numCachedBlocks;
    const ops = bm.allocate(s, target, cached);
    if (bm.numCachedBlocks < before) evictionsSeen++;
    assert.equal(ops.length, cow ? 1 : 0);
    for (const { src, dst } of ops) {
      assert.equal(src, last);
      for (let j = 0; j < bs; j++) slots[dst * bs + j] = slots[src * bs + j];
      copies++;
    }
    for (let p = s.computed; p < target; p++) {
      const b = s.blockTable[Math.floor(p / bs)]!;
      assert.equal(holders(b), 1, `seed ${seed}: write into a shared block`);
      slots[b * bs + (p % bs)] = prefixId(s.tokens, p);
    }
    s.computed = target;
    bm.cacheFullBlocks(s, s.tokens, s.computed);
    return true;
  };

  for (let step = 0; step < opts.ops; step++) {
    const r = rng.next();
    const s = live[int(live.length)];
    if (r < 0.2 || !s) { // a new request
      const base = bases[int(bases.length)]!;
      const tokens = [...base.slice(0, 1 + int(base.length)), ...Array.from({ length: int(6) }, () => int(3))];
      const seq: Seq = { blockTable: [], tokens, computed: 0 };
      live.push(seq);
      if (!advance(seq, Math.min(tokens.length, bs + int(3 * bs)))) live.pop();
    } else if (r < 0.75) { // a step: prefill chunk or decode
      if (s.computed === s.tokens.length) s.tokens.push(int(4));
      const target = s.blockTable.length === 0 ? Math.min(s.tokens.length, 1 + int(3 * bs)) : Math.min(s.tokens.length, s.computed + 1 + int(2 * bs));
      if (!advance(s, target)) { // preempt the newest; it will be recomputed
        const victim = live[live.length - 1]!;
        bm.free(victim);
        victim.computed = 0;
      }
    } else if (r < 0.85) { // n > 1: fork a fully computed sequence
      if (s.computed === s.tokens.length && s.computed > 0) {
        const child: Seq = { blockTable: [], tokens: [...s.tokens], computed: s.computed };
        bm.fork(s, child);
        live.push(child);
      }
    } else if (r < 0.995) { // finish or abort
      bm.free(s);
      live = live.filter((x) => x !== s);
    } else {
      assert.equal(bm.resetPrefixCache(), true);
      assert.equal(bm.numCachedBlocks, 0);
    }
    bm.assertConsistent(live);
    for (const x of live) readBack(x);
  }
  for (const x of live) bm.free(x);
  bm.assertConsistent([]);
  assert.equal(bm.numFreeBlocks, numBlocks);
  if (opts.prefix && !opts.hash) {
    assert.ok(hits > 50, `seed ${seed}: only ${hits} hits`);
    assert.ok(evictionsSeen > 5, `seed ${seed}: only ${evictionsSeen} evictions`);
  }
  assert.ok(copies > 0, `seed ${seed}: no copy-on-write exercised`);
}

describe('BlockManager: randomized against a model', () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: prefix caching on`, () => randomRun(seed, { numBlocks: 24, blockSize: 4, prefix: true, ops: 4000 }));
  }
  it('prefix caching off', () => randomRun(4, { numBlocks: 24, blockSize: 4, prefix: false, ops: 3000 }));
  it('every hash collides', () => randomRun(5, { numBlocks: 24, blockSize: 4, prefix: true, hash: () => 7, ops: 3000 }));
  it('a weak hash (parent and first token)', () => randomRun(6, { numBlocks: 24, blockSize: 2, prefix: true, hash: (p, t, s) => (p % 3) * 8 + ((t[s]! % 8) >>> 0), ops: 3000 }));
});

describe('hashBlock', () => {
  it('is a safe integer that depends on the parent, every token and the position range', () => {
    const t = range(16, 5);
    const h = hashBlock(0, t, 0, 16);
    assert.ok(Number.isSafeInteger(h) && h >= 0);
    assert.equal(hashBlock(0, [...t], 0, 16), h);
    assert.notEqual(hashBlock(1, t, 0, 16), h);
    assert.notEqual(hashBlock(2 ** 32, t, 0, 16), h);
    for (let i = 0; i < 16; i++) assert.notEqual(hashBlock(0, t.map((x, j) => (j === i ? x + 1 : x)), 0, 16), h);
    const seen = new Set<number>();
    for (let p = 0; p < 20000; p++) seen.add(hashBlock(p, t, 0, 16));
    assert.equal(seen.size, 20000);
  });
});

describe('BlockManager: placement (a sequence\'s blocks next to each other)', () => {
  it('grows a sequence into the block after its last, and starts sequences a runway apart', () => {
    const bm = manager(256, 4, false);
    const [a, b, c] = [owner(), owner(), owner()];
    bm.allocate(a, 10); // 3 blocks
    bm.allocate(b, 5);
    bm.allocate(c, 1);
    assert.deepEqual(a.blockTable, [0, 1, 2]);
    assert.deepEqual(b.blockTable, [RUNWAY_BLOCKS, RUNWAY_BLOCKS + 1]);
    assert.deepEqual(c.blockTable, [2 * RUNWAY_BLOCKS]);
    for (let t = 11; t <= 40; t++) bm.allocate(a, t); // decode, one token a step
    assert.deepEqual(a.blockTable, range(10));
    bm.allocate(b, 9);
    assert.deepEqual(b.blockTable, range(3, RUNWAY_BLOCKS));
    bm.assertConsistent([a, b, c]);
  });

  it('FreeBlocks always takes the free block of lowest rank, whatever was taken by id or released', () => {
    const n = 100, runway = 8, rows = Math.ceil(n / runway);
    const rank = (b: number): number => (b % runway) * rows + Math.floor(b / runway);
    const pool = new FreeBlocks(n, runway);
    const free = new Set(range(n)); // the reference: a plain set, minimum found by scanning
    const rng = new Rng(7);
    for (let step = 0; step < 20000; step++) {
      const op = rng.nextUint32() % 3;
      if (op === 0) {
        const expected = free.size === 0 ? -1 : [...free].reduce((m, b) => (rank(b) < rank(m) ? b : m));
        assert.equal(pool.take(), expected);
        free.delete(expected);
      } else if (op === 1) {
        const b = rng.nextUint32() % (n + 2) - 1; // -1 and n included: never free
        assert.equal(pool.takeIfFree(b), free.has(b) ? b : -1);
        free.delete(b);
      } else {
        const taken = range(n).filter((b) => !free.has(b));
        if (taken.length === 0) continue;
        const b = taken[rng.nextUint32() % taken.length]!;
        pool.release(b);
        free.add(b);
      }
      assert.equal(pool.size, free.size);
    }
    assert.deepEqual([...pool].sort((x, y) => x - y), [...free].sort((x, y) => x - y));
    assert.throws(() => pool.release([...free][0]!), /already free/);
  });
});

describe('BlockManager: hooks for a prefix cache kept elsewhere (disk)', () => {
  it('onRegister names each registered block once, with its parent and chain root; cachedPrefix peeks without stats', () => {
    const seen: [number, number, number, number][] = [];
    const bm = new BlockManager({ numBlocks: 8, blockSize: 4, enablePrefixCaching: true, onRegister: (b, parent, root, _t, start) => seen.push([b, parent, root, start]) });
    const tokens = range(10);
    const a: BlockOwner = { blockTable: [], prefixRoot: 7 };
    bm.allocate(a, 10);
    bm.cacheFullBlocks(a, tokens, 6);
    bm.cacheFullBlocks(a, tokens, 10);
    assert.deepEqual(seen, [[a.blockTable[0], -1, 7, 0], [a.blockTable[1], a.blockTable[0], 7, 4]]);
    bm.free(a);
    assert.deepEqual(bm.cachedPrefix(tokens, 7), [seen[0]![0], seen[1]![0]]);
    assert.deepEqual(bm.cachedPrefix(tokens, 0), [], 'another root, another chain');
    assert.deepEqual(bm.stats, { queries: 0, hits: 0 });
    assert.equal(bm.findCachedPrefix(tokens, 7).length, 2);
    assert.deepEqual(bm.stats, { queries: 10, hits: 8 });
  });
});
