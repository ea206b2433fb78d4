// One request's next-token choice from a row of logits, with its own RNG and penalty state.
// Order (vLLM v1's sampler): logit bias → min_tokens suppression → repetition, frequency,
// presence penalties → [greedy: argmax here] → temperature → min-p → top-k → top-p → draw.
// sample() never changes the model's row: processing happens in a scratch row shared by the
// thread's samplers; lastProcessedLogits() is what the processed_* logprobs modes report.
import type { Kernels } from '../kernels/index.js';
import { referenceKernels } from '../kernels/reference.js';
import { Rng } from './rng.js';
import { GREEDY_EPSILON, isGreedy, resolveSamplingParams } from './sampling-params.js';
import type { SamplingParams } from './sampling-params.js';
import { getScratch, kthLargest, topKPrefilter, topPCut, topPPrefilter } from './truncation.js';
import { rejectionSample } from './spec/verify.js';

export type { SamplingParams, SamplingParamsInput } from './sampling-params.js';
export { validateSamplingParams } from './sampling-params.js';

export const GREEDY: SamplingParams = resolveSamplingParams({ temperature: 0, seed: 0 });

/** index of the largest value; the lowest index wins ties */
export const argmax: (row: Float32Array) => number = referenceKernels.argmax;

let scratchRow = new Float32Array(0);
/** [vocab] p of sampleAgainstDraft, shared as scratchRow is */
let scratchProbs = new Float32Array(0);

/** A [v] scratch row, reused (sampling is synchronous within a thread). */
function processedRow(v: number): Float32Array {
  if (scratchRow.length !== v) scratchRow = new Float32Array(v);
  return scratchRow;
}

export interface SamplerContext {
  /** the model's end-of-generation ids: suppressed under min_tokens unless ignoreEos */
  readonly eosTokenIds?: Iterable<number>;
  /** the prompt, for the repetition penalty (prompt ∪ output) */
  readonly promptIds?: ArrayLike<number>;
  /** the vocabulary size (the parameters were checked against it by the frontend) */
  readonly vocabSize?: number;
  /** the kernels for argmax (greedy), candidates, weights and the draw: the engine's (the
   * native core's are several times faster); default: the reference kernels */
  readonly kernels?: SamplingKernels;
}

export type SamplingKernels = Pick<Kernels, 'argmax' | 'applyTokenMask' | 'expWeights' | 'sampleCandidates' | 'drawIndex'>;

export class RequestSampler {
  readonly params: SamplingParams;
  private readonly rng: Rng;
  private readonly greedy: boolean;
  /** tokens accepted so far (the output length) */
  private generated = 0;
  /** [numBias] ids and biases */
  private readonly biasIds: Int32Array;
  private readonly biasValues: Float32Array;
  /** stop ∪ EOS ids, suppressed while generated < minTokens */
  private readonly suppressIds: Int32Array;
  /** prompt ∪ output ids; null without a repetition penalty */
  private readonly seen: Set<number> | null;
  /** output id → count; null without frequency/presence penalties */
  private readonly counts: Map<number, number> | null;
  private processed: Float32Array = new Float32Array(0);
  private readonly kernels: SamplingKernels;
  /** [vocab] 1 where a token may be sampled; null = any */
  private readonly allowed: Uint8Array | null;
  /** output so far, kept only for bad_words matching */
  private readonly output: number[] | null;

  /** `params`: resolved (resolveSamplingParams) and, in the engine, asserted (RequestState): used as they are */
  constructor(params: SamplingParams, ctx: SamplerContext = {}) {
    const p = params;
    this.params = p;
    this.rng = new Rng(p.seed ?? Math.floor(Math.random() * 2 ** 32));
    this.greedy = isGreedy(p);
    this.kernels = ctx.kernels ?? referenceKernels;
    this.biasIds = Int32Array.from(p.logitBias.keys());
    this.biasValues = Float32Array.from(p.logitBias.values());
    const suppress = new Set(p.stopTokenIds);
    if (!p.ignoreEos) for (const id of ctx.eosTokenIds ?? []) suppress.add(id);
    this.suppressIds = p.minTokens > 0 ? Int32Array.from(suppress) : new Int32Array(0);
    this.seen = p.repetitionPenalty !== 1 ? new Set(Array.from(ctx.promptIds ?? [])) : null;
    this.counts = p.frequencyPenalty !== 0 || p.presencePenalty !== 0 ? new Map() : null;
    this.allowed = p.allowedTokenIds ? allowedMask(p.allowedTokenIds) : null;
    this.output = p.badWords.length > 0 ? [] : null;
  }

  /** output tokens accepted so far */
  get numGenerated(): number {
    return this.generated;
  }

  /** whether the next sample() leaves the row as it is (greedy with nothing to apply) */
  get leavesRowUnchanged(): boolean {
    return this.greedy && !this.modifiesLogits();
  }

  /**
   * Chooses the next token from `logits` ([vocab] f32, left unchanged) and accepts it.
   * Greedy: argmax after bias/penalties; else exactly one draw from this request's RNG.
   * The greedy path with nothing to apply neither copies nor allocates.
   */
  sample(logits: Float32Array, mask?: Int32Array): number {
    let row = logits;
    if (mask || !this.leavesRowUnchanged) {
      row = processedRow(logits.length);
      row.set(logits);
      // the grammar first: bias and penalties never bring back a token it forbids
      if (mask) this.kernels.applyTokenMask(row, mask);
      if (this.modifiesLogits()) this.applyPenalties(row);
    }
    let id = this.greedy ? this.kernels.argmax(row) : this.draw(row);
    // every allowed token suppressed (min_tokens against a grammar that must end): the grammar wins
    if (mask && !isAllowed(mask, id)) id = bestAllowed(logits, mask);
    this.processed = row;
    this.accept(id);
    return id;
  }

  /**
   * [vocab] the logits the last sample() chose from: after bias and penalties, and unless
   * greedy, divided by the temperature with −∞ where min-p/top-k/top-p removed a token.
   * The model's row itself when nothing applied; else a scratch row valid until the next
   * sample() of any sampler in this thread.
   */
  lastProcessedLogits(): Float32Array {
    return this.processed;
  }

  /** Records a token as generated (sample() does this itself): O(1). */
  accept(id: number): void {
    this.generated++;
    this.output?.push(id);
    this.seen?.add(id);
    if (this.counts) this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
  }

  private modifiesLogits(): boolean {
    return this.biasIds.length > 0 || this.seen !== null || this.counts !== null || this.allowed !== null || this.output !== null || this.generated < this.params.minTokens;
  }

  /** bias, min_tokens and penalties, in place: O(#bias + #stop + #distinct seen tokens) */
  private applyPenalties(row: Float32Array): void {
    const p = this.params;
    for (let j = 0; j < this.biasIds.length; j++) row[this.biasIds[j]!]! += this.biasValues[j]!;
    if (this.generated < p.minTokens) for (const id of this.suppressIds) row[id] = -Infinity;
    if (this.seen) {
      const r = p.repetitionPenalty;
      for (const id of this.seen) {
        const x = row[id]!;
        row[id] = x > 0 ? x / r : x * r;
      }
    }
    if (this.counts) {
      const f = p.frequencyPenalty;
      const pres = p.presencePenalty;
      for (const [id, count] of this.counts) row[id]! -= f * count + pres;
    }
    if (this.allowed) for (let id = 0; id < row.length; id++) if (this.allowed[id] !== 1) row[id] = -Infinity;
    if (this.output) for (const word of p.badWords) if (endsWith(this.output, word, word.length - 1)) row[word[word.length - 1]!] = -Infinity;
  }

  /** temperature → min-p → top-k → top-p → one draw; O(vocab) plus expected O(candidates) selection */
  private draw(row: Float32Array): number {
    const c = this.truncate(row);
    if (typeof c === 'number') return c;
    return c.idx[this.kernels.drawIndex(c.weight, c.n, this.rng.next() * c.total)]!;
  }

  /**
   * temperature → min-p → top-k → top-p on `row` in place (−∞ where a token is cut): the
   * candidates idx[0, n) with unnormalized weights weight[0, n) summing to total, or the
   * argmax alone when no logit is finite.
   */
  private truncate(row: Float32Array): number | { idx: Int32Array; weight: Float64Array; n: number; total: number } {
    const p = this.params;
    const v = row.length;
    const { idx, weight, value } = getScratch(v);
    const scale = p.temperature !== 1 && p.temperature >= GREEDY_EPSILON ? 1 / p.temperature : 1;
    // candidates: finite logits, at or above the min-p floor (p_i ≥ minP·p_max ⇔ x_i ≥ max + ln minP)
    let n = this.kernels.sampleCandidates(row, scale, p.minP > 0 ? Math.log(p.minP) : -Infinity, idx);
    const best = this.kernels.argmax(row);
    if (n === 0) return best;
    const max = row[best]!;
    if (p.topK > 0 && p.topK < n) n = topKPrefilter(row, idx, n, max, p.topK); // drops only tokens top-k drops
    if (p.topK > 0 && p.topK < n) {
      const kth = kthLargest(row, idx, n, p.topK, value);
      let kept = 0;
      for (let j = 0; j < n; j++) {
        const id = idx[j]!;
        if (row[id]! >= kth) idx[kept++] = id;
        else row[id] = -Infinity;
      }
      n = kept;
    }
    // all of the row still a candidate: idx is 0..v−1, read the row straight
    let total = this.kernels.expWeights(weight, row, n === v ? null : idx, n, max);
    if (p.topP < 1) {
      const mass = p.topP * total;
      n = topPPrefilter(row, idx, weight, n, max, mass); // drops only tokens top-p drops
      const kept = topPCut(row, idx, weight, n, mass);
      for (let j = kept; j < n; j++) row[idx[j]!] = -Infinity;
      n = kept;
      total = 0;
      for (let j = 0; j < n; j++) total += weight[j]!;
    }
    return { idx, weight, n, total };
  }

  /**
   * Fills `out` ([vocab]) with the distribution sample() would draw from for `logits` (a
   * point mass at the argmax when greedy); draws nothing and accepts nothing. O(vocab).
   * lastProcessedLogits() is then the processed row.
   */
  distribution(logits: Float32Array, out: Float32Array): void {
    const row = processedRow(logits.length);
    row.set(logits);
    if (this.modifiesLogits()) this.applyPenalties(row);
    this.processed = row;
    out.fill(0);
    const c = this.greedy ? this.kernels.argmax(row) : this.truncate(row);
    if (typeof c === 'number') {
      out[c] = 1;
      return;
    }
    for (let j = 0; j < c.n; j++) out[c.idx[j]!] = c.weight[j]! / c.total;
  }

  /**
   * The token at a draft position whose draft token x was drawn from q ([vocab], the draft
   * model's distribution): rejection sampling against this sampler's distribution p of
   * `logits` (spec/verify.ts), then accepted as sample() accepts. Two uniforms at most.
   */
  sampleAgainstDraft(logits: Float32Array, x: number, q: Float32Array): number {
    if (scratchProbs.length !== logits.length) scratchProbs = new Float32Array(logits.length);
    this.distribution(logits, scratchProbs);
    const id = rejectionSample(scratchProbs, q, x, () => this.rng.next());
    this.accept(id);
    return id;
  }
}

function isAllowed(mask: Int32Array, id: number): boolean {
  return ((mask[id >> 5]! >>> (id & 31)) & 1) === 1;
}

/** the allowed token with the largest raw logit (lowest id among equals); 0 when none is allowed */
function bestAllowed(logits: Float32Array, mask: Int32Array): number {
  let best = -1;
  for (let i = 0; i < logits.length; i++) if (isAllowed(mask, i) && (best < 0 || logits[i]! > logits[best]!)) best = i;
  return Math.max(best, 0);
}

function allowedMask(ids: readonly number[]): Uint8Array {
  const mask = new Uint8Array(Math.max(...ids) + 1);
  for (const id of ids) mask[id] = 1;
  return mask;
}

/** whether `out` ends with word[0..len) */
function endsWith(out: readonly number[], word: readonly number[], len: number): boolean {
  if (len > out.length) return false;
  for (let i = 0; i < len; i++) if (out[out.length - len + i] !== word[i]) return false;
  return true;
}

/** The single-sequence sampler `loom generate` uses: a RequestSampler without prompt context. */
export class Sampler extends RequestSampler {}
