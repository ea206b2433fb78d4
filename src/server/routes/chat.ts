// POST /v1/chat/completions: the chat template applied, then a completion, streamed as
// OpenAI's chunks (a role chunk, content deltas, a finish chunk, usage, [DONE]) or whole.
// The request is resolved completely before a byte is written; the role chunk waits for
// the engine's first word, so even an engine refusal is a plain HTTP error.
// With a reasoning parser or tools, each choice's text goes through a ChatOutput that splits
// it into reasoning_content, content and tool_calls.
import type { FastifyInstance } from 'fastify';
import { ChatOutput } from '../../pipeline/chat-output.js';
import type { ChatEnd } from '../../pipeline/chat-output.js';
import type { ServerContext } from '../context.js';
import { toVllmError } from '../errors.js';
import { chatOutputConfig, chatSpec } from '../openai-request.js';
import type { ChatBody } from '../openai-request.js';
import { resolveRequest } from '../../pipeline/request.js';
import { chatBody } from '../schemas.js';
import { SseWriter, disconnectSignal, runStream } from '../sse.js';
import { admit } from './admission.js';
import { chatLogprobs, usageOf, usageSoFar, vllmPromptLogprobs } from './format.js';
import type { ChatLogprob } from './format.js';
import { newSummary, runPrompt } from './run.js';

export function chatRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.post<{ Body: ChatBody }>('/v1/chat/completions', { schema: { body: chatBody } }, async (req, reply) => {
    const body = req.body;
    const model = body.model ?? ctx.options.servedModelName; // optional, as in vLLM
    const { spec, echoText } = await chatSpec(ctx, body);
    const r = await resolveRequest(ctx, spec);
    const output = chatOutputConfig(ctx, body, r);
    const { id } = r;
    const prompt = r.prompts[0]!;
    const wantLogprobs = prompt.params.logprobs !== null;
    const created = Math.floor(Date.now() / 1000);
    const n = prompt.params.n;
    const tokenIds = body.return_token_ids === true;
    const release = admit(ctx, reply, r.prompts);
    const summary = newSummary();
    const events = runPrompt(ctx, r, 0, disconnectSignal(reply), summary);
    const base = { id, object: 'chat.completion.chunk', created, model };
    // vLLM: with include_usage and continuous_usage_stats, every chunk carries the usage so far
    const continuous = body.stream_options?.include_usage === true && body.stream_options.continuous_usage_stats === true;
    const usage = (index: number): object => (continuous ? { usage: usageSoFar(summary, tokensSoFar[index]!) } : {});
    const tokensSoFar = Array.from({ length: n }, () => 0);
    const outputs = Array.from({ length: n }, () => new ChatOutput(output));
    const reasoning = outputs[0]!.splitsReasoning;
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
                  const role = { ...base, choices: [{ index, delta: { role: 'assistant', content: echoText }, logprobs: null, finish_reason: null }], ...usage(index) };
                  await sse.send(tokenIds ? { ...role, prompt_token_ids: [...prompt.ids] } : role);
                }
              }
              const lp = wantLogprobs && e.logprobs ? { content: chatLogprobs(ctx.tokenizer, e.logprobs) } : null;
              const out = outputs[e.index]!;
              tokensSoFar[e.index]! += e.tokenIds.length;
              const d = out.push(e.text);
              // the text first (the reasoning before a forced call's first delta), then the calls
              const text = d.content.length > 0 || d.reasoning.length > 0;
              if (text || (d.toolCallDeltas.length === 0 && (lp || (tokenIds && e.tokenIds.length > 0)))) {
                const delta = d.reasoning.length > 0 ? { reasoning_content: d.reasoning, ...(d.content && { content: d.content }) } : { content: d.content };
                await sse.send({ ...base, choices: [{ index: e.index, delta, logprobs: lp, finish_reason: null, ...(tokenIds && { token_ids: e.tokenIds }) }], ...usage(e.index) });
              }
              if (d.toolCallDeltas.length > 0) {
                const mine = text ? {} : { ...(tokenIds && { token_ids: e.tokenIds }) };
                await sse.send({ ...base, choices: [{ index: e.index, delta: { tool_calls: d.toolCallDeltas }, logprobs: text ? null : lp, finish_reason: null, ...mine }], ...usage(e.index) });
              }
              if (e.finishReason) {
                const end = out.finish(e.finishReason);
                if (end.content || end.reasoning) {
                  const delta = { ...(end.reasoning && { reasoning_content: end.reasoning }), ...(end.content && { content: end.content }) };
                  await sse.send({ ...base, choices: [{ index: e.index, delta, logprobs: null, finish_reason: null }], ...usage(e.index) });
                }
                if (end.toolCallDeltas.length > 0) {
                  await sse.send({ ...base, choices: [{ index: e.index, delta: { tool_calls: end.toolCallDeltas }, logprobs: null, finish_reason: null }], ...usage(e.index) });
                }
                await sse.send({ ...base, choices: [{ index: e.index, delta: {}, logprobs: null, finish_reason: end.finishReason, stop_reason: e.stopReason ?? null }], ...usage(e.index) });
              }
            }
            if (body.stream_options?.include_usage) await sse.send({ ...base, choices: [], usage: usageOf([summary]) });
          },
          toVllmError,
        );
        return reply;
      }
      const texts = Array.from({ length: n }, () => '');
      const choices = Array.from({ length: n }, (_, index) => ({
        index,
        // vLLM's ChatMessage: every field, null (tool_calls []) where it has none
        message: {
          role: 'assistant',
          content: echoText as string | null,
          refusal: null,
          annotations: null,
          audio: null,
          function_call: null,
          tool_calls: [],
          reasoning: null,
          reasoning_content: null,
        } as ChatMessageOut,
        logprobs: wantLogprobs ? { content: [] as ChatLogprob[] } : null,
        finish_reason: null as string | null,
        stop_reason: null as string | number | null,
        token_ids: tokenIds ? ([] as number[]) : null,
        routed_experts: null,
      }));
      for await (const e of events) {
        const c = choices[e.index]!;
        texts[e.index] += e.text;
        if (c.logprobs && e.logprobs) c.logprobs.content.push(...chatLogprobs(ctx.tokenizer, e.logprobs));
        c.token_ids?.push(...e.tokenIds);
        c.finish_reason = e.finishReason ?? c.finish_reason;
        c.stop_reason = e.stopReason ?? c.stop_reason;
      }
      choices.forEach((c, i) => {
        const out = outputs[i]!;
        const d = out.push(texts[i]!);
        const end = out.finish(c.finish_reason);
        const content = (c.message.content ?? '') + d.content + end.content;
        c.message.content = content === '' && end.toolCalls.length > 0 ? null : content;
        if (reasoning) c.message.reasoning = c.message.reasoning_content = d.reasoning + end.reasoning || null;
        if (end.toolCalls.length > 0) c.message.tool_calls = end.toolCalls;
        c.finish_reason = end.finishReason;
      });
      // vLLM's ChatCompletionResponse: every field, null where it has none
      return {
        id,
        object: 'chat.completion',
        created,
        model,
        choices,
        service_tier: null,
        system_fingerprint: null,
        usage: usageOf([summary]),
        prompt_logprobs: body.prompt_logprobs != null ? vllmPromptLogprobs(ctx.tokenizer, prompt.ids, summary) : null,
        prompt_token_ids: tokenIds ? [...prompt.ids] : null,
        prompt_text: null,
        kv_transfer_params: null,
        ec_transfer_params: null,
        metrics: null,
      };
    } finally {
      release();
    }
  });
}

interface ChatMessageOut {
  role: 'assistant';
  content: string | null;
  refusal: null;
  annotations: null;
  audio: null;
  function_call: null;
  tool_calls: ChatEnd['toolCalls'];
  reasoning: string | null;
  reasoning_content: string | null;
}
