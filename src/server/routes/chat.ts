// POST /v1/chat/completions: the chat template applied, then a completion, streamed as
// OpenAI's chunks (a role chunk, content deltas, a finish chunk, usage, [DONE]) or whole.
import type { FastifyInstance } from 'fastify';
import { renderChat } from '../../tokenizer/chat-template.js';
import type { ChatMessage } from '../../tokenizer/chat-template.js';
import type { OpenAISampling, ServerContext } from '../context.js';
import { checkModel, requestId, resolveMaxTokens, samplingParams, stopStrings } from '../context.js';
import { toOpenAIError } from '../errors.js';
import { generate } from '../generation.js';
import type { GenerationSummary } from '../generation.js';
import { chatBody } from '../schemas.js';
import { SseWriter, disconnectSignal, runStream } from '../sse.js';
import { admit } from './admission.js';
import { chatLogprobs, usageOf } from './format.js';
import type { ChatLogprob } from './format.js';

interface ChatBody extends OpenAISampling {
  model: string;
  messages: { role: string; content: string | { type: 'text'; text: string }[]; name?: string }[];
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  stop?: string | string[] | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean | null } | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  skip_special_tokens?: boolean | null;
  add_generation_prompt?: boolean | null;
  chat_template_kwargs?: Record<string, unknown> | null;
}

export function chatMessages(messages: ChatBody['messages']): ChatMessage[] {
  return messages.map((m) => ({ role: m.role, content: typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join('') }));
}

/** The prompt ids of a chat: the rendered template carries its own BOS where the model wants one. */
export function chatPromptIds(ctx: ServerContext, messages: ChatBody['messages'], addGenerationPrompt = true, extra?: Record<string, unknown>): number[] {
  const text = renderChat(ctx.tokenizer, chatMessages(messages), { addGenerationPrompt, ...(extra && { extra }) });
  return ctx.tokenizer.encode(text, { addSpecial: false, parseSpecial: true });
}

export function chatRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.post<{ Body: ChatBody }>('/v1/chat/completions', { schema: { body: chatBody } }, async (req, reply) => {
    const body = req.body;
    checkModel(ctx, body.model);
    const promptIds = chatPromptIds(ctx, body.messages, body.add_generation_prompt ?? true, body.chat_template_kwargs ?? undefined);
    const maxTokens = resolveMaxTokens(ctx, promptIds.length, body.max_completion_tokens ?? body.max_tokens);
    const logprobs = body.logprobs ? (body.top_logprobs ?? 0) : null;
    const id = requestId('chatcmpl');
    const created = Math.floor(Date.now() / 1000);
    const n = body.n ?? 1;
    const release = admit(ctx);
    const summary: GenerationSummary = { promptTokens: 0, completionTokens: 0, cachedTokens: 0, firstScheduledTime: undefined };
    const events = generate(
      ctx.engine,
      ctx.tokenizer,
      {
        id,
        promptIds,
        params: samplingParams(body, maxTokens, logprobs),
        stop: stopStrings(body.stop),
        skipSpecialTokens: body.skip_special_tokens ?? true,
        signal: disconnectSignal(reply),
      },
      summary,
      ctx.metrics.observer(),
    );
    const base = { id, object: 'chat.completion.chunk', created, model: body.model };
    try {
      if (body.stream) {
        const sse = new SseWriter(reply, ctx.options.slowClientTimeoutMs);
        await runStream(
          sse,
          async () => {
            for (let index = 0; index < n; index++) {
              await sse.send({ ...base, choices: [{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] });
            }
            for await (const e of events) {
              const lp = logprobs !== null && e.logprobs ? { content: chatLogprobs(ctx.tokenizer, e.logprobs) } : null;
              if (e.text.length > 0 || lp) {
                await sse.send({ ...base, choices: [{ index: e.index, delta: { content: e.text }, logprobs: lp, finish_reason: null }] });
              }
              if (e.finishReason) {
                await sse.send({ ...base, choices: [{ index: e.index, delta: {}, logprobs: null, finish_reason: e.finishReason, stop_reason: e.stopReason ?? null }] });
              }
            }
            if (body.stream_options?.include_usage) await sse.send({ ...base, choices: [], usage: usageOf([summary]) });
          },
          (err) => toOpenAIError(err).body,
        );
        return reply;
      }
      const choices = Array.from({ length: n }, (_, index) => ({
        index,
        message: { role: 'assistant', content: '' },
        logprobs: logprobs !== null ? { content: [] as ChatLogprob[] } : null,
        finish_reason: null as string | null,
        stop_reason: null as string | number | null,
      }));
      for await (const e of events) {
        const c = choices[e.index]!;
        c.message.content += e.text;
        if (c.logprobs && e.logprobs) c.logprobs.content.push(...chatLogprobs(ctx.tokenizer, e.logprobs));
        c.finish_reason = e.finishReason ?? c.finish_reason;
        c.stop_reason = e.stopReason ?? c.stop_reason;
      }
      return { id, object: 'chat.completion', created, model: body.model, choices, usage: usageOf([summary]) };
    } finally {
      release();
    }
  });
}
