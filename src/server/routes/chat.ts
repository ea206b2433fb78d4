// POST /v1/chat/completions: the chat template applied, then a completion, streamed as
// OpenAI's chunks (a role chunk, content deltas, a finish chunk, usage, [DONE]) or whole.
// The request is resolved completely before a byte is written; the role chunk waits for
// the engine's first word, so even an engine refusal is a plain HTTP error.
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { toOpenAIError } from '../errors.js';
import { chatSpec } from '../openai-request.js';
import type { ChatBody } from '../openai-request.js';
import { resolveRequest } from '../request.js';
import { chatBody } from '../schemas.js';
import { SseWriter, disconnectSignal, runStream } from '../sse.js';
import { admit } from './admission.js';
import { chatLogprobs, usageOf } from './format.js';
import type { ChatLogprob } from './format.js';
import { newSummary, runPrompt } from './run.js';

export function chatRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.post<{ Body: ChatBody }>('/v1/chat/completions', { schema: { body: chatBody } }, async (req, reply) => {
    const body = req.body;
    const { spec, echoText } = chatSpec(ctx, body);
    const r = await resolveRequest(ctx, spec);
    const { id } = r;
    const prompt = r.prompts[0]!;
    const wantLogprobs = prompt.params.logprobs !== null;
    const created = Math.floor(Date.now() / 1000);
    const n = prompt.params.n;
    const tokenIds = body.return_token_ids === true;
    const release = admit(ctx);
    const summary = newSummary();
    const events = runPrompt(ctx, r, 0, disconnectSignal(reply), summary);
    const base = { id, object: 'chat.completion.chunk', created, model: body.model };
    try {
      if (body.stream) {
        const sse = new SseWriter(reply, ctx.options.slowClientTimeoutMs);
        await runStream(
          sse,
          async () => {
            let first = true;
            for await (const e of events) {
              if (first) {
                first = false;
                for (let index = 0; index < n; index++) {
                  const role = { ...base, choices: [{ index, delta: { role: 'assistant', content: echoText }, logprobs: null, finish_reason: null }] };
                  await sse.send(tokenIds ? { ...role, prompt_token_ids: [...prompt.ids] } : role);
                }
              }
              const lp = wantLogprobs && e.logprobs ? { content: chatLogprobs(ctx.tokenizer, e.logprobs) } : null;
              if (e.text.length > 0 || lp || (tokenIds && e.tokenIds.length > 0)) {
                await sse.send({ ...base, choices: [{ index: e.index, delta: { content: e.text }, logprobs: lp, finish_reason: null, ...(tokenIds && { token_ids: e.tokenIds }) }] });
              }
              if (e.finishReason) {
                await sse.send({ ...base, choices: [{ index: e.index, delta: {}, logprobs: null, finish_reason: e.finishReason, stop_reason: e.stopReason ?? null }] });
              }
            }
            if (body.stream_options?.include_usage) await sse.send({ ...base, choices: [], usage: usageOf([summary]) });
          },
          toOpenAIError,
        );
        return reply;
      }
      const choices = Array.from({ length: n }, (_, index) => ({
        index,
        message: { role: 'assistant', content: echoText },
        logprobs: wantLogprobs ? { content: [] as ChatLogprob[] } : null,
        finish_reason: null as string | null,
        stop_reason: null as string | number | null,
        ...(tokenIds && { token_ids: [] as number[] }),
      }));
      for await (const e of events) {
        const c = choices[e.index]!;
        c.message.content += e.text;
        if (c.logprobs && e.logprobs) c.logprobs.content.push(...chatLogprobs(ctx.tokenizer, e.logprobs));
        c.token_ids?.push(...e.tokenIds);
        c.finish_reason = e.finishReason ?? c.finish_reason;
        c.stop_reason = e.stopReason ?? c.stop_reason;
      }
      return {
        id,
        object: 'chat.completion',
        created,
        model: body.model,
        choices,
        usage: usageOf([summary]),
        ...(tokenIds && { prompt_token_ids: [...prompt.ids] }),
      };
    } finally {
      release();
    }
  });
}
