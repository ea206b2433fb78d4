// One completion being generated: its tokens, how many of them are in the KV cache, and
// its blocks. A request with n > 1 has n sequences that share the prompt's blocks.
import type { BlockOwner } from './block-manager.js';
import type { FinishReason } from './protocol.js';
import type { ImageSpan } from './image-spans.js';

export type SequenceStatus = 'waiting' | 'running' | 'finished';

export class Sequence implements BlockOwner {
  readonly blockTable: number[] = [];
  /** its table in the sliding-window pool (engine/swa-blocks.ts), when the model has one */
  readonly swa: BlockOwner = { blockTable: [] };
  /** prompt, then generated tokens (an image's positions hold its cache keys, engine/image-spans.ts) */
  readonly tokens: number[];
  readonly promptLength: number;
  status: SequenceStatus = 'waiting';
  /** tokens whose K/V are in the cache (positions 0..numComputed-1) */
  numComputed = 0;
  /** prompt tokens found in the prefix cache when first scheduled */
  numCachedPrompt = 0;
  /** prompt tokens its prefill wrote into the prefix cache: its full blocks whose content was not cached yet */
  numNewlyCachedPrompt = 0;
  finishReason: FinishReason | undefined;
  stopTokenId: number | undefined;
  firstScheduledTime: number | undefined;
  /** generated tokens not yet sent to the frontend, with their sample times */
  readonly pending: { tokens: number[]; times: number[]; logprobs: number[]; topIds: number[]; topLogprobs: number[] } = {
    tokens: [],
    times: [],
    logprobs: [],
    topIds: [],
    topLogprobs: [],
  };
  /** whether the first delta (with cached-prompt count and queue time) has been sent */
  announced = false;
  /** never take prompt blocks from the prefix cache (prompt logprobs need every position computed) */
  noPrefixCache = false;
  /** running slots it holds (--max-num-seqs): for the first completion of an n > 1 request, the completions that fork from it (n, at most --max-num-seqs) until it forks, else 1 */
  slots = 1;
  /** its recurrent-state slot (hybrid models, engine/state-slots.ts), -1 while it holds none */
  stateSlot = -1;
  /** its newest generation-time state checkpoint (hybrid models with prefix caching, engine/state-checkpoints.ts) */
  rollingCheckpoint: { readonly block: number; readonly tickets: readonly number[] } | undefined = undefined;
  /** where its prefix-cache chain starts (a cache salt's root; 0 = shared) */
  prefixRoot = 0;
  /** the length its tokens may reach (max_tokens, context) if it may draft speculatively, else 0 */
  draftLimit = 0;

  constructor(
    readonly requestId: string,
    /** completion index within its request */
    readonly index: number,
    promptIds: ArrayLike<number>,
    readonly arrivalTime: number,
    /** the prompt's images, in position order (a span is computed in one chunk) */
    readonly images: readonly ImageSpan[] = [],
  ) {
    this.tokens = Array.from(promptIds);
    this.promptLength = this.tokens.length;
  }

  get numOutput(): number {
    return this.tokens.length - this.promptLength;
  }

  /** tokens still to compute before the next sample */
  get numUncomputed(): number {
    return this.tokens.length - this.numComputed;
  }

  get isFinished(): boolean {
    return this.status === 'finished';
  }

  get key(): string {
    return `${this.requestId}#${this.index}`;
  }
}
