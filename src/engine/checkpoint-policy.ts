// Where a sequence's prefix-cache checkpoints go (state-checkpoints.ts: a hybrid model's
// recurrent state; window-checkpoints.ts: a sliding-window pool's last window), and the chunk
// boundaries they need. A checkpoint is what the cached KV chain cannot rebuild at a block
// boundary; a hit is usable only at a block that carries every kind the model needs.
// Boundaries are multiples of the block size, and a checkpoint is taken only when a step ends
// exactly on one: the prompt's last full block a lookup can reach (a resent or extended prompt
// hits there; a prefill chunk stops at it), and while generating, each boundary crossed,
// keeping only the newest per sequence (a finished reply's full blocks carry one, so the next
// turn of a chat, which resends the reply, hits there).
import type { BlockManager, BlockOwner } from './block-manager.js';
import type { StateCheckpoints } from './state-checkpoints.js';
import type { WindowCheckpoints } from './window-checkpoints.js';

/** What a checkpoint taker is: a running sequence. */
export interface CheckpointOwner extends BlockOwner {
  readonly tokens: readonly number[];
  readonly promptLength: number;
  readonly numComputed: number;
  /** its recurrent-state slot (hybrid models) */
  readonly stateSlot: number;
  /** its sliding-window pool table (models with one) */
  readonly swa?: BlockOwner;
  /** its newest generation-time checkpoint (dropped when it takes the next): a ticket per store */
  rollingCheckpoint?: { readonly block: number; readonly tickets: readonly number[] };
}

/** One kind of checkpoint, hung on global blocks. */
export interface CheckpointStore {
  has(block: number): boolean;
  /** takes one for seq on `block` (which has none); its ticket (> 0). A full store gives one up, in `evictionOrder` first */
  take(block: number, seq: CheckpointOwner, evictionOrder: Iterable<number>): number;
  /** drops block's checkpoint only if it is still the one `ticket` names */
  dropTicket(block: number, ticket: number): void;
}

export class CheckpointPolicy {
  private readonly stores: CheckpointStore[];

  constructor(
    readonly blocks: BlockManager,
    /** a hybrid model's recurrent-state checkpoints: restored into the state slot after allocation */
    readonly state?: StateCheckpoints,
    /** a sliding-window pool's window checkpoints: restored into the empty window table before allocation */
    readonly windows?: WindowCheckpoints,
  ) {
    this.stores = [state, windows].filter((s): s is StateCheckpoints | WindowCheckpoints => s !== undefined);
  }

  /** the deepest boundary of seq's prompt a lookup of it can reach (one token is always left to compute) */
  promptBoundary(seq: CheckpointOwner): number {
    const bs = this.blocks.blockSize;
    return Math.floor((seq.promptLength - 1) / bs) * bs;
  }

  /** how many of numTokens tokens (from `from`) the next chunk may take: it stops at the prompt's
   *  checkpoint boundary, and (recomputing after preemption) at the last boundary before the end */
  clampChunk(seq: CheckpointOwner, from: number, numTokens: number): number {
    const bs = this.blocks.blockSize;
    for (const stop of [this.promptBoundary(seq), Math.floor((seq.tokens.length - 1) / bs) * bs]) {
      if (stop > from && from + numTokens > stop) return stop - from;
    }
    return numTokens;
  }

  /** A hit: only a prefix ending at a block with every kind of checkpoint counts. */
  readonly usable = (block: number): boolean => this.stores.every((s) => s.has(block));

  /** seq takes `cached` from the prefix cache, its tables still empty: its window table starts from the last one's window. */
  restoreBeforeAllocate(seq: CheckpointOwner, cached: readonly number[]): void {
    if (cached.length > 0) this.windows?.restore(cached[cached.length - 1]!, seq);
  }

  /** ... and once its state slot is taken, the slot starts from the last one's state. */
  restore(seq: CheckpointOwner, cached: readonly number[]): void {
    if (cached.length > 0) this.state?.restore(cached[cached.length - 1]!, seq.stateSlot);
  }

  /** After a step (its full blocks registered): checkpoints if seq stopped on one of its boundaries. */
  afterStep(seq: CheckpointOwner): void {
    const bs = this.blocks.blockSize;
    const at = seq.numComputed;
    if (at === 0 || at % bs !== 0) return;
    const rolling = at >= seq.promptLength;
    if (!rolling && at !== this.promptBoundary(seq)) return;
    // lookups reach the mapped block of this content: ours, or the one another table (or an
    // earlier run of this prompt) cached first, whose checkpoint may have been evicted since
    const block = this.blocks.mappedTwin(seq, seq.tokens, at / bs - 1);
    if (block === undefined) return;
    const tickets = this.stores.map((s) => (s.has(block) ? 0 : s.take(block, seq, this.blocks.evictionOrder())));
    if (!rolling) return;
    const previous = seq.rollingCheckpoint;
    if (previous) this.stores.forEach((s, i) => s.dropTicket(previous.block, previous.tickets[i]!));
    seq.rollingCheckpoint = { block, tickets };
  }
}
