// Decides, each step, which sequences compute how many tokens: every decoding sequence its
// one token first, then prefill chunks (running sequences' next chunk, then waiting ones)
// within the prefill budget of step-budget.ts (chunked prefill sized so the decodes do not
// stall). For hybrid and sliding-window-pool models, prefill chunks also stop where a
// checkpoint is to be taken (checkpoint-policy.ts), and a prefix hit restores the recurrent
// state or the window from one. When blocks run out the newest running sequence is
// preempted: its blocks are freed and it is recomputed later from its tokens, nothing lost.
// An image's span is never split across chunks (image-spans.ts): a chunk stops before it or
// takes it whole, over the budget only as the step's first prefill chunk.
import assert from 'node:assert/strict';
import { BlockManager } from './block-manager.js';
import type { CopyOp } from './block-manager.js';
import type { StateSlots } from './state-slots.js';
import type { CheckpointPolicy } from './checkpoint-policy.js';
import type { SwaBlocks } from './swa-blocks.js';
import type { Sequence } from './sequence.js';
import type { FinishReason } from './protocol.js';
import type { Speculator } from './spec/speculator.js';
import type { Draft } from './spec/draft-model-drafter.js';
import { StepCostModel, prefillBudget } from './step-budget.js';
import { fitToSpans } from './image-spans.js';

export interface SchedulerConfig {
  /** token budget of one step (prefill chunks + decode tokens) */
  readonly maxNumBatchedTokens: number;
  /** most sequences running at once */
  readonly maxNumSeqs: number;
  readonly maxModelLen: number;
  readonly enablePrefixCaching: boolean;
  /** while sequences decode, a step with prefill may take this many times a decode-only step (0 or absent: no limit) */
  readonly stepTimeFactor?: number;
  /** every sequence is computed whole in the step that admits it, never in chunks (pooling
   *  models: bidirectional attention needs the whole input, and so does mean pooling) */
  readonly wholeSequences?: boolean;
}

export interface ScheduledChunk {
  readonly seq: Sequence;
  /** tokens computed this step: seq.tokens[seq.numComputed .. seq.numComputed + numTokens) */
  readonly numTokens: number;
  /** speculative tokens computed after them (counted in the budget, not in numTokens); verified by the engine */
  readonly draft?: readonly number[];
  /** a sampled draft model's q: [draft.length, vocab], the probabilities the draft was drawn from */
  readonly draftProbs?: Float32Array;
}

export interface SchedulerOutput {
  readonly chunks: ScheduledChunk[];
  /** copy-on-write block copies to do before the forward pass */
  readonly copyOps: CopyOp[];
  /** the same in the sliding-window pool */
  readonly swaCopyOps: CopyOp[];
}

const NO_DRAFT: Draft = Object.freeze({ tokens: Object.freeze([]) });

export class Scheduler {
  /** FIFO; preempted sequences return to the front. Finished (aborted) entries are skipped when reached. */
  private waiting: Sequence[] = [];
  /** admission order: the newest is last and the first to be preempted */
  private running: Sequence[] = [];
  private numWaitingLive = 0;
  /** running sequences not finished (the list drops finished ones lazily, at the next schedule) */
  private numRunningLive = 0;
  numPreemptions = 0;
  /** sequences that finished since the last drain: the engine reports them, no scan needed */
  private finishedEvents: Sequence[] = [];
  /** forward time against tokens, fitted from the steps run (the engine reports them) */
  readonly cost = new StepCostModel();
  /** the prefill budget of the last schedule() (for tests and stats) */
  lastPrefillBudget = 0;

  constructor(
    readonly config: SchedulerConfig,
    readonly blocks: BlockManager,
    /** the sliding-window layers' pool, when the model has one: a sequence runs only when both pools have room */
    readonly swa?: SwaBlocks,
    /** a hybrid model's recurrent-state slots: held while running, freed with the blocks */
    readonly states?: StateSlots,
    /** drafts speculative tokens for decoding sequences, when speculative decoding is on */
    readonly speculator?: Speculator,
    /** where checkpoints go (recurrent state, sliding windows), when such a model caches prefixes */
    readonly checkpoints?: CheckpointPolicy,
    /** brings a waiting sequence's prefix blocks in from elsewhere (disk) before its lookup */
    readonly prefixLoader?: (tokens: readonly number[], root: number) => void,
  ) {
    // rejected drafts are rolled back by position: a sliding-window pool or a recurrent state cannot be
    assert(!((swa || states) && speculator), 'speculative decoding runs without a sliding-window pool or recurrent state');
  }

  private canAllocate(seq: Sequence, numTokens: number, cached: readonly number[] = []): boolean {
    return this.blocks.canAllocate(seq, numTokens, cached) && this.swaCanAllocate(seq, numTokens, cached);
  }

  /** the sliding-window pool's side: with window checkpoints, a hit restores a window (fewer new blocks), and
   *  pinned windows are given up (block LRU order, never the one being restored) before the pool says no */
  private swaCanAllocate(seq: Sequence, numTokens: number, cached: readonly number[]): boolean {
    const swa = this.swa;
    if (!swa) return true;
    const windows = this.checkpoints?.windows;
    const fits = () => cached.length > 0 && windows
      ? windows.blocksAfterRestore(cached.length, numTokens) <= swa.manager.numFreeBlocks
      : swa.canAllocate(seq, numTokens);
    const keep = cached.length > 0 ? cached[cached.length - 1]! : -1;
    while (!fits()) {
      if (!windows?.evictOne(this.blocks.evictionOrder(), keep)) return false;
    }
    return true;
  }

  private allocate(seq: Sequence, numTokens: number, copyOps: CopyOp[], swaCopyOps: CopyOp[], cached: readonly number[] = []): void {
    copyOps.push(...this.blocks.allocate(seq, numTokens, cached));
    if (this.swa) swaCopyOps.push(...this.swa.allocate(seq, numTokens));
    this.states?.acquire(seq);
  }

  private freeBlocks(seq: Sequence): void {
    this.blocks.free(seq);
    this.swa?.free(seq);
    this.states?.release(seq);
    this.speculator?.release(seq);
  }

  get numWaiting(): number {
    return this.numWaitingLive;
  }

  get numRunning(): number {
    return this.numRunningLive;
  }

  get hasWork(): boolean {
    return this.numWaitingLive > 0 || this.numRunningLive > 0;
  }

  add(seq: Sequence): void {
    seq.status = 'waiting';
    this.waiting.push(seq);
    this.numWaitingLive++;
  }

  /** The other completions of parent's request join it, in the slots parent held for them. */
  addForks(parent: Sequence, children: readonly Sequence[]): void {
    assert(parent.slots === children.length + 1, `${parent.key} holds ${parent.slots} slots for ${children.length + 1} completions`);
    parent.slots = 1;
    for (const seq of children) {
      seq.status = 'running';
      this.running.push(seq);
    }
  }

  /** Ends a sequence now: its blocks are free before the next step. */
  finish(seq: Sequence, reason: FinishReason, stopTokenId?: number): void {
    if (seq.status === 'finished') return;
    if (seq.status === 'waiting') this.numWaitingLive--;
    if (seq.status === 'running') this.numRunningLive -= seq.slots;
    seq.status = 'finished';
    seq.finishReason = reason;
    seq.stopTokenId = stopTokenId;
    this.freeBlocks(seq);
    this.finishedEvents.push(seq);
  }

  /** the sequences finished since the last call */
  drainFinished(): Sequence[] {
    const done = this.finishedEvents;
    this.finishedEvents = [];
    return done;
  }

  schedule(now: number): SchedulerOutput {
    const chunks: ScheduledChunk[] = [];
    const copyOps: CopyOp[] = [];
    const swaCopyOps: CopyOp[] = [];
    let budget = this.config.maxNumBatchedTokens;
    const running: Sequence[] = [];
    // finished sequences leave the running list here, as it is walked for this step anyway
    const queue = this.running.filter((s) => s.status === 'running');
    let decoding = 0;
    for (const s of queue) if (s.numUncomputed === 1) decoding++;
    let prefill = (this.lastPrefillBudget = prefillBudget({
      decoding,
      expectedDecoding: Math.max(decoding, Math.min(this.config.maxNumSeqs, this.numRunningLive + this.numWaitingLive)),
      maxNumBatchedTokens: this.config.maxNumBatchedTokens,
      stepTimeFactor: this.config.stepTimeFactor ?? 0,
      overheadTokens: this.cost.overheadTokens(),
    }));
    // a draft model drafts now, its catch-up prefill within the same prefill budget
    this.speculator?.prepare(queue, this.numRunningLive, prefill);
    let next = 0;
    let end = queue.length; // queue[end..] were preempted, newest first
    /** a prefill chunk is in this step already (an image span over the budget waits for a step it starts) */
    let prefilled = false;
    for (; next < end; next++) {
      const seq = queue[next]!;
      const decode = seq.numUncomputed === 1;
      let numTokens = Math.min(seq.numUncomputed, budget, decode ? 1 : prefill);
      if (this.checkpoints) numTokens = this.checkpoints.clampChunk(seq, seq.numComputed, numTokens);
      if (seq.images.length > 0) numTokens = fitToSpans(seq.images, seq.numComputed, numTokens, !prefilled);
      if (numTokens === 0) {
        running.push(seq); // no budget left for it: still running, not scheduled this step
        continue;
      }
      let admitted = this.canAllocate(seq, seq.numComputed + numTokens);
      while (!admitted && end > next + 1) {
        this.preempt(queue[--end]!);
        admitted = this.canAllocate(seq, seq.numComputed + numTokens);
      }
      if (!admitted) {
        if (running.length === 0) {
          // alone and still out of blocks: the cache cannot hold this sequence any longer
          this.finish(seq, 'length');
        } else {
          this.preempt(seq);
        }
        continue;
      }
      const draft = this.draftFor(seq, numTokens, budget, end - next - 1);
      const n = draft.tokens.length;
      this.allocate(seq, seq.numComputed + numTokens + n, copyOps, swaCopyOps);
      chunks.push(n > 0 ? { seq, numTokens, draft: draft.tokens, ...(draft.probs && { draftProbs: draft.probs }) } : { seq, numTokens });
      running.push(seq);
      budget = Math.max(0, budget - numTokens - n);
      if (!decode) {
        prefill = Math.max(0, prefill - numTokens);
        prefilled = true;
      }
    }
    this.running = running;
    this.admitWaiting(chunks, Math.min(budget, prefill), now, prefilled);
    return { chunks, copyOps, swaCopyOps };
  }

  /** the forward time of a step of `tokens` tokens, for the prefill budget's cost model */
  observeStep(tokens: number, forwardMs: number): void {
    this.cost.observe(tokens, forwardMs);
  }

  private admitWaiting(chunks: ScheduledChunk[], budget: number, now: number, prefilled: boolean): void {
    while (budget > 0 && this.numRunningLive < this.config.maxNumSeqs && this.waiting.length > 0) {
      const seq = this.waiting[0]!;
      if (seq.status === 'finished') {
        this.waiting.shift();
        continue;
      }
      // an n > 1 request starts only when all n completions fit under --max-num-seqs
      if (this.numRunningLive + seq.slots > this.config.maxNumSeqs) break;
      const lookup = this.config.enablePrefixCaching && !seq.noPrefixCache && seq.blockTable.length === 0;
      if (lookup) this.prefixLoader?.(seq.tokens, seq.prefixRoot);
      const cached = lookup
        ? this.blocks.findCachedPrefix(seq.tokens, seq.prefixRoot, this.checkpoints?.usable)
        : [];
      const numComputed = cached.length * this.blocks.blockSize;
      let numTokens = Math.min(seq.tokens.length - numComputed, budget);
      if (this.checkpoints) numTokens = this.checkpoints.clampChunk(seq, numComputed, numTokens);
      if (seq.images.length > 0) numTokens = fitToSpans(seq.images, numComputed, numTokens, !prefilled);
      if (numTokens === 0) break;
      if (this.config.wholeSequences && numTokens < seq.tokens.length - numComputed) break;
      if (!this.canAllocate(seq, numComputed + numTokens, cached)) break;
      this.waiting.shift();
      this.numWaitingLive--;
      this.checkpoints?.restoreBeforeAllocate(seq, cached);
      this.allocate(seq, numComputed + numTokens, [], [], cached);
      this.checkpoints?.restore(seq, cached);
      if (seq.firstScheduledTime === undefined) {
        seq.firstScheduledTime = now;
        seq.numCachedPrompt = numComputed;
      }
      seq.numComputed = numComputed;
      seq.status = 'running';
      this.numRunningLive += seq.slots;
      this.running.push(seq);
      chunks.push({ seq, numTokens });
      budget -= numTokens;
      prefilled = true;
    }
  }

  /**
   * seq's draft for this step: only what the budget and the free blocks hold while keeping a
   * block for each of the `reserve` running sequences after it (drafting never preempts).
   */
  private draftFor(seq: Sequence, numTokens: number, budget: number, reserve: number): Draft {
    if (!this.speculator || numTokens !== seq.numUncomputed) return NO_DRAFT;
    const draft = this.speculator.propose(seq, budget - numTokens, this.numRunningLive);
    // reserve·blockSize more tokens need exactly `reserve` more blocks
    const covered = seq.numComputed + numTokens + draft.tokens.length + reserve * this.blocks.blockSize;
    return draft.tokens.length > 0 && this.canAllocate(seq, covered) ? draft : NO_DRAFT;
  }

  /**
   * After verification: the first `accepted` draft tokens of seq's chunk are its tokens now
   * and their K/V stay; blocks held only for rejected positions are freed (their slots in
   * kept blocks are overwritten later) and only accepted tokens enter the prefix cache.
   */
  acceptDraft(seq: Sequence, accepted: number): void {
    assert(seq.status === 'running' && seq.numComputed + accepted < seq.tokens.length, `${seq.key}: ${accepted} accepted drafts are not its tokens`);
    seq.numComputed += accepted;
    this.blocks.truncate(seq, seq.numComputed);
    if (this.config.enablePrefixCaching) this.blocks.cacheFullBlocks(seq, seq.tokens, seq.numComputed);
  }

  /** Frees a running sequence's blocks and puts it first in line to be recomputed. */
  private preempt(seq: Sequence): void {
    this.freeBlocks(seq);
    seq.numComputed = 0;
    seq.status = 'waiting';
    this.numRunningLive -= seq.slots;
    this.waiting.unshift(seq);
    this.numWaitingLive++;
    this.numPreemptions++;
  }

  /** After the forward pass: the chunks' tokens are in the cache; full blocks become cacheable. */
  update(chunks: readonly ScheduledChunk[]): void {
    for (const { seq, numTokens } of chunks) {
      seq.numComputed += numTokens;
      if (!(this.config.enablePrefixCaching && seq.status === 'running')) continue;
      const entered = this.blocks.cacheFullBlocks(seq, seq.tokens, seq.numComputed);
      if (seq.numComputed <= seq.promptLength) seq.numNewlyCachedPrompt += entered * this.blocks.blockSize;
      this.checkpoints?.afterStep(seq);
    }
  }
}
