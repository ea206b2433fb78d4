// Logprobs of sampled and prompt tokens, in the mode chosen at engine start (vLLM's and
// LMDeploy's --logprobs-mode):
//   raw_logprobs        log-softmax of the model's logits (default, as vLLM)
//   raw_logits          the model's logits
//   processed_logprobs  log-softmax of the logits sampling drew from: after bias, min_tokens,
//                       penalties, temperature and min-p/top-k/top-p (−∞ where removed),
//                       as vLLM defines it ("after applying all processors, including
//                       temperature and top_k/top_p"); greedy requests skip temperature/truncation
//   processed_logits    those logits
//   none                a request asking for logprobs is refused
// Prompt logprobs are the raw values in every mode (as vLLM: prompt tokens go through no
// sampling processor). Nothing here runs for a request that did not ask.
import { InvalidArgumentError } from '../errors.js';
import { MAX_LOGPROBS } from './sampling-params.js';
import type { SamplingParams } from './sampling-params.js';
import { topN } from './top-n.js';

export type LogprobsMode = 'raw_logprobs' | 'raw_logits' | 'processed_logprobs' | 'processed_logits' | 'none';
export const LOGPROBS_MODES: readonly LogprobsMode[] = ['raw_logprobs', 'raw_logits', 'processed_logprobs', 'processed_logits', 'none'];
export const DEFAULT_LOGPROBS_MODE: LogprobsMode = 'raw_logprobs';

export function parseLogprobsMode(value: string): LogprobsMode {
  const mode = LOGPROBS_MODES.find((m) => m === value);
  if (!mode) throw new InvalidArgumentError(`--logprobs-mode must be one of ${LOGPROBS_MODES.join(', ')}, got "${value}"`);
  return mode;
}

/** Refuses a request that asks for logprobs or prompt logprobs from an engine in mode `none`. */
export function checkLogprobsRequest(mode: LogprobsMode, p: Pick<SamplingParams, 'logprobs' | 'promptLogprobs'>): void {
  if (mode !== 'none') return;
  const asked = p.logprobs !== null ? 'logprobs' : p.promptLogprobs !== null ? 'prompt_logprobs' : null;
  if (asked) throw new InvalidArgumentError(`${asked} is not available: this engine runs with --logprobs-mode none`, asked);
}

/** Whether the mode reports the processed row (sampler.lastProcessedLogits()) rather than the model's. */
export const isProcessedMode = (mode: LogprobsMode): boolean => mode === 'processed_logprobs' || mode === 'processed_logits';
/** Whether the mode reports log-softmax values (else logits). */
export const reportsLogprobs = (mode: LogprobsMode): boolean => mode === 'raw_logprobs' || mode === 'processed_logprobs';

/** One token's value and its top-N alternatives; "logprob" holds a logit in the *_logits modes. */
export interface TokenLogprob {
  readonly tokenId: number;
  readonly logprob: number;
  /** 1 + the number of tokens with a strictly higher value (vLLM's rank) */
  readonly rank: number;
  /** [N] best first: value desc, then id asc */
  readonly topIds: Int32Array;
  /** [N] */
  readonly topLogprobs: Float32Array;
}

/** k tokens' logprobs as columns, the shape a delta transfers. */
export interface LogprobsColumns {
  readonly topN: number;
  /** [k] */
  readonly tokenIds: Int32Array;
  /** [k] */
  readonly logprobs: Float32Array;
  /** [k] */
  readonly ranks: Int32Array;
  /** [k, topN] row-major */
  readonly topIds: Int32Array;
  /** [k, topN] */
  readonly topLogprobs: Float32Array;
}

export function allocLogprobsColumns(k: number, topN: number): LogprobsColumns {
  return {
    topN,
    tokenIds: new Int32Array(k),
    logprobs: new Float32Array(k),
    ranks: new Int32Array(k),
    topIds: new Int32Array(k * topN),
    topLogprobs: new Float32Array(k * topN),
  };
}

/**
 * Writes token `tokenId`'s entry of `values` ([vocab] logits) into row t of `out`: its
 * log-softmax (asLogprobs) or logit, its rank, and the top `out.topN`. O(vocab) + O(vocab·log N).
 */
export function writeTokenLogprobs(values: Float32Array, asLogprobs: boolean, tokenId: number, out: LogprobsColumns, t: number): void {
  const v = values.length;
  const own = values[tokenId]!;
  let max = -Infinity;
  let higher = 0;
  for (let i = 0; i < v; i++) {
    const x = values[i]!;
    if (x > max) max = x;
    if (x > own) higher++;
  }
  let shift = 0;
  if (asLogprobs) {
    let sum = 0;
    for (let i = 0; i < v; i++) sum += Math.exp(values[i]! - max);
    shift = max + Math.log(sum); // log Σ exp(x)
  }
  out.tokenIds[t] = tokenId;
  out.logprobs[t] = own - shift;
  out.ranks[t] = higher + 1;
  const n = out.topN;
  if (n === 0) return;
  const ids = out.topIds.subarray(t * n, (t + 1) * n);
  const got = topN(values, n, ids, heapScratch);
  for (let j = 0; j < n; j++) {
    out.topLogprobs[t * n + j] = j < got ? values[ids[j]!]! - shift : -Infinity;
    if (j >= got) ids[j] = -1; // a vocabulary smaller than N
  }
}

const heapScratch = new Int32Array(MAX_LOGPROBS);

/**
 * The sampled token's logprob and top-N in `mode`: `raw` is the model's row, `processed`
 * the sampler's (lastProcessedLogits(), read before the next sample()).
 */
export function tokenLogprobs(mode: LogprobsMode, raw: Float32Array, processed: Float32Array, tokenId: number, topN: number): TokenLogprob {
  if (mode === 'none') throw new InvalidArgumentError('logprobs are not available: this engine runs with --logprobs-mode none');
  checkTopN(topN);
  const out = allocLogprobsColumns(1, topN);
  writeTokenLogprobs(isProcessedMode(mode) ? processed : raw, reportsLogprobs(mode), tokenId, out, 0);
  return { tokenId, logprob: out.logprobs[0]!, rank: out.ranks[0]!, topIds: out.topIds, topLogprobs: out.topLogprobs };
}

/**
 * Prompt logprobs for k positions: row r of `rows` ([k, vocab], the logits at prompt
 * position p) scores nextTokenIds[r] (the prompt token at p + 1). Raw values in every mode
 * (logits in the *_logits modes). A whole prompt gives promptLength − 1 entries; the engine
 * may call this per prefill chunk.
 */
export function promptLogprobs(mode: LogprobsMode, rows: Float32Array, vocabSize: number, nextTokenIds: ArrayLike<number>, topN: number): LogprobsColumns {
  if (mode === 'none') throw new InvalidArgumentError('prompt_logprobs is not available: this engine runs with --logprobs-mode none');
  checkTopN(topN);
  const k = nextTokenIds.length;
  if (rows.length < k * vocabSize) throw new InvalidArgumentError(`prompt logprobs need ${k} rows of ${vocabSize} logits, got ${rows.length} values`);
  const out = allocLogprobsColumns(k, topN);
  const asLogprobs = reportsLogprobs(mode);
  for (let r = 0; r < k; r++) {
    writeTokenLogprobs(rows.subarray(r * vocabSize, (r + 1) * vocabSize), asLogprobs, nextTokenIds[r]!, out, r);
  }
  return out;
}

function checkTopN(n: number): void {
  if (!Number.isInteger(n) || n < 0 || n > MAX_LOGPROBS) throw new InvalidArgumentError(`logprobs must be an integer in [0, ${MAX_LOGPROBS}], got ${n}`);
}
