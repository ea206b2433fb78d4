// How many prefill tokens a step may take while other sequences are decoding. A step's
// forward time is about a + b·tokens (a: reading the weights and launching ~15 kernels per
// layer; b: the arithmetic per row). A long prefill chunk in the same step as the decodes
// stalls every stream for the whole step: that is what made ITL p99 14× the median. So the
// step is given a time target, stepTimeFactor × the time of a decode-only step of the
// sequences that will be decoding once the queue is in (running + waiting, at most
// maxNumSeqs), and the prefill chunks are sized to fit it, with a and b fitted online from
// the steps' own forward times. With nobody decoding there is no stream to stall: the whole
// token budget goes to prefill.
import assert from 'node:assert/strict';

/** a and b of forwardMs ≈ a + b·tokens, fitted by exponentially weighted least squares */
export class StepCostModel {
  // weighted sums over past steps, each step's weight decaying by `decay` per step
  private w = 0;
  private sx = 0;
  private sy = 0;
  private sxx = 0;
  private sxy = 0;

  constructor(private readonly decay = 0.97) {}

  get observed(): boolean {
    return this.w > 0;
  }

  observe(tokens: number, ms: number): void {
    if (!(tokens > 0) || !(ms > 0) || !Number.isFinite(ms)) return;
    const d = this.decay;
    this.w = this.w * d + 1;
    this.sx = this.sx * d + tokens;
    this.sy = this.sy * d + ms;
    this.sxx = this.sxx * d + tokens * tokens;
    this.sxy = this.sxy * d + tokens * ms;
  }

  /**
   * The fixed cost a in units of one token's cost b (a/b ≥ 0): how many extra tokens a step
   * could take for the time its fixed part costs. When the steps seen so far all had about
   * the same size, a and b cannot be told apart and this is 0 (the cautious answer: the
   * smallest prefill chunks).
   */
  overheadTokens(): number {
    if (this.w === 0) return 0;
    const mx = this.sx / this.w;
    const my = this.sy / this.w;
    const vx = this.sxx / this.w - mx * mx;
    if (vx < 1e-6 * mx * mx + 1) return 0;
    const b = (this.sxy / this.w - mx * my) / vx;
    const a = my - b * mx;
    if (!(b > 0) || !(a > 0)) return 0;
    return a / b;
  }
}

export interface PrefillBudgetInput {
  /** running sequences computing one token this step (decodes) */
  readonly decoding: number;
  /** sequences expected to decode once admitted: decoding + prefilling + waiting, capped at maxNumSeqs */
  readonly expectedDecoding: number;
  /** the step's whole token budget (--max-num-batched-tokens) */
  readonly maxNumBatchedTokens: number;
  /** a step with prefill may take this many times a decode-only step; 0 = no limit */
  readonly stepTimeFactor: number;
  /** a/b of the cost model */
  readonly overheadTokens: number;
}

/** the least prefill tokens a step with decodes takes, so a prompt always progresses */
export const MIN_PREFILL_CHUNK = 32;

/**
 * Prefill tokens the step may schedule beside its decodes. With cost(n) = a + b·n and
 * A = a/b: the target is f·cost(E) (E = expectedDecoding), the decodes take cost(d), so
 * the prefill gets (f·(A + E) − (A + d)) tokens, at least MIN_PREFILL_CHUNK, within the
 * token budget left after the decodes.
 */
export function prefillBudget(i: PrefillBudgetInput): number {
  assert(i.decoding >= 0 && i.expectedDecoding >= i.decoding, `expected decodes ${i.expectedDecoding} < decodes ${i.decoding}`);
  const left = Math.max(0, i.maxNumBatchedTokens - i.decoding);
  if (i.decoding === 0 || i.stepTimeFactor <= 0) return left;
  const A = i.overheadTokens;
  const fits = Math.floor(i.stepTimeFactor * (A + i.expectedDecoding) - (A + i.decoding));
  return Math.min(left, Math.max(MIN_PREFILL_CHUNK, fits));
}
