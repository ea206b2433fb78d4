// One request's path through the engine and back: a resolved prompt in, then deltas of
// token ids → text (incremental detokenizer, stop strings with hold-back) per completion,
// as events the front doors format (the server's routes, LLM, `loom generate`). A
// stop-string hit, or every completion done, or the caller gone, aborts it in the engine.
import type { EngineClient } from '../engine/client.js';
import type { FinishReason, RequestDelta } from '../engine/protocol.js';
import type { SamplingParams } from '../engine/sampling-params.js';
import { EngineRefusedError } from '../errors.js';
import { IncrementalDetokenizer } from '../tokenizer/detokenizer.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import type { PipelineContext } from './context.js';
import type { ResolvedRequest } from './request.js';
import { StopStringMatcher } from './stop-strings.js';
import type { EngineImage } from '../engine/image-spans.js';

export interface GenerationRequest {
  /** the engine's request id */
  readonly id: string;
  readonly promptIds: readonly number[];
  /** resolved and checked (pipeline/request.ts): the engine only asserts */
  readonly params: SamplingParams;
  readonly stop: readonly string[];
  /** a matched stop string stays at the end of the text (vLLM's include_stop_str_in_output) */
  readonly includeStopStrInOutput?: boolean;
  readonly skipSpecialTokens: boolean;
  /** aborts the request (client disconnected) */
  readonly signal: AbortSignal;
  /** LMDeploy's repetition early stop: stop once the last `size` tokens have occurred `threshold` times */
  readonly repetitionNgram?: { readonly size: number; readonly threshold: number };
  /** the prompt's images (their pixels move to the engine) */
  readonly images?: readonly EngineImage[];
  /** where the running request is registered (for /abort_request) while the engine has it */
  readonly registry?: Map<string, { abort(): void }>;
}

export interface TokenLogprob {
  readonly id: number;
  readonly logprob: number;
  /** [topN] best alternatives */
  readonly top: { id: number; logprob: number }[];
}

export interface CompletionEvent {
  readonly index: number;
  /** text new in this event (may lag its tokens while a stop string or a character is incomplete) */
  readonly text: string;
  /** tokens new in this event */
  readonly tokenIds: number[];
  readonly logprobs?: TokenLogprob[];
  readonly finishReason?: 'stop' | 'length' | 'abort';
  /** the stop string or stop token id that ended it */
  readonly stopReason?: string | number;
}

export interface GenerationObserver {
  /** when the engine first scheduled the request (engine clock, ms) */
  onScheduled?(time: number): void;
  /** once per delta that carries tokens, with the engine's per-token times */
  onTokens?(times: Float64Array, first: boolean): void;
  onFinish?(reason: FinishReason, promptTokens: number, outputTokens: number): void;
}

export interface GenerationSummary {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  /** prompt tokens this request wrote into the prefix cache (full blocks that were not cached yet) */
  newlyCachedTokens: number;
  /** prompt tokens' logprobs (from the second token on), when asked: [P-1] and [P-1, topN] */
  promptLogprobs?: { logprobs: Float32Array; ranks: Int32Array; topIds: Int32Array; topLogprobs: Float32Array };
  /** engine clock of when the request was first scheduled */
  firstScheduledTime: number | undefined;
}

export const newSummary = (): GenerationSummary => ({ promptTokens: 0, completionTokens: 0, cachedTokens: 0, newlyCachedTokens: 0, firstScheduledTime: undefined });

/** The engine's id of prompt i (a single prompt keeps the request's id). */
export const engineId = (r: ResolvedRequest, i: number): string => (r.prompts.length > 1 ? `${r.id}-${i}` : r.id);

/** what a front door adds to a resolved prompt's run */
export interface RunOptions {
  readonly observer?: GenerationObserver;
  /** LMDeploy's repetition early stop */
  readonly repetitionNgram?: GenerationRequest['repetitionNgram'];
}

/** Runs prompt i of a resolved request, registered in ctx.requests while the engine has it. */
export function runPrompt(ctx: PipelineContext, r: ResolvedRequest, i: number, signal: AbortSignal, summary: GenerationSummary, opts: RunOptions = {}): AsyncGenerator<CompletionEvent> {
  const p = r.prompts[i]!;
  return generate(
    ctx.engine,
    ctx.tokenizer,
    {
      id: engineId(r, i),
      promptIds: p.ids,
      params: p.params,
      stop: r.stop,
      includeStopStrInOutput: r.includeStopStrInOutput,
      skipSpecialTokens: r.skipSpecialTokens,
      signal,
      registry: ctx.requests,
      ...(p.images && { images: p.images }),
      ...(opts.repetitionNgram && { repetitionNgram: opts.repetitionNgram }),
    },
    summary,
    opts.observer,
  );
}

class CompletionText {
  readonly detok: IncrementalDetokenizer;
  readonly stops: StopStringMatcher;
  done = false;
  tokens = 0;
  /** its finish went to the observer */
  counted = false;
  /** output ids, kept only for the repetition early stop */
  readonly output: number[] | undefined;

  constructor(
    tokenizer: Tokenizer,
    req: GenerationRequest,
    readonly includeStop: boolean,
  ) {
    this.detok = new IncrementalDetokenizer(tokenizer, { prefixIds: req.promptIds, skipSpecial: req.skipSpecialTokens });
    this.stops = new StopStringMatcher(req.stop);
    this.ngram = req.repetitionNgram;
    this.output = this.ngram ? [] : undefined;
  }

  readonly ngram: GenerationRequest['repetitionNgram'];

  /** whether the latest tokens end in an n-gram repeated `threshold` times (in the last 1024 tokens, as LMDeploy) */
  repeats(ids: readonly number[]): boolean {
    if (!this.ngram || !this.output) return false;
    const { size, threshold } = this.ngram;
    for (const id of ids) this.output.push(id);
    const out = this.output.length > 1024 ? this.output.slice(-1024) : this.output;
    if (out.length < size) return false;
    const last = out.length - size;
    let count = 0;
    for (let at = 0; at <= last; at++) {
      let same = true;
      for (let k = 0; k < size && same; k++) same = out[at + k] === out[last + k];
      if (same) count++;
    }
    return count >= threshold;
  }
}

/**
 * Runs a request; yields one event per delta per completion, the last of each with its
 * finish reason. `summary` is filled as it goes.
 */
export async function* generate(
  engine: EngineClient,
  tokenizer: Tokenizer,
  req: GenerationRequest,
  summary: GenerationSummary,
  observer: GenerationObserver = {},
): AsyncGenerator<CompletionEvent> {
  const n = req.params.n;
  const stream = engine.add(req.id, req.promptIds, req.params, req.images?.length ? { images: req.images } : undefined);
  req.registry?.set(req.id, { abort: () => engine.abort(req.id) });
  const texts = Array.from({ length: n }, () => new CompletionText(tokenizer, req, req.includeStopStrInOutput ?? false));
  let open = n;
  let firstTokens = true;
  /** refused by the engine (never ran): not a finish to count */
  let refused = false;
  const onAbort = (): void => void stream.return();
  req.signal.addEventListener('abort', onAbort, { once: true });
  summary.promptTokens = req.promptIds.length;
  try {
    for await (const delta of stream) {
      if (delta.error) {
        refused = true;
        throw new EngineRefusedError(delta.error);
      }
      const t = texts[delta.index];
      if (!t || t.done) continue;
      summary.cachedTokens = delta.cachedPromptTokens ?? summary.cachedTokens;
      summary.newlyCachedTokens = delta.newlyCachedPromptTokens ?? summary.newlyCachedTokens;
      if (delta.promptLogprobs) {
        summary.promptLogprobs = { logprobs: delta.promptLogprobs, ranks: delta.promptRanks ?? new Int32Array(delta.promptLogprobs.length), topIds: delta.promptTopIds ?? new Int32Array(0), topLogprobs: delta.promptTopLogprobs ?? new Float32Array(0) };
      }
      if (summary.firstScheduledTime === undefined && delta.firstScheduledTime !== undefined) {
        summary.firstScheduledTime = delta.firstScheduledTime;
        observer.onScheduled?.(delta.firstScheduledTime);
      }
      if (delta.tokenIds.length > 0) {
        observer.onTokens?.(delta.times, firstTokens);
        firstTokens = false;
      }
      const event = advance(t, delta);
      if (event.finishReason) {
        open--;
        summary.completionTokens += t.tokens;
        t.counted = true;
        observer.onFinish?.(event.finishReason, req.promptIds.length, t.tokens);
      }
      yield event;
      if (open === 0) break; // every completion done (a stop string may end one before the engine does)
    }
  } finally {
    // a client gone, a consumer that stopped reading, a dead engine: what did not finish
    // is an abort, counted with the tokens it had
    if (!refused) for (const t of texts) if (!t.counted) observer.onFinish?.('abort', req.promptIds.length, t.tokens);
    req.registry?.delete(req.id);
    req.signal.removeEventListener('abort', onAbort);
    await stream.return(); // no-op when the engine already finished it
  }
}

function advance(t: CompletionText, delta: RequestDelta): CompletionEvent {
  const tokenIds = [...delta.tokenIds];
  t.tokens += tokenIds.length + (delta.stopTokenId !== undefined ? 1 : 0);
  const pushed = t.stops.push(t.detok.push(tokenIds));
  let text = pushed.text;
  let finishReason: CompletionEvent['finishReason'] = delta.finishReason;
  let stopReason: string | number | undefined = delta.stopTokenId;
  if (!pushed.stopped && !finishReason && t.repeats(tokenIds)) {
    finishReason = 'stop';
    text += t.stops.push(t.detok.flush()).text + t.stops.flush();
  } else if (pushed.stopped) {
    finishReason = 'stop';
    stopReason = pushed.stop;
    if (t.includeStop) text += pushed.stop ?? '';
  } else if (finishReason) {
    const tail = t.stops.push(t.detok.flush());
    text += tail.text + (tail.stopped ? (t.includeStop ? (tail.stop ?? '') : '') : t.stops.flush());
    if (tail.stopped) {
      finishReason = 'stop';
      stopReason = tail.stop;
    }
  }
  if (finishReason) t.done = true;
  const logprobs = delta.logprobs ? tokenLogprobs(delta) : undefined;
  return {
    index: delta.index,
    text,
    tokenIds,
    ...(logprobs && { logprobs }),
    ...(finishReason && { finishReason }),
    ...(stopReason !== undefined && { stopReason }),
  };
}

function tokenLogprobs(delta: RequestDelta): TokenLogprob[] {
  const k = delta.tokenIds.length;
  const topN = k > 0 && delta.topIds ? delta.topIds.length / k : 0;
  return Array.from({ length: k }, (_, i) => ({
    id: delta.tokenIds[i]!,
    logprob: delta.logprobs![i]!,
    top: Array.from({ length: topN }, (_, j) => ({ id: delta.topIds![i * topN + j]!, logprob: delta.topLogprobs![i * topN + j]! })),
  }));
}
