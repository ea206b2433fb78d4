// Messages between the frontend (main thread) and the engine core (worker). Plain
// objects; typed arrays travel as transferables. Out of the engine, each step carries
// only what is new per request: never a request's whole sequence.
import type { DiskCacheStats } from './disk-prefix-cache.js';
import type { KvDtype } from '../kernels/index.js';
import type { LogprobsMode } from './logprobs.js';
import type { SamplingParams } from './sampling-params.js';

export type FinishReason = 'stop' | 'length' | 'abort';
import type { KvEvent } from './kv-events.js';
import type { SpecStepStats } from './spec/speculator.js';
import type { PoolingType } from '../model/weights.js';
import type { EngineImage } from './image-spans.js';

export interface AddRequest {
  readonly type: 'add';
  readonly id: string;
  /** [promptLength] */
  readonly promptIds: Int32Array;
  /** resolved by the frontend (resolveSamplingParams); the engine asserts them */
  readonly params: SamplingParams;
  /** frontend clock (performance.timeOrigin + now()) when the request arrived */
  readonly arrivalTime: number;
  /** a pooling request (embedding, rerank): the prompt is computed once, its pooled vector is
   *  the one output and its KV is freed at once; `params` are not used */
  readonly pool?: true;
  /** the prompt's images, in order: promptIds hold IMAGE_TOKEN_ID at their positions (their pixels are transferred) */
  readonly images?: readonly EngineImage[];
}

export interface AbortRequests {
  readonly type: 'abort';
  readonly ids: readonly string[];
}

/** Empties the prefix cache (POST /reset_prefix_cache, between benchmark runs); answered with a `reset` message. */
export interface ResetPrefixCache {
  readonly type: 'reset-prefix-cache';
  /** also remove the blocks kept on disk (--kv-cache-dir) for this engine's model (vLLM's reset_external) */
  readonly external?: boolean;
}

export interface Shutdown {
  readonly type: 'shutdown';
}

export type EngineInbound = AddRequest | AbortRequests | ResetPrefixCache | Shutdown;

/** What one step produced for one completion of one request. */
export interface RequestDelta {
  readonly id: string;
  /** completion index (0..n-1) */
  readonly index: number;
  /** [k] tokens new since the last delta */
  readonly tokenIds: Int32Array;
  /** [k] logprob of each new token, when the request asked */
  readonly logprobs?: Float32Array;
  /** [k, topN] top alternatives of each new token, when the request asked for topN > 0 */
  readonly topIds?: Int32Array;
  readonly topLogprobs?: Float32Array;
  /** [promptLength - 1 or fewer] prompt logprobs, once, with the first delta, when asked */
  readonly promptLogprobs?: Float32Array;
  /** [promptLength - 1] each prompt token's rank (1 = the most likely), with promptLogprobs */
  readonly promptRanks?: Int32Array;
  readonly promptTopIds?: Int32Array;
  readonly promptTopLogprobs?: Float32Array;
  /** [k] engine clock (performance.timeOrigin + now(), ms) when each token was sampled */
  readonly times: Float64Array;
  readonly finishReason?: FinishReason;
  /** the stop token id that ended it, if one did */
  readonly stopTokenId?: number;
  /** tokens of the prompt found in the prefix cache (first delta) */
  readonly cachedPromptTokens?: number;
  /** tokens of the prompt its prefill wrote into the prefix cache, full blocks not cached before (first delta) */
  readonly newlyCachedPromptTokens?: number;
  /** set on the first delta: when the request was first scheduled (queue time ends) */
  readonly firstScheduledTime?: number;
  /** a request the engine refused (bad parameters, too long): no tokens, finishes at once */
  readonly error?: string;
  /** a pooling request's one output, with its finish: the pooled vector as the model pools it
   *  (not normalized; a rank model's scores) */
  readonly pooled?: Float32Array;
}

export interface StepStats {
  readonly numRunning: number;
  readonly numWaiting: number;
  readonly kvCacheUsage: number;
  readonly prefixCacheQueries: number;
  readonly prefixCacheHits: number;
  readonly numPreemptions: number;
  readonly scheduledTokens: number;
  /** ms in the forward pass this step, and ms for the whole step */
  readonly forwardMs: number;
  /** ms the vision projector took this step (in forwardMs too), when it encoded images */
  readonly encodeMs?: number;
  /** images encoded this step */
  readonly imagesEncoded?: number;
  readonly stepMs: number;
  /** this step's speculative drafts and acceptances, when any sequence drafted */
  readonly spec?: SpecStepStats;
  /** the blocks kept on disk (--kv-cache-dir), cumulative, when on; bytes: the directory's now */
  readonly kvCacheDir?: DiskCacheStats & { readonly bytes: number };
}

export interface StepOutput {
  readonly type: 'step';
  readonly deltas: RequestDelta[];
  readonly stats: StepStats;
  /** prefix-cache changes since the last step, when KV events are on (see kv-events.ts) */
  readonly kvEvents?: KvEvent[];
}

/** What a pooling engine's outputs are (EngineReady.pooling). */
export interface PoolingInfo {
  readonly type: PoolingType;
  /** floats of one pooled vector (rank: one score per label) */
  readonly size: number;
  /** the model's default: L2-normalize embeddings */
  readonly normalize: boolean;
  readonly matryoshkaDimensions?: readonly number[];
  /** a reranker's prompt template ({query}, {document}); absent: the pair as BOS query EOS SEP document EOS */
  readonly rerankTemplate?: string;
}

export interface EngineReady {
  readonly type: 'ready';
  readonly numBlocks: number;
  readonly blockSize: number;
  readonly maxModelLen: number;
  readonly vocabSize: number;
  readonly logprobsMode: LogprobsMode;
  readonly maxNumSeqs: number;
  readonly kvCacheDtype?: KvDtype;
  readonly kvCacheBytes?: number;
  /** when prefix blocks are kept on disk (--kv-cache-dir): its bound (--kv-cache-dir-size) and the bytes it held at start */
  readonly kvCacheDir?: { readonly maxBytes: number; readonly bytes: number };
  readonly notes?: readonly string[];
  /** set when the engine pools (an embedding or rerank model) instead of generating */
  readonly pooling?: PoolingInfo;
}

export interface EngineError {
  readonly type: 'fatal';
  readonly message: string;
}

export interface PrefixCacheReset {
  readonly type: 'reset';
  readonly ok: boolean;
}

export type EngineOutbound = StepOutput | EngineReady | EngineError | PrefixCacheReset;

/** The typed arrays of a step message, to pass as postMessage transferables. */
export function transferables(out: StepOutput): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  for (const d of out.deltas) {
    for (const a of [d.tokenIds, d.pooled, d.logprobs, d.topIds, d.topLogprobs, d.promptLogprobs, d.promptRanks, d.promptTopIds, d.promptTopLogprobs, d.times]) {
      if (a && a.buffer instanceof ArrayBuffer) buffers.add(a.buffer);
    }
  }
  return [...buffers];
}
