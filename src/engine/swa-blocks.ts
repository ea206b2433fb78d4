// The block tables of a model's sliding-window layers (Gemma 2/3), kept in a pool of their
// own (KvCache.swa). A sequence's sliding-window table covers the same positions as its
// global table, but blocks no window can reach any more are released as it advances: the
// next query is at position numComputed, whose window starts at numComputed − window + 1,
// so every block wholly before that start goes back to the pool. A sequence therefore holds
// at most ⌈(window − 1) / blockSize⌉ + 1 blocks here between steps (plus a prefill chunk's
// blocks during its step), whatever its length.
//
// A cached prefix needs the KV of its last window in these layers too: window checkpoints
// (window-checkpoints.ts) pin it here for the prefix cache.
import { BlockManager } from './block-manager.js';
import type { BlockOwner, CopyOp } from './block-manager.js';

/** What the sliding-window pool needs from a sequence: its own table, and how far it has got. */
export interface SwaOwner {
  readonly swa: BlockOwner;
  readonly numComputed: number;
}

export class SwaBlocks {
  readonly manager: BlockManager;

  constructor(
    numBlocks: number,
    readonly blockSize: number,
    readonly window: number,
  ) {
    this.manager = new BlockManager({ numBlocks, blockSize, enablePrefixCaching: false });
  }

  /** blocks one sequence holds here between steps at most */
  static blocksPerSequence(window: number, blockSize: number): number {
    return Math.ceil((window - 1) / blockSize) + 1;
  }

  /** Releases the blocks before seq's next window (always safe: no later query reaches them). */
  trim(seq: SwaOwner): void {
    const start = seq.numComputed - this.window + 1;
    if (start > 0) this.manager.releaseLeading(seq.swa, Math.floor(start / this.blockSize));
  }

  canAllocate(seq: SwaOwner, numTokens: number): boolean {
    this.trim(seq);
    return this.manager.canAllocate(seq.swa, numTokens);
  }

  allocate(seq: SwaOwner, numTokens: number): CopyOp[] {
    this.trim(seq);
    return this.manager.allocate(seq.swa, numTokens);
  }

  free(seq: SwaOwner): void {
    this.manager.free(seq.swa);
  }

  fork(parent: SwaOwner, child: SwaOwner): void {
    this.manager.fork(parent.swa, child.swa);
  }

  usage(): number {
    return this.manager.usage();
  }
}
