// POST /v1/completions: OpenAI's (legacy) text completions, streaming or not.
import type { FastifyInstance } from 'fastify';
import type { ServerContext, OpenAISampling } from '../context.js';
import { checkModel, checkTokenIds, requestId, resolveMaxTokens, samplingParams, stopStrings } from '../context.js';
import { HttpError, toOpenAIError } from '../errors.js';
import { generate } from '../generation.js';
import type { CompletionEvent, GenerationSummary } from '../generation.js';
import { mergeAsync } from '../merge.js';
import { completionsBody } from '../schemas.js';
import { SseWriter, disconnectSignal, runStream } from '../sse.js';
import { completionLogprobs, promptCompletionLogprobs, usageOf, vllmPromptLogprobs } from './format.js';
import type { CompletionLogprobs } from './format.js';
import { admit } from './admission.js';

interface CompletionsBody extends OpenAISampling {
  model: string;
  prompt: string | string[] | number[] | number[][];
  max_tokens?: number | null;
  stop?: string | string[] | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean | null } | null;
  echo?: boolean | null;
  logprobs?: number | null;
  best_of?: number | null;
  suffix?: string | null;
  prompt_logprobs?: number | null;
  skip_special_tokens?: boolean | null;
}

/** OpenAI's default max_tokens for completions */
const DEFAULT_MAX_TOKENS = 16;

export function completionsRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.post<{ Body: CompletionsBody }>('/v1/completions', { schema: { body: completionsBody } }, async (req, reply) => {
    const body = req.body;
    checkModel(ctx, body.model);
    if (body.suffix) throw new HttpError(400, 'suffix is not supported', 'invalid_request_error', 'suffix');
    if (body.best_of != null && body.best_of !== (body.n ?? 1)) throw new HttpError(400, 'best_of other than n is not supported', 'invalid_request_error', 'best_of');
    const prompts = normalizePrompts(body.prompt).map((p) => {
      const ids = typeof p === 'string' ? ctx.tokenizer.encode(p, { addSpecial: true }) : p;
      checkTokenIds(ctx, ids, 'prompt');
      return { ids, text: typeof p === 'string' ? p : ctx.tokenizer.decode(p, { skipSpecial: false }) };
    });
    const maxTokens = Math.min(...prompts.map((p) => resolveMaxTokens(ctx, p.ids.length, body.max_tokens, DEFAULT_MAX_TOKENS)));
    // echo with logprobs reports the prompt's tokens too, as OpenAI's API does
    const promptLogprobsWanted = body.prompt_logprobs ?? (body.echo && body.logprobs != null ? body.logprobs : null);
    const id = requestId('cmpl');
    const created = Math.floor(Date.now() / 1000);
    const n = body.n ?? 1;
    const signal = disconnectSignal(reply);
    const release = admit(ctx);
    const summaries: GenerationSummary[] = prompts.map(() => ({ promptTokens: 0, completionTokens: 0, cachedTokens: 0, firstScheduledTime: undefined }));
    const events = mergeAsync(
      prompts.map((p, i) =>
        tagged(
          i,
          generate(
            ctx.engine,
            ctx.tokenizer,
            {
              id: prompts.length > 1 ? `${id}-${i}` : id,
              promptIds: p.ids,
              params: { ...samplingParams(body, maxTokens, body.logprobs ?? null), promptLogprobs: promptLogprobsWanted },
              stop: stopStrings(body.stop),
              skipSpecialTokens: body.skip_special_tokens ?? true,
              signal,
            },
            summaries[i]!,
            ctx.metrics.observer(),
          ),
        ),
      ),
    );
    const choiceIndex = (prompt: number, e: CompletionEvent): number => prompt * n + e.index;
    const logprobsOf = (e: CompletionEvent, offset: number): CompletionLogprobs | null =>
      body.logprobs != null && e.logprobs ? completionLogprobs(ctx.tokenizer, e.logprobs, offset) : null;
    try {
      if (body.stream) {
        const sse = new SseWriter(reply, ctx.options.slowClientTimeoutMs);
        const offsets = new Map<number, number>();
        await runStream(
          sse,
          async () => {
            if (body.echo) for (const [i, p] of prompts.entries()) for (let k = 0; k < n; k++) await sse.send(chunk(i * n + k, p.text, null));
            for await (const [prompt, e] of events) {
              const index = choiceIndex(prompt, e);
              const offset = offsets.get(index) ?? 0;
              offsets.set(index, offset + e.text.length);
              await sse.send(chunk(index, e.text, logprobsOf(e, offset), e));
            }
            if (body.stream_options?.include_usage) {
              await sse.send({ id, object: 'text_completion', created, model: body.model, choices: [], usage: usageOf(summaries) });
            }
          },
          (err) => toOpenAIError(err).body,
        );
        return reply;
      }
      const choices = new Map<number, { text: string; logprobs: CompletionLogprobs | null; finish_reason: string | null; stop_reason: string | number | null; prompt_logprobs?: unknown }>();
      for await (const [prompt, e] of events) {
        const index = choiceIndex(prompt, e);
        const c = choices.get(index) ?? {
          text: body.echo ? prompts[prompt]!.text : '',
          logprobs: body.echo && body.logprobs != null ? promptCompletionLogprobs(ctx.tokenizer, prompts[prompt]!.ids, summaries[prompt]!) : null,
          finish_reason: null,
          stop_reason: null,
          ...(body.prompt_logprobs != null && { prompt_logprobs: vllmPromptLogprobs(ctx.tokenizer, prompts[prompt]!.ids, summaries[prompt]!) }),
        };
        const lp = logprobsOf(e, c.text.length);
        if (lp) c.logprobs = c.logprobs ? appendLogprobs(c.logprobs, lp) : lp;
        c.text += e.text;
        c.finish_reason = e.finishReason ?? c.finish_reason;
        c.stop_reason = e.stopReason ?? c.stop_reason;
        choices.set(index, c);
      }
      const list = [...choices.entries()].sort((a, b) => a[0] - b[0]).map(([index, c]) => ({ index, ...c }));
      return { id, object: 'text_completion', created, model: body.model, choices: list, usage: usageOf(summaries) };
    } finally {
      release();
    }

    function chunk(index: number, text: string, logprobs: CompletionLogprobs | null, e?: CompletionEvent): object {
      return {
        id,
        object: 'text_completion',
        created,
        model: body.model,
        choices: [{ index, text, logprobs, finish_reason: e?.finishReason ?? null, stop_reason: e?.stopReason ?? null }],
      };
    }
  });
}

async function* tagged<T>(tag: number, source: AsyncIterable<T>): AsyncGenerator<[number, T]> {
  for await (const value of source) yield [tag, value];
}

function normalizePrompts(prompt: CompletionsBody['prompt']): (string | number[])[] {
  if (typeof prompt === 'string') return [prompt];
  if (prompt.length > 0 && typeof prompt[0] === 'number') return [prompt as number[]];
  return prompt as (string | number[])[];
}

function appendLogprobs(a: CompletionLogprobs, b: CompletionLogprobs): CompletionLogprobs {
  return {
    tokens: [...a.tokens, ...b.tokens],
    token_logprobs: [...a.token_logprobs, ...b.token_logprobs],
    top_logprobs: [...a.top_logprobs, ...b.top_logprobs],
    text_offset: [...a.text_offset, ...b.text_offset],
  };
}
