// What every route needs: the engine, the tokenizer, limits and metrics.
import type { EngineClient } from '../engine/client.js';
import type { SamplingParamsInput } from '../engine/sampling-params.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { HttpError } from './errors.js';
import type { ServerMetrics } from './metrics.js';
import type { NetworkOptions } from './network.js';

export interface ServerOptions {
  /** the name clients use in `model` */
  readonly servedModelName: string;
  readonly maxModelLen: number;
  readonly apiKey?: string | undefined;
  /** requests in flight beyond which new ones get 429 */
  readonly maxPendingRequests: number;
  /** a streaming client that does not read for this long is dropped */
  readonly slowClientTimeoutMs: number;
  readonly bodyLimitBytes: number;
  /** TLS, read timeouts, header size (network.ts) */
  readonly network?: NetworkOptions | undefined;
  /** CORS origins ("*" for any); none by default */
  readonly allowedOrigins?: readonly string[] | undefined;
  /** one line per request on stderr, without its text */
  readonly logRequests?: boolean | undefined;
}

export interface ServerContext {
  readonly engine: EngineClient;
  readonly tokenizer: Tokenizer;
  readonly options: ServerOptions;
  readonly metrics: ServerMetrics;
  inFlight: number;
}

export function checkModel(ctx: ServerContext, model: string | undefined): void {
  if (model !== undefined && model !== ctx.options.servedModelName) {
    throw new HttpError(404, `The model \`${model}\` does not exist.`, 'invalid_request_error', 'model', 'model_not_found');
  }
}

/** Tokens the completion may have: the request's max, within what the context has left. */
export function resolveMaxTokens(ctx: ServerContext, promptTokens: number, requested: number | null | undefined, fallback?: number): number {
  const max = ctx.options.maxModelLen;
  if (promptTokens >= max) {
    throw new HttpError(
      400,
      `This model's maximum context length is ${max} tokens. However, your request has ${promptTokens} input tokens. Please reduce the length of the input.`,
      'invalid_request_error',
      'prompt',
      'context_length_exceeded',
    );
  }
  if (requested != null && promptTokens + requested > max) {
    throw new HttpError(
      400,
      `This model's maximum context length is ${max} tokens. However, you requested ${promptTokens + requested} tokens (${promptTokens} in the input, ${requested} in the completion). Please reduce the length of the input or completion.`,
      'invalid_request_error',
      'max_tokens',
      'context_length_exceeded',
    );
  }
  return requested ?? Math.min(fallback ?? Infinity, max - promptTokens);
}

export function checkTokenIds(ctx: ServerContext, ids: readonly number[], param: string): void {
  const bad = ids.find((id) => id >= ctx.tokenizer.vocabSize);
  if (bad !== undefined) throw new HttpError(400, `token id ${bad} is outside the vocabulary (${ctx.tokenizer.vocabSize})`, 'invalid_request_error', param);
}

/** Sampling fields as the OpenAI endpoints name them. */
export interface OpenAISampling {
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  n?: number | null;
  stop_token_ids?: number[] | null;
  seed?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  repetition_penalty?: number | null;
  logit_bias?: Record<string, number> | null;
  ignore_eos?: boolean | null;
  min_tokens?: number | null;
}

export function samplingParams(body: OpenAISampling, maxTokens: number, logprobs: number | null): SamplingParamsInput {
  const topK = body.top_k ?? 0;
  return {
    temperature: body.temperature ?? 1,
    topP: body.top_p ?? 1,
    topK: topK < 0 ? 0 : topK,
    minP: body.min_p ?? 0,
    n: body.n ?? 1,
    stopTokenIds: body.stop_token_ids ?? [],
    seed: body.seed ?? null,
    presencePenalty: body.presence_penalty ?? 0,
    frequencyPenalty: body.frequency_penalty ?? 0,
    repetitionPenalty: body.repetition_penalty ?? 1,
    logitBias: body.logit_bias ?? null,
    ignoreEos: body.ignore_eos ?? false,
    minTokens: body.min_tokens ?? 0,
    maxTokens,
    logprobs,
  };
}

export function stopStrings(stop: string | string[] | null | undefined): string[] {
  if (stop == null) return [];
  return (Array.isArray(stop) ? stop : [stop]).filter((s) => s.length > 0);
}

let counter = 0;
export function requestId(prefix: string): string {
  counter = (counter + 1) % 1e9;
  return `${prefix}-${Date.now().toString(36)}${counter.toString(36)}${Math.random().toString(36).slice(2, 8)}`;
}
