// OpenAI's Responses API: POST /v1/responses (whole or streamed), GET and DELETE
// /v1/responses/{id}, POST /v1/responses/input_tokens, POST /v1/responses/compact. The input
// items become the chat /v1/chat/completions would render (responses-request.ts), run through
// the one pipeline; the output (reasoning, text with its logprobs when asked, function and
// custom tool calls: a ChatOutput's split) comes back as output items, streamed as the spec's
// events with an increasing sequence_number (responses-output.ts). A final compaction_trigger
// item, and /compact, make the output one compaction item (responses-compaction.ts). Stored
// responses (store, default true) serve GET and previous_response_id, in memory with a bound
// (responses-store.ts).
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ContextLengthExceededError } from '../../errors.js';
import { ChatOutput } from '../../pipeline/chat-output.js';
import type { ChatOutputConfig } from '../../pipeline/chat-output.js';
import { resolveRequest } from '../../pipeline/request.js';
import type { ResolvedRequest } from '../../pipeline/request.js';
import type { CompletionEvent, GenerationSummary } from '../../pipeline/generate.js';
import type { ServerContext } from '../context.js';
import { HttpError, toOpenAIError, toVllmError } from '../errors.js';
import { compactionContent } from '../responses-compaction.js';
import { inputItems, responsesSpec } from '../responses-request.js';
import type { Conversation, InputItem, ResponsesBody, ResponsesPlan } from '../responses-request.js';
import { ResponseOutput, itemId } from '../responses-output.js';
import type { OutputItem, OutputLogprob, StreamEvent } from '../responses-output.js';
import { ResponseStore } from '../responses-store.js';
import type { ToolKinds } from '../responses-tools.js';
import { ClientGoneError, SseWriter, disconnectSignal } from '../sse.js';
import { admit } from './admission.js';
import { chatLogprobs } from './format.js';
import { newSummary, runPrompt } from './run.js';

const body = {
  type: 'object',
  required: ['model'],
  properties: {
    model: { type: 'string' },
    input: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }] },
    instructions: { type: ['string', 'null'] },
    previous_response_id: { type: ['string', 'null'] },
    max_output_tokens: { type: ['integer', 'null'], minimum: 1 },
    stream: { type: ['boolean', 'null'] },
    store: { type: ['boolean', 'null'] },
    tools: { type: ['array', 'null'], items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } } },
  },
} as const;

export function responsesRoute(app: FastifyInstance, ctx: ServerContext, store = new ResponseStore()): void {
  app.post<{ Body: ResponsesBody }>('/v1/responses', { schema: { body } }, async (req, reply) => {
    const b = req.body;
    const history = previous(store, b.previous_response_id);
    const plan = await responsesSpec(ctx, b, history);
    const r = await resolveResponses(ctx, plan, b);
    const chat = new ChatOutput(outputConfig(ctx, r, plan));
    const logprobs = (e: CompletionEvent): OutputLogprob[] => (r.prompts[0]!.params.logprobs !== null && e.logprobs ? chatLogprobs(ctx.tokenizer, e.logprobs) : []);
    /** a compaction's summary: the answer's text, reasoning left out */
    let summary = '';
    const take = (out: ResponseOutput, text: string, lps: OutputLogprob[] = []): void => {
      const d = chat.push(text);
      if (plan.compaction) summary += d.content;
      else out.push(d, lps);
    };
    const release = admit(ctx, reply, r.prompts);
    const counts = newSummary();
    const created = Math.floor(Date.now() / 1000);
    const events = runPrompt(ctx, r, 0, disconnectSignal(reply), counts);
    const shell = (status: string, output: OutputItem[]): Record<string, unknown> => responseObject(r.id, created, b, status, output);
    const finish = async (out: ResponseOutput, reason: string | null): Promise<Record<string, unknown>> => {
      const end = chat.finish(reason);
      const complete = end.finishReason !== 'length' && end.finishReason !== 'abort';
      if (plan.compaction) out.compaction(compactionContent(summary + end.content));
      else out.finish(end, complete);
      // cut by max_output_tokens: incomplete, with that reason; aborted (client gone, /abort_request): cancelled, as vLLM
      const response = shell(complete ? 'completed' : end.finishReason === 'length' ? 'incomplete' : 'cancelled', out.items);
      if (end.finishReason === 'length') response.incomplete_details = { reason: 'max_output_tokens' };
      response.usage = await usage(ctx, counts, out.items);
      if (b.store !== false) store.put(r.id, response, [...history, ...plan.items, ...out.items.map(asInput)]);
      return response;
    };
    try {
      if (!b.stream) {
        const out = new ResponseOutput(undefined, plan.toolKinds);
        let reason: string | null = null;
        let text = '';
        for await (const e of events) {
          // with logprobs, the text goes to the output token by token, so each lands on its text
          const lps = logprobs(e);
          text += e.text;
          if (lps.length > 0) {
            take(out, text, lps);
            text = '';
          }
          reason = e.finishReason ?? reason;
        }
        take(out, text);
        return await finish(out, reason);
      }
      await stream(ctx, reply, plan.toolKinds, async (out, flush) => {
        // response.created waits for the engine's first word, so a refusal is still a plain HTTP error
        let started = false;
        const begin = (): void => {
          if (started) return;
          started = true;
          out.event('response.created', { response: shell('in_progress', []) });
          out.event('response.in_progress', { response: shell('in_progress', []) });
        };
        let reason: string | null = null;
        for await (const e of events) {
          begin();
          take(out, e.text, logprobs(e));
          reason = e.finishReason ?? reason;
          await flush();
        }
        begin();
        const response = await finish(out, reason);
        // the spec has no terminal event for a cancelled response: response.incomplete carries it
        out.event(response.status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
      }, (items, error) => ({ ...shell('failed', items), error }));
      return reply;
    } finally {
      release();
    }
  });

  app.post<{ Body: ResponsesBody }>('/v1/responses/compact', { schema: { body: compactBody } }, async (req, reply) => {
    const b = req.body;
    const history = previous(store, b.previous_response_id);
    const given = inputItems(b.input);
    // what else the conversation was run with (tools, reasoning: Codex's CompactionInput sends them) renders as it did, so its prefix is cached
    const body: ResponsesBody = { ...b, input: [...given, { type: 'compaction_trigger' }], previous_response_id: null, stream: false, store: false };
    const plan = await responsesSpec(ctx, body, history, '/v1/responses/compact');
    const r = await resolveResponses(ctx, plan, body);
    const chat = new ChatOutput(outputConfig(ctx, r, plan));
    const release = admit(ctx, reply, r.prompts);
    try {
      const counts = newSummary();
      let text = '';
      let reason: string | null = null;
      for await (const e of runPrompt(ctx, r, 0, disconnectSignal(reply), counts)) {
        text += e.text;
        reason = e.finishReason ?? reason;
      }
      const d = chat.push(text);
      const end = chat.finish(reason);
      const compaction = { type: 'compaction', id: itemId('cmp'), encrypted_content: compactionContent(d.content + end.content) };
      // "all user messages, followed by a single compaction item" (the SDK's CompactedResponse)
      const users = [...history, ...given].filter((i) => (i.type ?? 'message') === 'message' && i.role === 'user').map((i) => ({ type: 'message', id: i.id ?? itemId('msg'), role: 'user', status: 'completed', content: typeof i.content === 'string' ? [{ type: 'input_text', text: i.content }] : (i.content ?? []) }));
      return { id: r.id, object: 'response.compaction', created_at: Math.floor(Date.now() / 1000), output: [...users, compaction], usage: await usage(ctx, counts, []) };
    } finally {
      release();
    }
  });

  app.post<{ Body: ResponsesBody }>('/v1/responses/input_tokens', async (req) => {
    const b = { ...req.body, model: req.body.model ?? ctx.options.servedModelName };
    const plan = await responsesSpec(ctx, b, previous(store, b.previous_response_id), '/v1/responses/input_tokens');
    const r = await resolveRequest(ctx, { ...plan.spec, maxTokens: null });
    return { object: 'response.input_tokens', input_tokens: r.prompts[0]!.ids.length };
  });

  app.get<{ Params: { id: string } }>('/v1/responses/:id', async (req) => {
    const e = store.get(req.params.id);
    if (!e) throw notFound(req.params.id);
    return e.response;
  });

  app.delete<{ Params: { id: string } }>('/v1/responses/:id', async (req) => {
    if (!store.delete(req.params.id)) throw notFound(req.params.id);
    return { id: req.params.id, object: 'response.deleted', deleted: true };
  });
}

const compactBody = { ...body, properties: { model: body.properties.model, input: body.properties.input, instructions: body.properties.instructions, previous_response_id: body.properties.previous_response_id, max_output_tokens: body.properties.max_output_tokens } } as const;

/**
 * The request resolved. A compaction with no max_output_tokens asks for a bounded summary;
 * when the context has less left than that bound, it gets what is left (as a reply does).
 */
async function resolveResponses(ctx: ServerContext, plan: ResponsesPlan, b: ResponsesBody): Promise<ResolvedRequest> {
  try {
    return await resolveRequest(ctx, plan.spec);
  } catch (err) {
    if (!(plan.compaction && b.max_output_tokens == null && err instanceof ContextLengthExceededError && err.param === 'max_output_tokens')) throw err;
    return resolveRequest(ctx, { ...plan.spec, maxTokens: null });
  }
}

const notFound = (id: string): HttpError => new HttpError(404, `Response with id '${id}' not found.`, 'invalid_request_error', 'response_id', 'not_found');

/** the previous response's conversation; an unknown id is a 400 naming the field (OpenAI's answer) */
function previous(store: ResponseStore, id: string | null | undefined): Conversation {
  if (id == null) return [];
  const e = store.get(id);
  if (!e) throw new HttpError(400, `Previous response with id '${id}' not found.`, 'invalid_request_error', 'previous_response_id', 'previous_response_not_found');
  return e.conversation;
}

function outputConfig(ctx: ServerContext, r: ResolvedRequest, plan: ResponsesPlan): ChatOutputConfig {
  const prompt = plan.spec.prompts[0];
  const kwargs = prompt && typeof prompt === 'object' && 'templateVars' in prompt ? prompt.templateVars : undefined;
  const tools = r.tools;
  return { reasoningParser: r.reasoning?.parser, reasoningEnded: r.reasoning?.ended, chatTemplateKwargs: kwargs, toolParser: tools?.parser, forcedTools: tools?.forced?.tools, parallelToolCalls: tools?.parallel ?? true };
}

/** the Response object around its output (the request's settings echoed, as OpenAI's) */
function responseObject(id: string, created: number, b: ResponsesBody, status: string, output: OutputItem[]): Record<string, unknown> {
  const text = output.flatMap((i) => (i.type === 'message' ? i.content.map((c) => c.text) : [])).join('');
  return {
    id,
    object: 'response',
    created_at: created,
    status,
    error: null,
    incomplete_details: null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    model: b.model,
    output: structuredClone(output),
    output_text: text,
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    top_logprobs: b.top_logprobs ?? null,
    previous_response_id: b.previous_response_id ?? null,
    reasoning: b.reasoning ?? null,
    store: b.store ?? true,
    temperature: b.temperature ?? 1,
    text: b.text ?? { format: { type: 'text' } },
    tool_choice: b.tool_choice ?? 'auto',
    tools: b.tools ?? [],
    top_p: b.top_p ?? 1,
    truncation: b.truncation ?? 'disabled',
    usage: null,
    metadata: b.metadata ?? {},
  };
}

/** input_tokens_details.cached_tokens: the prompt tokens the engine's prefix cache held */
async function usage(ctx: ServerContext, s: GenerationSummary, output: readonly OutputItem[]): Promise<Record<string, unknown>> {
  const reasoning = output.flatMap((i) => (i.type === 'reasoning' ? i.content.map((c) => c.text) : [])).join('');
  const reasoningTokens = reasoning ? (await ctx.text.encode(reasoning, { addSpecial: false, parseSpecial: false })).length : 0;
  return {
    input_tokens: s.promptTokens,
    input_tokens_details: { cached_tokens: s.cachedTokens },
    output_tokens: s.completionTokens,
    output_tokens_details: { reasoning_tokens: Math.min(reasoningTokens, s.completionTokens) },
    total_tokens: s.promptTokens + s.completionTokens,
  };
}

/** an output item as the next turn's input item */
function asInput(item: OutputItem): InputItem {
  if (item.type === 'message') return { type: 'message', role: 'assistant', content: item.content.map((c) => ({ type: 'output_text', text: c.text })) };
  return structuredClone(item) as InputItem;
}

/**
 * A streamed response: `event: <type>` + `data: <json>` per event (no [DONE], as OpenAI's).
 * A failure before the first event is a plain HTTP error; after it, an `error` event and
 * `response.failed`.
 */
async function stream(
  ctx: ServerContext,
  reply: FastifyReply,
  toolKinds: ToolKinds,
  run: (out: ResponseOutput, flush: () => Promise<void>) => Promise<void>,
  failed: (items: OutputItem[], error: { code: string; message: string }) => Record<string, unknown>,
): Promise<void> {
  const sse = new SseWriter(reply, ctx.options.slowClientTimeoutMs);
  // events are made synchronously and written in order; the run awaits flush() so a slow client holds it back
  let chain = Promise.resolve();
  const out = new ResponseOutput((e: StreamEvent) => {
    chain = chain.then(() => sse.send(e, e.type));
  }, toolKinds);
  const flush = (): Promise<void> => chain;
  try {
    await run(out, flush);
    await chain;
  } catch (err) {
    await chain.catch(() => {});
    if (err instanceof ClientGoneError || sse.closed) return;
    const { status, body: e } = toOpenAIError(err);
    if (!sse.started) return sse.fail(status, toVllmError(err).body);
    chain = Promise.resolve();
    out.event('error', { code: e.error.code, message: e.error.message, param: e.error.param });
    out.event('response.failed', { response: failed(out.items, { code: e.error.code ?? (status >= 500 ? 'server_error' : 'invalid_request'), message: e.error.message }) });
    await chain.catch(() => {}); // the client may have left meanwhile
  } finally {
    sse.end();
  }
}
