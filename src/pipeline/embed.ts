// Embedding and rerank requests, for every caller (the server's OpenAI, Ollama and rerank
// routes, LLM, `loom embed`): inputs tokenized, checked against the context (or truncated
// as asked), sent to the engine all at once as pooling requests (so they share steps), and
// the pooled vectors cut to `dimensions` (Matryoshka models only) and L2-normalized.
import { randomUUID } from 'node:crypto';
import type { RequestDelta } from '../engine/protocol.js';
import { GREEDY } from '../engine/sampler.js';
import { ContextLengthExceededError, EngineRefusedError, InvalidArgumentError } from '../errors.js';
import type { PipelineContext } from './context.js';

/** a text, or token ids as they are */
export type EmbedInput = string | readonly number[];

export interface EmbedOptions {
  /** L2-normalize each vector; default: the model's (its Normalize module; on for GGUF files) */
  readonly normalize?: boolean;
  /** keep the first `dimensions` floats (then normalize): Matryoshka models only */
  readonly dimensions?: number;
  /** vLLM's truncate_prompt_tokens: keep the last k tokens of each input; -1 = as many as the context holds; absent = refuse longer inputs */
  readonly truncatePromptTokens?: number;
  readonly signal?: AbortSignal;
}

export interface EmbedResult {
  /** one per input, in input order */
  readonly vectors: Float32Array[];
  /** tokens of every input together */
  readonly promptTokens: number;
}

export interface RerankResult {
  /** one per document, best first: its index among the documents and its score */
  readonly results: { readonly index: number; readonly score: number }[];
  readonly promptTokens: number;
}

function poolingInfo(ctx: PipelineContext) {
  const p = ctx.engine.info.pooling;
  if (!p) throw new InvalidArgumentError('this model generates text; it does not serve embeddings or rerank (serve an embedding or rerank model, or start it with --runner pooling)', 'model');
  return p;
}

export async function embed(ctx: PipelineContext, inputs: readonly EmbedInput[], opts: EmbedOptions = {}): Promise<EmbedResult> {
  const p = poolingInfo(ctx);
  if (p.type === 'rank') throw new InvalidArgumentError('this model is a reranker: it scores query and document pairs (POST /v1/rerank), it does not embed', 'model');
  if (p.type === 'none') throw new InvalidArgumentError('this model pools nothing (pooling_type none: one vector per token), which the embeddings APIs cannot return', 'model');
  if (opts.dimensions !== undefined) checkDimensions(opts.dimensions, p.size, p.matryoshkaDimensions);
  const ids = await tokenizeAll(ctx, inputs, opts.truncatePromptTokens);
  const pooled = await poolAll(ctx, ids, opts.signal);
  const normalize = opts.normalize ?? p.normalize;
  const vectors = pooled.map((v) => {
    const cut = opts.dimensions !== undefined ? v.slice(0, opts.dimensions) : v;
    return normalize ? l2Normalize(cut) : cut;
  });
  return { vectors, promptTokens: ids.reduce((n, x) => n + x.length, 0) };
}

/**
 * Scores each document against the query. A rank model with a rerank template (Qwen3-Reranker:
 * its yes/no probabilities, the score being yes's) reads the filled template; a cross-encoder reads the pair as
 * llama-server builds it (bos, query, eos, sep, document, eos as the vocabulary adds them) and
 * its first score is the relevance (a one-label model's through a sigmoid); an embedding model scores the cosine of the two vectors
 * (vLLM's score API for embedding models).
 */
export async function rerank(ctx: PipelineContext, query: string, documents: readonly string[], opts: { readonly topN?: number; readonly signal?: AbortSignal; readonly truncatePromptTokens?: number } = {}): Promise<RerankResult> {
  const p = poolingInfo(ctx);
  if (documents.length === 0) throw new InvalidArgumentError('documents must not be empty', 'documents');
  let scores: number[];
  let promptTokens: number;
  if (p.type === 'rank') {
    const template = p.rerankTemplate;
    const queryIds = template === undefined ? await ctx.text.encode(query, { addSpecial: true }) : [];
    const pairs = await Promise.all(
      documents.map(async (d) =>
        template !== undefined
          ? // llama-server: the template filled in, special tokens parsed, none added
            ctx.text.encode(template.replaceAll('{query}', query).replaceAll('{document}', d), { addSpecial: false, parseSpecial: true })
          : [...queryIds, ...(await ctx.text.encode(d, { addSpecial: false })), ...pairEnd(ctx)],
      ),
    );
    const checked = pairs.map((ids, i) => fitContext(ctx, ids, i, opts.truncatePromptTokens, 'documents'));
    // a one-label cross-encoder's logit as a probability (vLLM, node-llama-cpp, Jina, Cohere; llama-server returns the logit)
    scores = (await poolAll(ctx, checked, opts.signal)).map((v) => (p.size === 1 ? 1 / (1 + Math.exp(-v[0]!)) : v[0]!));
    promptTokens = checked.reduce((n, x) => n + x.length, 0);
  } else {
    const { vectors, promptTokens: n } = await embed(ctx, [query, ...documents], { normalize: true, ...(opts.signal && { signal: opts.signal }), ...(opts.truncatePromptTokens !== undefined && { truncatePromptTokens: opts.truncatePromptTokens }) });
    scores = vectors.slice(1).map((v) => Math.min(1, Math.max(-1, dot(v, vectors[0]!))));
    promptTokens = n;
  }
  const ranked = scores.map((score, index) => ({ index, score })).sort((a, b) => b.score - a.score || a.index - b.index);
  return { results: opts.topN !== undefined && opts.topN > 0 ? ranked.slice(0, opts.topN) : ranked, promptTokens };
}

/** a tokenizer that adds an end-of-sequence token closes the pair with it (llama-server's format_prompt_rerank) */
function pairEnd(ctx: PipelineContext): number[] {
  const t = ctx.tokenizer as { readonly addEos?: boolean; readonly eosId?: number };
  return t.addEos === true && t.eosId !== undefined ? [t.eosId] : [];
}

function checkDimensions(dimensions: number, size: number, trained: readonly number[] | undefined): void {
  if (!trained) throw new InvalidArgumentError('this model was not trained for shorter embeddings (Matryoshka): dimensions cannot be set', 'dimensions');
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > size) throw new InvalidArgumentError(`dimensions must be an integer from 1 to ${size}`, 'dimensions');
}

async function tokenizeAll(ctx: PipelineContext, inputs: readonly EmbedInput[], truncate: number | undefined): Promise<number[][]> {
  if (inputs.length === 0) throw new InvalidArgumentError('input must not be empty', 'input');
  const vocab = ctx.engine.info.vocabSize;
  const ids = await Promise.all(
    inputs.map(async (x, i) => {
      if (typeof x === 'string') return ctx.text.encode(x, { addSpecial: true });
      for (const id of x) {
        if (!Number.isInteger(id) || id < 0 || id >= vocab) throw new InvalidArgumentError(`input[${i}] holds token id ${id}, outside the vocabulary of ${vocab}`, 'input');
      }
      return [...x];
    }),
  );
  return ids.map((x, i) => fitContext(ctx, x, i, truncate, 'input'));
}

/** an input within the context: as it is, truncated to its last tokens as asked, or refused */
function fitContext(ctx: PipelineContext, ids: number[], i: number, truncate: number | undefined, param: string): number[] {
  const max = ctx.engine.info.maxModelLen;
  if (ids.length === 0) throw new InvalidArgumentError(`${param}[${i}] is empty`, param);
  if (truncate !== undefined) {
    if (!Number.isInteger(truncate) || (truncate < 1 && truncate !== -1)) throw new InvalidArgumentError('truncate_prompt_tokens must be -1 or a positive integer', 'truncate_prompt_tokens');
    if (truncate > max) throw new InvalidArgumentError(`truncate_prompt_tokens ${truncate} is more than the model's context of ${max} tokens`, 'truncate_prompt_tokens');
    const keep = truncate === -1 ? max : truncate;
    return ids.length > keep ? ids.slice(ids.length - keep) : ids;
  }
  if (ids.length > max) throw new ContextLengthExceededError(`${param}[${i}] has ${ids.length} tokens, more than the model's context of ${max} tokens (truncate_prompt_tokens truncates it)`, param);
  return ids;
}

/** every input to the engine at once (they share steps); the pooled vectors in input order */
async function poolAll(ctx: PipelineContext, inputs: readonly number[][], signal: AbortSignal | undefined): Promise<Float32Array[]> {
  const base = `pool-${randomUUID()}`;
  const streams = inputs.map((ids, i) => {
    const id = `${base}-${i}`;
    const stream = ctx.engine.add(id, ids, GREEDY, { pool: true });
    ctx.requests.set(id, { abort: () => ctx.engine.abort(id) });
    return { id, stream };
  });
  const onAbort = (): void => {
    for (const { stream } of streams) void stream.return();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await Promise.all(
      streams.map(async ({ stream }) => {
        let last: RequestDelta | undefined;
        for await (const d of stream) {
          if (d.error) throw new EngineRefusedError(d.error);
          last = d;
        }
        if (!last?.pooled) throw new EngineRefusedError(signal?.aborted ? 'the request was aborted' : `the engine ended the input without its vector (${last?.finishReason ?? 'no output'})`);
        return last.pooled;
      }),
    );
  } catch (err) {
    onAbort();
    throw err;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    for (const { id } of streams) ctx.requests.delete(id);
  }
}

export function l2Normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  // llama.cpp's common_embd_normalize: a zero vector stays zero
  const scale = sum > 0 ? 1 / Math.sqrt(sum) : 0;
  return v.map((x) => x * scale);
}

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}
