// State checkpoints on the block manager's terms: a checkpoint hangs on a registered block,
// leaves with it (eviction, reset), is given up in the block LRU's order when the pool is full,
// and a lookup stops at the deepest block carrying one. The state copies are recorded, not run.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BlockManager } from '../../src/engine/block-manager.js';
import type { BlockOwner } from '../../src/engine/block-manager.js';
import { StateCheckpoints } from '../../src/engine/state-checkpoints.js';
import { CheckpointPolicy } from '../../src/engine/checkpoint-policy.js';
import type { CheckpointOwner } from '../../src/engine/checkpoint-policy.js';

const BS = 4;
const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);
/** a sequence not yet started: only its tokens and prompt length */
const fresh = (promptLength: number, tokens: number[]): CheckpointOwner => ({ blockTable: [], tokens, promptLength, numComputed: 0, stateSlot: -1 });

function setup(numBlocks: number, numCheckpoints: number) {
  const copies: [number, number][] = [];
  let checkpoints!: StateCheckpoints;
  const blocks = new BlockManager({ numBlocks, blockSize: BS, enablePrefixCaching: true, uncached: (b) => checkpoints.blockUncached(b) });
  checkpoints = new StateCheckpoints(numCheckpoints, numBlocks, 10, (src, dst) => copies.push([src, dst]));
  return { blocks, checkpoints, copies, policy: new CheckpointPolicy(blocks, checkpoints) };
}

/** a sequence that has computed `computed` of `tokens` (prompt `promptLength`), its blocks registered */
function computed(blocks: BlockManager, tokens: number[], promptLength: number, done: number, slot = 0): CheckpointOwner & BlockOwner {
  const seq = { blockTable: [] as number[], tokens, promptLength, numComputed: done, stateSlot: slot };
  blocks.allocate(seq, done, blocks.findCachedPrefix(tokens.slice(0, done + 1)));
  blocks.cacheFullBlocks(seq, tokens, done);
  return seq;
}

describe('StateCheckpoints', () => {
  it('a checkpoint is taken at the prompt\'s last reachable boundary and restores into a slot', () => {
    const { blocks, checkpoints, copies, policy } = setup(16, 4);
    const tokens = range(11); // boundary floor(10 / 4) · 4 = 8
    assert.equal(policy.promptBoundary({ promptLength: 11 } as CheckpointOwner), 8);
    assert.equal(policy.clampChunk(fresh(11, tokens), 0, 11), 8, 'the chunk stops at 8');
    assert.equal(policy.clampChunk(fresh(11, tokens), 8, 3), 3);
    const seq = computed(blocks, tokens, 11, 8, 2);
    policy.afterStep(seq);
    assert.ok(checkpoints.has(seq.blockTable[1]!));
    assert.deepEqual(copies, [[2, 10]], 'slot 2 copied into checkpoint 0 (state slot 10)');
    const table = [...seq.blockTable];
    blocks.free(seq);
    // a later prompt sharing 3 blocks' worth finds only 2 (the deepest with a checkpoint)
    const hit = blocks.findCachedPrefix([...range(8), 8, 9, 10, 11, 99], 0, policy.usable);
    assert.deepEqual(hit, table.slice(0, 2));
    policy.restore({ stateSlot: 3 } as CheckpointOwner, hit);
    assert.deepEqual(copies[1], [10, 3]);
    checkpoints.assertConsistent(blocks);
  });

  it('an evicted block takes its checkpoint with it; a reset takes them all', () => {
    const { blocks, checkpoints, policy } = setup(3, 4);
    const a = computed(blocks, range(9), 9, 8);
    policy.afterStep(a);
    assert.equal(checkpoints.numUsed, 1);
    blocks.free(a);
    // another owner needs every block: the cached chain is evicted, tail first
    blocks.allocate({ blockTable: [] }, 12);
    assert.equal(checkpoints.numUsed, 0);
    assert.equal(checkpoints.stats.droppedWithBlock, 1);
    assert.deepEqual(blocks.findCachedPrefix(range(9), 0, policy.usable), []);
    const { blocks: b2, checkpoints: c2, policy: p2 } = setup(8, 4);
    const s = computed(b2, range(9), 9, 8);
    p2.afterStep(s);
    b2.resetPrefixCache();
    assert.equal(c2.numUsed, 0, 'a reset drops checkpoints on held blocks too');
    c2.assertConsistent(b2);
  });

  it('a full pool gives up the checkpoint whose block the LRU evicts first, then the oldest', () => {
    const { blocks, checkpoints, policy } = setup(32, 2);
    const a = computed(blocks, range(5, 100), 5, 4);
    policy.afterStep(a);
    const b = computed(blocks, range(5, 200), 5, 4);
    policy.afterStep(b);
    const [a0, b0] = [a.blockTable[0]!, b.blockTable[0]!];
    blocks.free(b); // b's block is evictable first, then a's
    blocks.free(a);
    const c = computed(blocks, range(5, 300), 5, 4);
    policy.afterStep(c);
    assert.ok(!checkpoints.has(b0) && checkpoints.has(a0), 'b\'s went: its block was first in the LRU');
    // both checkpointed blocks held: the oldest (a's) goes
    const a2 = computed(blocks, [...range(4, 100), 7], 5, 4);
    assert.equal(a2.blockTable[0], a0, 'a\'s block is held again (a hit)');
    const d = computed(blocks, range(5, 400), 5, 4);
    policy.afterStep(d);
    assert.ok(!checkpoints.has(a0) && checkpoints.has(c.blockTable[0]!) && checkpoints.has(d.blockTable[0]!));
    assert.equal(checkpoints.stats.evicted, 2);
    checkpoints.assertConsistent(blocks);
  });

  it('during generation only the newest boundary keeps its checkpoint (per sequence)', () => {
    const { blocks, checkpoints, policy } = setup(32, 8);
    const tokens = range(30);
    const seq = computed(blocks, tokens, 6, 4); // the prompt's boundary: 4
    policy.afterStep(seq);
    for (const at of [8, 12, 16]) {
      blocks.allocate(seq, at);
      Object.assign(seq, { numComputed: at });
      blocks.cacheFullBlocks(seq, tokens, at);
      policy.afterStep(seq);
    }
    assert.equal(checkpoints.numUsed, 2, 'the prompt\'s (4) and the newest (16)');
    assert.ok(checkpoints.has(seq.blockTable[0]!) && checkpoints.has(seq.blockTable[3]!));
    assert.equal(policy.clampChunk(fresh(6, tokens), 4, 30), 28 - 4, 'recomputing: stops at the last boundary before the end');
  });
});
