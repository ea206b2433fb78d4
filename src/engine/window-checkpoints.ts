// Prefix caching for models whose sliding-window layers keep a pool of their own (Gemma 2/3,
// Gemma 4; swa-blocks.ts): that pool holds only each sequence's window, so a cached prefix's
// global blocks are not enough for a hit. A window checkpoint at boundary b pins the pool's
// blocks covering [b − window + 1, b) (a reference each, as a fork takes) and hangs on the
// global block ending at b; a hit at b forks the pinned blocks into the new sequence's window
// table, whose earlier entries stay released (NONE), as if it had computed there itself.
//
// On the scheduler's terms, as state checkpoints (state-checkpoints.ts): at most
// `numCheckpoints` pinned windows, their blocks counted in the sliding pool (engine/options.ts
// sizes it for them); one leaves with its global block (the block manager's `uncached` hook);
// a full store gives up the one whose block the block LRU evicts first (then the oldest); and
// when the sliding pool itself runs short, pinned windows are given up in the same order
// before any sequence is preempted (Scheduler.canAllocate).
import assert from 'node:assert/strict';
import type { BlockManager, BlockOwner } from './block-manager.js';
import type { CheckpointOwner, CheckpointStore } from './checkpoint-policy.js';
import type { SwaBlocks } from './swa-blocks.js';

interface Pin {
  readonly owner: BlockOwner;
  readonly ticket: number;
}

export class WindowCheckpoints implements CheckpointStore {
  private readonly pins = new Map<number, Pin>(); // global block → its pinned window
  private nextTicket = 1;
  readonly stats = { taken: 0, restored: 0, evicted: 0, droppedWithBlock: 0 };

  constructor(
    readonly numCheckpoints: number,
    private readonly swa: SwaBlocks,
  ) {
    assert(Number.isInteger(numCheckpoints) && numCheckpoints > 0, `numCheckpoints must be a positive integer, got ${numCheckpoints}`);
  }

  get numUsed(): number {
    return this.pins.size;
  }

  has(block: number): boolean {
    return this.pins.has(block);
  }

  /** Pins seq's window blocks before its position seq.numComputed (a block boundary). */
  take(block: number, seq: CheckpointOwner, evictionOrder: Iterable<number>): number {
    assert(!this.has(block) && seq.swa, `block ${block}: no window to pin, or one pinned already`);
    if (this.pins.size >= this.numCheckpoints) this.evictOne(evictionOrder);
    const owner: BlockOwner = { blockTable: [] };
    const m = this.swa.manager;
    m.fork(seq.swa, owner);
    assert.equal(owner.blockTable.length * m.blockSize, seq.numComputed, 'a window checkpoint is taken at a block boundary');
    // only the window before it: blocks wholly before position numComputed − window + 1 go
    m.releaseLeading(owner, Math.floor(Math.max(0, seq.numComputed - this.swa.window + 1) / m.blockSize));
    const ticket = this.nextTicket++;
    this.pins.set(block, { owner, ticket });
    this.stats.taken++;
    return ticket;
  }

  /** seq's (empty) window table starts as block's pinned window. */
  restore(block: number, seq: CheckpointOwner): void {
    const pin = this.pins.get(block);
    assert(pin && seq.swa && seq.swa.blockTable.length === 0, `block ${block}: no pinned window, or the table is not empty`);
    this.swa.manager.fork(pin.owner, seq.swa);
    this.stats.restored++;
  }

  /** how many pool blocks a sequence restoring a window of `cachedBlocks` blocks needs to cover numTokens */
  blocksAfterRestore(cachedBlocks: number, numTokens: number): number {
    return Math.max(0, Math.ceil(numTokens / this.swa.blockSize) - cachedBlocks);
  }

  blockUncached(block: number): void {
    if (!this.has(block)) return;
    this.drop(block);
    this.stats.droppedWithBlock++;
  }

  dropTicket(block: number, ticket: number): void {
    if (this.pins.get(block)?.ticket === ticket) this.drop(block);
  }

  /** Gives up one pinned window (never `keep`'s): the one whose block the block LRU evicts first,
   *  else the oldest. False when there is none to give up. */
  evictOne(evictionOrder: Iterable<number>, keep = -1): boolean {
    let victim = -1;
    for (const b of evictionOrder) {
      if (b !== keep && this.pins.has(b)) {
        victim = b;
        break;
      }
    }
    if (victim < 0) {
      let oldest = Infinity;
      for (const [b, pin] of this.pins) if (b !== keep && pin.ticket < oldest) [victim, oldest] = [b, pin.ticket];
    }
    if (victim < 0) return false;
    this.drop(victim);
    this.stats.evicted++;
    return true;
  }

  private drop(block: number): void {
    const pin = this.pins.get(block)!;
    this.swa.manager.free(pin.owner);
    this.pins.delete(block);
  }

  /** Checks that every pinned window hangs on a block in the prefix cache and holds live blocks. */
  assertConsistent(blocks: BlockManager): void {
    for (const [b, pin] of this.pins) {
      assert.ok(blocks.isCached(b), `a window is pinned on block ${b}, which is not in the prefix cache`);
      assert.ok(pin.owner.blockTable.some((x) => x >= 0), `the window on block ${b} holds no block`);
    }
  }

  /** the pinned windows' tables (for the pool's refcount check) */
  owners(): BlockOwner[] {
    return [...this.pins.values()].map((p) => p.owner);
  }
}
