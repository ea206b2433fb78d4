// Prefix caching for a hybrid model (Qwen3.5's Gated DeltaNet layers): cached KV blocks say
// nothing of the recurrent and convolution state after them, so the state is kept too, as
// checkpoints at block boundaries. A checkpoint is a copy of one sequence's whole recurrent
// state (every linear layer's conv and delta-rule state, recurrentStateBytes) taken when the
// sequence has computed exactly the tokens up to the end of a registered block, and hung on
// that block: it names the same token prefix (the block's content id), so any lookup chain
// reaching the block may start from it. A hit is the deepest cached block carrying one.
//
// On the scheduler's terms:
// - Memory: a fixed pool of `numCheckpoints` state slots after the running sequences' slots in
//   KvCache.recurrent, carved from --kv-cache-memory before the KV blocks are (engine/options.ts).
//   A pool, not "N blocks' worth" in the block pool: a checkpoint has the state's own layout
//   (f32 per linear layer, not the KV layers' dtype) and is large (Qwen3.5-2B: 20 MiB, about
//   100 KV blocks), so sharing the block arrays would tie two formats together for no gain.
// - Eviction: a checkpoint lives as long as its block stays in the prefix cache (the block
//   manager's `uncached` hook drops it when the block is evicted or the cache is reset), and
//   when the pool is full the checkpoint given up is the one whose block the block LRU would
//   evict first (then, if every checkpointed block is held, the oldest checkpoint).
// - A checkpoint is only used through a lookup that verified every block before it (parent
//   content ids), so one whose earlier blocks were evicted is unreachable, never wrongly restored.
//
// Which boundaries: checkpoint-policy.ts (shared with the sliding-window layers' window checkpoints).
import assert from 'node:assert/strict';
import type { BlockManager } from './block-manager.js';
import type { CheckpointOwner, CheckpointStore } from './checkpoint-policy.js';

export interface CheckpointStats {
  taken: number;
  restored: number;
  /** given up to make room for a newer one */
  evicted: number;
  /** dropped because their block left the prefix cache */
  droppedWithBlock: number;
}

/** The pool of state checkpoints and which block each hangs on. */
export class StateCheckpoints implements CheckpointStore {
  readonly stats: CheckpointStats = { taken: 0, restored: 0, evicted: 0, droppedWithBlock: 0 };
  private readonly slotOf: Int32Array;    // [numBlocks] checkpoint index of a block, -1 if none
  private readonly blockOf: Int32Array;   // [numCheckpoints] block of a used checkpoint, -1 if free
  private readonly ticketOf: Float64Array; // [numCheckpoints] when it was taken (increasing)
  private readonly freeList: number[];
  private nextTicket = 1;

  constructor(
    readonly numCheckpoints: number,
    numBlocks: number,
    /** the recurrent state's slot of checkpoint 0 (the running sequences' slots come first) */
    private readonly firstSlot: number,
    /** copies state slot src into slot dst (RecurrentState.copy) */
    private readonly copy: (src: number, dst: number) => void,
  ) {
    assert(Number.isInteger(numCheckpoints) && numCheckpoints > 0, `numCheckpoints must be a positive integer, got ${numCheckpoints}`);
    this.slotOf = new Int32Array(numBlocks).fill(-1);
    this.blockOf = new Int32Array(numCheckpoints).fill(-1);
    this.ticketOf = new Float64Array(numCheckpoints);
    this.freeList = Array.from({ length: numCheckpoints }, (_, i) => numCheckpoints - 1 - i);
  }

  get numUsed(): number {
    return this.numCheckpoints - this.freeList.length;
  }

  has(block: number): boolean {
    return this.slotOf[block]! >= 0;
  }

  /** Copies seq's state slot into a checkpoint on `block` (which has none); returns its ticket.
   *  When the pool is full the block LRU's first checkpointed block (`evictionOrder`) gives up its own. */
  take(block: number, seq: CheckpointOwner, evictionOrder: Iterable<number>): number {
    assert(!this.has(block), `block ${block} already carries a checkpoint`);
    if (this.freeList.length === 0) this.evictOne(evictionOrder);
    const i = this.freeList.pop()!;
    this.copy(seq.stateSlot, this.firstSlot + i);
    this.slotOf[block] = i;
    this.blockOf[i] = block;
    this.ticketOf[i] = this.nextTicket++;
    this.stats.taken++;
    return this.ticketOf[i]!;
  }

  /** Copies block's checkpoint into state slot `to`. */
  restore(block: number, to: number): void {
    const i = this.slotOf[block]!;
    assert(i >= 0, `block ${block} carries no checkpoint`);
    this.copy(this.firstSlot + i, to);
    this.stats.restored++;
  }

  /** Block left the prefix cache (the block manager's `uncached` hook): its checkpoint goes too. */
  blockUncached(block: number): void {
    if (!this.has(block)) return;
    this.drop(block);
    this.stats.droppedWithBlock++;
  }

  /** Drops block's checkpoint, if it has one. */
  drop(block: number): void {
    const i = this.slotOf[block]!;
    if (i < 0) return;
    this.slotOf[block] = -1;
    this.blockOf[i] = -1;
    this.freeList.push(i);
  }

  /** Drops block's checkpoint only if it is still the one `ticket` names. */
  dropTicket(block: number, ticket: number): void {
    const i = this.slotOf[block]!;
    if (i >= 0 && this.ticketOf[i] === ticket) this.drop(block);
  }

  private evictOne(evictionOrder: Iterable<number>): void {
    for (const b of evictionOrder) {
      if (this.has(b)) {
        this.drop(b);
        this.stats.evicted++;
        return;
      }
    }
    let oldest = 0; // every checkpointed block is held by a running sequence: the oldest goes
    for (let i = 1; i < this.numCheckpoints; i++) if (this.ticketOf[i]! < this.ticketOf[oldest]!) oldest = i;
    this.drop(this.blockOf[oldest]!);
    this.stats.evicted++;
  }

  /** Checks that blocks and checkpoints point at each other and free ones are unused. */
  assertConsistent(blocks?: BlockManager): void {
    let used = 0;
    for (let i = 0; i < this.numCheckpoints; i++) {
      const b = this.blockOf[i]!;
      if (b < 0) continue;
      used++;
      assert.equal(this.slotOf[b], i, `checkpoint ${i} and block ${b} disagree`);
      if (blocks) assert.ok(blocks.isCached(b), `checkpoint ${i} hangs on block ${b}, which is not in the prefix cache`);
    }
    assert.equal(used, this.numUsed, 'the free list and the used checkpoints disagree');
  }
}
