// Benchmark prompts: random token ids drawn uniformly (seeded) from the model's real,
// non-special vocabulary. Lengths are uniform integers in [ceil(L·R), L] for a target
// length L and range ratio R ∈ (0, 1] (R = 1: every request has length L).
import { InvalidArgumentError } from '../errors.js';
import { Rng } from '../engine/rng.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';

export interface RandomDatasetOptions {
  readonly numRequests: number;
  readonly inputLen: number;
  readonly outputLen: number;
  readonly rangeRatio: number;
  readonly seed: number;
}

export interface BenchRequest {
  /** [promptLength] ids of non-special vocabulary tokens */
  readonly promptIds: Int32Array;
  /** tokens to generate (maxTokens, with ignoreEos) */
  readonly outputLen: number;
}

/** [lo, hi] of lengths for target `len` and ratio `ratio`: lo = max(1, ceil(len·ratio)). */
export function lengthRange(len: number, ratio: number): [number, number] {
  if (!(ratio > 0 && ratio <= 1)) throw new InvalidArgumentError(`--range-ratio must be in (0, 1], got ${ratio}`);
  if (!Number.isInteger(len) || len < 1) throw new InvalidArgumentError(`lengths must be positive integers, got ${len}`);
  return [Math.max(1, Math.ceil(len * ratio - 1e-9)), len];
}

/** Ids a prompt may use: below `vocabSize` (the model's rows), not special, not a stop id, with a vocabulary entry. */
export function vocabularyIds(tokenizer: Tokenizer, vocabSize = tokenizer.vocabSize): Int32Array {
  const ids: number[] = [];
  const n = Math.min(vocabSize, tokenizer.vocabSize);
  for (let id = 0; id < n; id++) {
    if (tokenizer.isSpecial(id) || tokenizer.stopIds.has(id) || tokenizer.tokenText(id) === undefined) continue;
    ids.push(id);
  }
  if (ids.length === 0) throw new InvalidArgumentError('the tokenizer has no non-special tokens to draw prompts from');
  return Int32Array.from(ids);
}

/**
 * Ids whose bytes are not whole UTF-8 characters (byte-level pieces of a character): a server
 * streaming text holds such a token back until a later one completes the character
 * (llama-server sends no chunk for it at all), so a benchmark timing the first token bans them.
 */
export function partialCharacterIds(tokenizer: Tokenizer, vocabSize = tokenizer.vocabSize): number[] {
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const ids: number[] = [];
  for (let id = 0; id < Math.min(vocabSize, tokenizer.vocabSize); id++) {
    try {
      utf8.decode(tokenizer.tokenBytes(id));
    } catch {
      ids.push(id);
    }
  }
  return ids;
}

/** A uniform integer in [lo, hi]. */
function uniformInt(rng: Rng, lo: number, hi: number): number {
  return lo + Math.floor(rng.next() * (hi - lo + 1));
}

/** `numRequests` prompts of random vocabulary ids; the same seed gives the same requests. */
export function randomRequests(vocab: Int32Array, opts: RandomDatasetOptions): BenchRequest[] {
  const [inLo, inHi] = lengthRange(opts.inputLen, opts.rangeRatio);
  const [outLo, outHi] = lengthRange(opts.outputLen, opts.rangeRatio);
  const rng = new Rng(opts.seed);
  const requests: BenchRequest[] = [];
  for (let i = 0; i < opts.numRequests; i++) {
    const promptIds = new Int32Array(uniformInt(rng, inLo, inHi));
    for (let j = 0; j < promptIds.length; j++) promptIds[j] = vocab[Math.floor(rng.next() * vocab.length)]!;
    requests.push({ promptIds, outputLen: uniformInt(rng, outLo, outHi) });
  }
  return requests;
}

/** Poisson arrivals at `rate` requests/s: [n] offsets in ms from the start (first at 0). */
export function poissonOffsets(n: number, rate: number, seed: number): number[] {
  if (!(rate > 0)) throw new InvalidArgumentError(`--request-rate must be > 0, got ${rate}`);
  const rng = new Rng(seed ^ 0x5bd1e995);
  const out: number[] = [];
  let t = 0;
  for (let i = 0; i < n; i++) {
    out.push(t);
    t += (-Math.log(1 - rng.next()) / rate) * 1000;
  }
  return out;
}
