// Next-token choice from one row of logits. Greedy at temperature 0; otherwise
// top-k → top-p → min-p filtering and a draw from the request's own seeded stream.
import { InvalidArgumentError } from '../errors.js';
import { Rng } from './rng.js';

export interface SamplingParams {
  /** 0 = greedy */
  readonly temperature: number;
  /** ≤ 0 = no limit */
  readonly topK: number;
  /** 1 = no limit */
  readonly topP: number;
  /** 0 = no limit */
  readonly minP: number;
  readonly seed: number;
}

export const GREEDY: SamplingParams = { temperature: 0, topK: 0, topP: 1, minP: 0, seed: 0 };

export function validateSamplingParams(p: SamplingParams): void {
  if (!(p.temperature >= 0)) throw new InvalidArgumentError(`temperature must be ≥ 0, got ${p.temperature}`);
  if (!Number.isInteger(p.topK)) throw new InvalidArgumentError(`top-k must be an integer, got ${p.topK}`);
  if (!(p.topP > 0 && p.topP <= 1)) throw new InvalidArgumentError(`top-p must be in (0, 1], got ${p.topP}`);
  if (!(p.minP >= 0 && p.minP <= 1)) throw new InvalidArgumentError(`min-p must be in [0, 1], got ${p.minP}`);
  if (!Number.isInteger(p.seed)) throw new InvalidArgumentError(`seed must be an integer, got ${p.seed}`);
}

/** index of the largest value; the lowest index wins ties */
export function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
}

export class Sampler {
  private readonly rng: Rng;

  constructor(readonly params: SamplingParams) {
    validateSamplingParams(params);
    this.rng = new Rng(params.seed);
  }

  sample(logits: Float32Array): number {
    const p = this.params;
    if (p.temperature === 0) return argmax(logits);
    let ids = Array.from(logits.keys()).sort((a, b) => logits[b]! - logits[a]! || a - b);
    if (p.topK > 0) ids = ids.slice(0, p.topK);
    const max = logits[ids[0]!]!;
    let probs = ids.map((id) => Math.exp((logits[id]! - max) / p.temperature));
    let total = probs.reduce((a, b) => a + b, 0);
    if (p.topP < 1) {
      let kept = 0;
      let mass = 0;
      while (kept < ids.length && mass < p.topP * total) mass += probs[kept++]!;
      ids = ids.slice(0, kept);
      probs = probs.slice(0, kept);
    }
    if (p.minP > 0) {
      const floor = p.minP * probs[0]!; // probs[0] is the largest
      const kept = probs.filter((x) => x >= floor).length;
      ids = ids.slice(0, kept);
      probs = probs.slice(0, kept);
    }
    total = probs.reduce((a, b) => a + b, 0);
    let draw = this.rng.next() * total;
    for (let i = 0; i < ids.length; i++) {
      draw -= probs[i]!;
      if (draw < 0) return ids[i]!;
    }
    return ids[ids.length - 1]!;
  }
}
