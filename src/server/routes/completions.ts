// POST /v1/completions: OpenAI's (legacy) text completions with vLLM's extra fields,
// streaming or not. The request is resolved completely before a byte is written.
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { toVllmError } from '../errors.js';
import type { CompletionEvent, GenerationSummary } from '../../pipeline/generate.js';
import { completionsSpec } from '../openai-request.js';
import type { CompletionsBody } from '../openai-request.js';
import { resolveRequest } from '../../pipeline/request.js';
import { completionsBody } from '../schemas.js';
import { SseWriter, disconnectSignal, runStream } from '../sse.js';
import { admit } from './admission.js';
import { appendLogprobs, completionLogprobs, promptCompletionLogprobs, usageOf, usageSoFar, vllmPromptLogprobs } from './format.js';
import type { CompletionLogprobs } from './format.js';
import { newSummary, runAll } from './run.js';

export function completionsRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.post<{ Body: CompletionsBody }>('/v1/completions', { schema: { body: completionsBody } }, async (req, reply) => {
    const body = req.body;
    const model = body.model ?? ctx.options.servedModelName; // optional, as in vLLM
    const r = await resolveRequest(ctx, completionsSpec(ctx, body));
    const { id, prompts } = r;
    const created = Math.floor(Date.now() / 1000);
    const n = prompts[0]!.params.n;
    const topN = body.logprobs ?? null;
    const release = admit(ctx, reply, r.prompts);
    const summaries: GenerationSummary[] = prompts.map(newSummary);
    const events = runAll(ctx, r, disconnectSignal(reply), summaries);
    const choiceIndex = (prompt: number, e: CompletionEvent): number => prompt * n + e.index;
    const logprobsOf = (e: CompletionEvent, offset: number): CompletionLogprobs | null =>
      topN !== null && e.logprobs ? completionLogprobs(ctx.tokenizer, e.logprobs, offset, topN) : null;
    const tokenIds = body.return_token_ids === true;
    // vLLM: with include_usage and continuous_usage_stats, every chunk carries the usage so far
    const continuous = body.stream_options?.include_usage === true && body.stream_options.continuous_usage_stats === true;
    const tokensSoFar: number[] = [];
    try {
      if (body.stream) {
        const sse = new SseWriter(reply, ctx.options.slowClientTimeoutMs);
        const offsets = new Map<number, number>();
        await runStream(
          sse,
          async () => {
            const announced = new Set<number>();
            const announce = async (prompt: number): Promise<void> => {
              if (announced.has(prompt)) return;
              announced.add(prompt);
              const p = prompts[prompt]!;
              for (let k = 0; k < n; k++) {
                if (body.echo || tokenIds) await sse.send(chunk(prompt * n + k, body.echo ? p.text : '', null, undefined, tokenIds ? { prompt_token_ids: [...p.ids] } : {}));
              }
            };
            for await (const [prompt, e] of events) {
              await announce(prompt);
              const index = choiceIndex(prompt, e);
              const offset = offsets.get(index) ?? 0;
              offsets.set(index, offset + e.text.length);
              tokensSoFar[index] = (tokensSoFar[index] ?? 0) + e.tokenIds.length;
              await sse.send(chunk(index, e.text, logprobsOf(e, offset), e, tokenIds ? { token_ids: e.tokenIds } : {}));
            }
            if (body.stream_options?.include_usage) {
              await sse.send({ id, object: 'text_completion', created, model, choices: [], usage: usageOf(summaries) });
            }
          },
          toVllmError,
        );
        return reply;
      }
      interface Choice {
        text: string;
        logprobs: CompletionLogprobs | null;
        finish_reason: string | null;
        stop_reason: string | number | null;
        token_ids: number[] | null;
        prompt_logprobs: unknown;
        prompt_token_ids: number[] | null;
        routed_experts: null;
      }
      const choices = new Map<number, Choice>();
      for await (const [prompt, e] of events) {
        const index = choiceIndex(prompt, e);
        const p = prompts[prompt]!;
        const c: Choice = choices.get(index) ?? {
          text: body.echo ? p.text : '',
          logprobs: body.echo && topN !== null ? promptCompletionLogprobs(ctx.tokenizer, p.ids, summaries[prompt]!, topN) : null,
          finish_reason: null,
          stop_reason: null,
          // vLLM's CompletionResponseChoice: null where not asked for
          token_ids: tokenIds ? [] : null,
          prompt_logprobs: body.prompt_logprobs != null ? vllmPromptLogprobs(ctx.tokenizer, p.ids, summaries[prompt]!) : null,
          prompt_token_ids: tokenIds ? [...p.ids] : null,
          routed_experts: null,
        };
        const lp = logprobsOf(e, c.text.length);
        if (lp) c.logprobs = c.logprobs ? appendLogprobs(c.logprobs, lp) : lp;
        c.text += e.text;
        c.token_ids?.push(...e.tokenIds);
        c.finish_reason = e.finishReason ?? c.finish_reason;
        c.stop_reason = e.stopReason ?? c.stop_reason;
        choices.set(index, c);
      }
      const list = [...choices.entries()].sort((a, b) => a[0] - b[0]).map(([index, c]) => ({ index, ...c }));
      // vLLM's CompletionResponse: every field, null where it has none
      return { id, object: 'text_completion', created, model, choices: list, service_tier: null, system_fingerprint: null, usage: usageOf(summaries), kv_transfer_params: null, ec_transfer_params: null, metrics: null };
    } finally {
      release();
    }

    function chunk(index: number, text: string, logprobs: CompletionLogprobs | null, e?: CompletionEvent, extra: object = {}): object {
      return {
        id,
        object: 'text_completion',
        created,
        model,
        choices: [{ index, text, logprobs, finish_reason: e?.finishReason ?? null, stop_reason: e?.stopReason ?? null, ...extra }],
        ...(continuous && { usage: usageSoFar(summaries[Math.floor(index / n)]!, tokensSoFar[index] ?? 0) }),
      };
    }
  });
}
