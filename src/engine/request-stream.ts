// The frontend's view of one request: an async iterator of deltas. Deltas the consumer
// has not read yet are merged per completion (tokens concatenated), never dropped.
import type { RequestDelta } from './protocol.js';

export class EngineDeadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineDeadError';
  }
}

export class RequestStream implements AsyncIterableIterator<RequestDelta> {
  /** unread deltas, at most one per completion index, in arrival order */
  private readonly unread: RequestDelta[] = [];
  private waiting: ((r: IteratorResult<RequestDelta>) => void) | undefined;
  private rejectWaiting: ((err: Error) => void) | undefined;
  private failure: Error | undefined;
  private finishedCompletions = 0;
  /** closed by its consumer: it yields nothing more */
  private closed = false;

  constructor(
    readonly id: string,
    /** completions (n) the request will produce */
    readonly numCompletions: number,
    private readonly onClose: () => void,
  ) {}

  get finished(): boolean {
    return this.finishedCompletions >= this.numCompletions || this.failure !== undefined;
  }

  push(delta: RequestDelta): void {
    if (delta.finishReason || delta.error) this.finishedCompletions += delta.error ? this.numCompletions : 1;
    if (this.waiting) {
      const resolve = this.waiting;
      this.clearWaiter();
      resolve({ value: delta, done: false });
      return;
    }
    const i = this.unread.findIndex((d) => d.index === delta.index);
    if (i < 0) this.unread.push(delta);
    else this.unread[i] = mergeDeltas(this.unread[i]!, delta);
  }

  fail(err: Error): void {
    this.failure = err;
    if (this.rejectWaiting) {
      const reject = this.rejectWaiting;
      this.clearWaiter();
      reject(err);
    }
  }

  next(): Promise<IteratorResult<RequestDelta>> {
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
    const delta = this.unread.shift();
    if (delta) return Promise.resolve({ value: delta, done: false });
    if (this.failure) return Promise.reject(this.failure);
    if (this.finished) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.rejectWaiting = reject;
    });
  }

  /** Leaving a for-await early aborts the request. */
  return(): Promise<IteratorResult<RequestDelta>> {
    if (!this.finished && !this.closed) this.onClose();
    this.closed = true;
    this.unread.length = 0;
    // a consumer parked in next() (another task awaiting this stream) ends too
    const resolve = this.waiting;
    this.clearWaiter();
    resolve?.({ value: undefined, done: true });
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<RequestDelta> {
    return this;
  }

  private clearWaiter(): void {
    this.waiting = undefined;
    this.rejectWaiting = undefined;
  }
}

function concat<T extends Int32Array | Float32Array | Float64Array>(a: T | undefined, b: T | undefined): T | undefined {
  if (!a) return b;
  if (!b) return a;
  const out = new (a.constructor as new (n: number) => T)(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** a then b, as one delta: b's tokens after a's; first-delta facts from a, last-delta facts from b */
export function mergeDeltas(a: RequestDelta, b: RequestDelta): RequestDelta {
  return {
    ...a,
    ...b,
    tokenIds: concat(a.tokenIds, b.tokenIds)!,
    logprobs: concat(a.logprobs, b.logprobs),
    topIds: concat(a.topIds, b.topIds),
    topLogprobs: concat(a.topLogprobs, b.topLogprobs),
    times: concat(a.times, b.times)!,
    promptLogprobs: a.promptLogprobs ?? b.promptLogprobs,
    promptRanks: a.promptRanks ?? b.promptRanks,
    promptTopIds: a.promptTopIds ?? b.promptTopIds,
    promptTopLogprobs: a.promptTopLogprobs ?? b.promptTopLogprobs,
    cachedPromptTokens: a.cachedPromptTokens ?? b.cachedPromptTokens,
    newlyCachedPromptTokens: a.newlyCachedPromptTokens ?? b.newlyCachedPromptTokens,
    firstScheduledTime: a.firstScheduledTime ?? b.firstScheduledTime,
    pooled: b.pooled ?? a.pooled,
  };
}
