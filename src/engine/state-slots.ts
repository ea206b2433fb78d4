// Recurrent-state slots of a hybrid model (Qwen3.5's Gated DeltaNet layers, KvCache.recurrent):
// a running sequence owns one slot from its admission until it finishes, is aborted or is
// preempted: the same events that free its blocks. There are maxNumSeqs slots, so a sequence
// the scheduler admits always finds one. A slot's content is valid for the tokens the
// sequence has computed; the forward pass zeroes it when a chunk starts at position 0 (a new
// sequence, or one recomputed after preemption).
//
// A cached prefix's KV blocks say nothing of the recurrent state after that prefix: a prefix
// hit starts the slot from a state checkpoint instead (state-checkpoints.ts).
import assert from 'node:assert/strict';

/** What a slot owner carries: its slot, -1 while it holds none. */
export interface StateOwner {
  stateSlot: number;
}

export class StateSlots {
  private readonly freeSlots: number[];

  constructor(
    readonly numSlots: number,
    /** copies slot src's state into slot dst (a forked completion continues its parent's state) */
    private readonly copy: (src: number, dst: number) => void,
  ) {
    // popped from the end: slot 0 first
    this.freeSlots = Array.from({ length: numSlots }, (_, i) => numSlots - 1 - i);
  }

  get numFree(): number {
    return this.freeSlots.length;
  }

  /** Gives seq a slot unless it has one. */
  acquire(seq: StateOwner): void {
    if (seq.stateSlot >= 0) return;
    const slot = this.freeSlots.pop();
    assert(slot !== undefined, 'no free recurrent-state slot: more sequences running than --max-num-seqs');
    seq.stateSlot = slot;
  }

  release(seq: StateOwner): void {
    if (seq.stateSlot < 0) return;
    this.freeSlots.push(seq.stateSlot);
    seq.stateSlot = -1;
  }

  /** child continues from parent's state, in a slot of its own */
  fork(parent: StateOwner, child: StateOwner): void {
    assert(parent.stateSlot >= 0, 'forking a sequence that holds no state slot');
    this.acquire(child);
    this.copy(parent.stateSlot, child.stateSlot);
  }
}
