// Decides each step which running sequence drafts how many tokens, and counts drafts and
// acceptances for the step's stats (vLLM's spec_decode_* counters, per step, never cumulative).
import type { Sequence } from '../sequence.js';
import type { SpeculativeConfig } from './config.js';
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

const NO_DRAFT: readonly number[] = Object.freeze([]);

export class Speculator {
  private step: { numDrafts: number; numDraftTokens: number; numAcceptedTokens: number; acceptedPerPosition: number[] };

  constructor(readonly config: SpeculativeConfig) {
    this.step = this.empty();
  }

  /**
   * The draft seq verifies this step, at most `room` tokens (what the token budget and its
   * blocks leave): only a decoding sequence (one token to compute, one sampled already) of
   * a request that allows it, and only while at most disableByBatchSize sequences run.
   */
  propose(seq: Sequence, room: number, numRunning: number): readonly number[] {
    if (numRunning > this.config.disableByBatchSize || seq.numUncomputed !== 1 || seq.numOutput < 1) return NO_DRAFT;
    // the last draft's bonus token must still fit max_tokens and the context
    const k = Math.min(this.config.numSpeculativeTokens, room, seq.draftLimit - seq.tokens.length - 1);
    if (k <= 0) return NO_DRAFT;
    return proposeNgram(seq.tokens, { max: this.config.promptLookupMax, min: this.config.promptLookupMin }, k);
  }

  /** Counts a verified draft of which the first `accepted` tokens were accepted. */
  record(draftLength: number, accepted: number): void {
    const s = this.step;
    s.numDrafts++;
    s.numDraftTokens += draftLength;
    s.numAcceptedTokens += accepted;
    for (let i = 0; i < accepted; i++) s.acceptedPerPosition[i]!++;
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
