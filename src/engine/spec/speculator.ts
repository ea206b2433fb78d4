// Decides each step which running sequence drafts how many tokens, and counts drafts and
// acceptances for the step's stats (vLLM's spec_decode_* counters, per step, never cumulative).
// Drafts come from prompt lookup (ngram-drafter.ts) or from a draft model
// (draft-model-drafter.ts), which drafts for the whole batch at the start of each step.
import type { Sequence } from '../sequence.js';
import type { SpeculativeConfig } from './config.js';
import type { Draft, DraftJob, DraftModelDrafter } from './draft-model-drafter.js';
import { proposeNgram } from './ngram-drafter.js';

/** one step's drafting, as StepStats reports it */
export interface SpecStepStats {
  /** sequences that verified a draft */
  readonly numDrafts: number;
  readonly numDraftTokens: number;
  readonly numAcceptedTokens: number;
  /** [K] drafts accepted at each draft position */
  readonly acceptedPerPosition: number[];
}

const NO_DRAFT: Draft = Object.freeze({ tokens: Object.freeze([]) });

export class Speculator {
  private step: { numDrafts: number; numDraftTokens: number; numAcceptedTokens: number; acceptedPerPosition: number[] };

  constructor(
    readonly config: SpeculativeConfig,
    /** the draft model, when config.method is "draft_model" */
    readonly drafter?: DraftModelDrafter,
  ) {
    if ((config.method === 'draft_model') !== (drafter !== undefined)) throw new Error(`speculative method ${config.method} ${drafter ? 'takes no' : 'needs a'} draft model`);
    this.step = this.empty();
  }

  /**
   * Start of a step: the draft model drafts, in one batch, for every sequence in `running`
   * that may draft (propose() then hands the drafts out); `prefillBudget`: the tokens its
   * catch-up prefills may take (the step's prefill budget). Nothing for prompt lookup.
   */
  prepare(running: readonly Sequence[], numRunning: number, prefillBudget: number): void {
    if (!this.drafter) return;
    const jobs: DraftJob[] = [];
    for (const seq of running) {
      const k = this.maxDraft(seq, this.config.numSpeculativeTokens, numRunning);
      if (k > 0) jobs.push({ seq, k });
    }
    this.drafter.draft(jobs, prefillBudget);
  }

  /**
   * The draft seq verifies this step, at most `room` tokens (what the token budget and its
   * blocks leave): only a decoding sequence (one token to compute, one sampled already) of
   * a request that allows it, and only while at most disableByBatchSize sequences run. A
   * sampled draft-model draft carries q, the probabilities its tokens were drawn from.
   */
  propose(seq: Sequence, room: number, numRunning: number): Draft {
    const k = this.maxDraft(seq, room, numRunning);
    if (k <= 0) return NO_DRAFT;
    if (this.drafter) return this.drafter.proposal(seq, k) ?? NO_DRAFT;
    const c = this.config as Extract<SpeculativeConfig, { method: 'ngram' }>;
    return { tokens: proposeNgram(seq.tokens, { max: c.promptLookupMax, min: c.promptLookupMin }, k) };
  }

  private maxDraft(seq: Sequence, room: number, numRunning: number): number {
    if (numRunning > this.config.disableByBatchSize || seq.numUncomputed !== 1 || seq.numOutput < 1) return 0;
    // the last draft's bonus token must still fit max_tokens and the context
    return Math.min(this.config.numSpeculativeTokens, room, seq.draftLimit - seq.tokens.length - 1);
  }

  /** Counts seq's verified draft of which the first `accepted` tokens were accepted; the draft model keeps only their K/V. */
  record(seq: Sequence, draftLength: number, accepted: number): void {
    const s = this.step;
    s.numDrafts++;
    s.numDraftTokens += draftLength;
    s.numAcceptedTokens += accepted;
    for (let i = 0; i < accepted; i++) s.acceptedPerPosition[i]!++;
    this.drafter?.rollback(seq);
  }

  /** seq leaves the running set (finished, aborted, preempted): its draft state goes. */
  release(seq: Sequence): void {
    this.drafter?.release(seq);
  }

  /** this step's counts (undefined when nothing was drafted); starts the next step at zero */
  drain(): SpecStepStats | undefined {
    const s = this.step;
    if (s.numDrafts === 0) return undefined;
    this.step = this.empty();
    return s;
  }

  private empty(): Speculator['step'] {
    return { numDrafts: 0, numDraftTokens: 0, numAcceptedTokens: 0, acceptedPerPosition: new Array<number>(this.config.numSpeculativeTokens).fill(0) };
  }
}
