// Anthropic's Messages API: POST /v1/messages (whole, or streamed as Anthropic's named
// events: message_start, ping, content_block_start/delta/stop per block, message_delta with
// the stop reason and usage, message_stop) and POST /v1/messages/count_tokens. The request
// goes through the one pipeline as a chat prompt; the chat's output (ChatOutput) becomes
// thinking, text and tool_use blocks. Errors are Anthropic's {"type": "error", "error"}.
// usage splits the prompt as Anthropic does: cache_read_input_tokens (the engine's prefix-cache
// hits), cache_creation_input_tokens (the full blocks it newly cached), input_tokens the rest.
import type { FastifyInstance } from 'fastify';
import { ContextLengthExceededError } from '../../errors.js';
import { ChatOutput } from '../../pipeline/chat-output.js';
import type { ChatDelta, ToolCallDelta } from '../../pipeline/chat-output.js';
import type { CompletionEvent, GenerationSummary } from '../../pipeline/generate.js';
import { renderChatPrompt } from '../../pipeline/prompt.js';
import { resolveRequest } from '../../pipeline/request.js';
import type { ResolvedRequest } from '../../pipeline/request.js';
import type { ServerContext } from '../context.js';
import { checkModel } from '../context.js';
import { toAnthropicError } from '../errors.js';
import { anthropicPrompt, checkVersionFields, countTokensVars, messagesOutputConfig, messagesSpec, messagesSpecOf } from '../anthropic-request.js';
import { countTokensBody, messagesBody } from '../anthropic-body.js';
import type { AnthropicBody } from '../anthropic-body.js';
import { ClientGoneError, SseWriter, disconnectSignal } from '../sse.js';
import { admit } from './admission.js';
import { newSummary, runPrompt } from './run.js';

type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'model_context_window_exceeded';

/** Anthropic's stop reason (and the matched stop sequence) from the chat's finish */
function stopOf(finish: string | null, stopReason: string | number | undefined, sequences: readonly string[], clamped: boolean): { stop_reason: StopReason; stop_sequence: string | null } {
  if (finish === 'tool_calls') return { stop_reason: 'tool_use', stop_sequence: null };
  if (finish === 'length') return { stop_reason: clamped ? 'model_context_window_exceeded' : 'max_tokens', stop_sequence: null };
  if (typeof stopReason === 'string' && sequences.includes(stopReason)) return { stop_reason: 'stop_sequence', stop_sequence: stopReason };
  return { stop_reason: 'end_turn', stop_sequence: null };
}

/**
 * Anthropic's usage: the prompt split three ways, as its total is their sum. Read: tokens the
 * engine's prefix cache served. Creation: tokens this prompt newly wrote into the cache, as the
 * engine counts them: its full blocks past the hit whose content was not cached yet (not the
 * partial last block, not a block computed again that was cached before, as the last block of a
 * prompt of whole blocks is: a hit always leaves a token to compute; none with prefix caching off).
 * Input: the rest.
 */
export function anthropicUsage(s: GenerationSummary, promptTokens: number) {
  const prompt = s.promptTokens || promptTokens;
  const read = Math.min(s.cachedTokens, prompt);
  const creation = Math.min(s.newlyCachedTokens, prompt - read);
  return { input_tokens: prompt - read - creation, cache_creation_input_tokens: creation, cache_read_input_tokens: read, output_tokens: s.completionTokens };
}

/** toolu_ ids, as Anthropic's (the pipeline makes OpenAI's call_ ones) */
const toolUseId = (id: string): string => id.replace(/^call_/, 'toolu_');

function parseInput(args: string): unknown {
  try {
    const v: unknown = JSON.parse(args);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

type BlockKind = 'thinking' | 'text' | 'tool_use';

/** Content blocks as a stream: one open block at a time, a new kind closes the open one. */
class BlockStream {
  private index = -1;
  private open: BlockKind | undefined;

  constructor(private readonly send: (event: string, data: object) => Promise<void>) {}

  private async start(kind: BlockKind, block: object): Promise<void> {
    await this.close();
    this.index++;
    this.open = kind;
    await this.send('content_block_start', { type: 'content_block_start', index: this.index, content_block: block });
  }

  private async delta(delta: object): Promise<void> {
    await this.send('content_block_delta', { type: 'content_block_delta', index: this.index, delta });
  }

  async close(): Promise<void> {
    if (this.open === undefined) return;
    this.open = undefined;
    await this.send('content_block_stop', { type: 'content_block_stop', index: this.index });
  }

  async push(d: Pick<ChatDelta, 'reasoning' | 'content' | 'toolCallDeltas'>): Promise<void> {
    if (d.reasoning) {
      if (this.open !== 'thinking') await this.start('thinking', { type: 'thinking', thinking: '', signature: '' });
      await this.delta({ type: 'thinking_delta', thinking: d.reasoning });
    }
    if (d.content) {
      if (this.open !== 'text') await this.start('text', { type: 'text', text: '' });
      await this.delta({ type: 'text_delta', text: d.content });
    }
    for (const c of d.toolCallDeltas) await this.toolDelta(c);
  }

  private async toolDelta(c: ToolCallDelta): Promise<void> {
    if (c.id !== undefined || this.open !== 'tool_use') {
      await this.start('tool_use', { type: 'tool_use', id: toolUseId(c.id ?? ''), name: c.function.name ?? '', input: {} });
    }
    if (c.function.arguments) await this.delta({ type: 'input_json_delta', partial_json: c.function.arguments });
  }
}

async function stream(ctx: ServerContext, sse: SseWriter, body: AnthropicBody, r: ResolvedRequest, events: AsyncIterable<CompletionEvent>, summary: GenerationSummary, clamped: boolean): Promise<void> {
  const send = (event: string, data: object): Promise<void> => sse.send(data, event);
  const out = new ChatOutput(messagesOutputConfig(ctx, body, r));
  const blocks = new BlockStream(send);
  const prompt = r.prompts[0]!;
  let first = true;
  for await (const e of events) {
    if (first) {
      first = false;
      const message = { id: messageId(r), type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { ...anthropicUsage(summary, prompt.ids.length), output_tokens: 0 } };
      await send('message_start', { type: 'message_start', message });
      await send('ping', { type: 'ping' });
    }
    await blocks.push(out.push(e.text));
    if (e.finishReason) {
      const end = out.finish(e.finishReason);
      await blocks.push(end);
      await blocks.close();
      const stop = stopOf(end.finishReason, e.stopReason, r.stop, clamped);
      await send('message_delta', { type: 'message_delta', delta: stop, usage: anthropicUsage(summary, prompt.ids.length) });
      await send('message_stop', { type: 'message_stop' });
    }
  }
}

/**
 * The request resolved; a max_tokens beyond what the context has left is cut to it (as
 * Anthropic's API does since its context-window stop reason: Claude Code asks for 32000),
 * and the cut shows as stop_reason model_context_window_exceeded.
 */
async function resolveMessages(ctx: ServerContext, body: AnthropicBody): Promise<{ r: ResolvedRequest; clamped: boolean }> {
  const spec = await messagesSpec(ctx, body);
  try {
    return { r: await resolveRequest(ctx, spec), clamped: false };
  } catch (err) {
    if (!(err instanceof ContextLengthExceededError) || err.param !== 'max_tokens') throw err;
    return { r: await resolveRequest(ctx, { ...spec, maxTokens: null }), clamped: true };
  }
}

const messageId = (r: ResolvedRequest): string => r.id.replace(/^msg-/, 'msg_');

export function messagesRoutes(app: FastifyInstance, ctx: ServerContext): void {
  void app.register(async (api) => {
    api.setErrorHandler(async (err, _req, reply) => {
      const { status, body } = toAnthropicError(err);
      if (status >= 500) api.log.error(err);
      await reply.code(status).send(body);
    });

    api.post<{ Body: AnthropicBody }>('/v1/messages', { schema: { body: messagesBody } }, async (req, reply) => {
      const body = req.body;
      const version = req.headers['anthropic-version'];
      checkVersionFields(body, typeof version === 'string' ? version : undefined);
      const { r, clamped } = await resolveMessages(ctx, body);
      const prompt = r.prompts[0]!;
      const release = admit(ctx, reply, r.prompts);
      const summary = newSummary();
      const events = runPrompt(ctx, r, 0, disconnectSignal(reply), summary);
      try {
        if (body.stream) {
          const sse = new SseWriter(reply, ctx.options.slowClientTimeoutMs);
          try {
            await stream(ctx, sse, body, r, events, summary, clamped);
          } catch (err) {
            if (err instanceof ClientGoneError || sse.closed) return reply;
            const { status, body: error } = toAnthropicError(err);
            if (!sse.started) sse.fail(status, error);
            else await sse.send(error, 'error').catch(() => undefined);
          } finally {
            sse.end();
          }
          return reply;
        }
        let text = '';
        let finish: string | null = null;
        let stopReason: string | number | undefined;
        for await (const e of events) {
          text += e.text;
          finish = e.finishReason ?? finish;
          stopReason = e.stopReason ?? stopReason;
        }
        const out = new ChatOutput(messagesOutputConfig(ctx, body, r));
        const d = out.push(text);
        const end = out.finish(finish);
        const thinking = d.reasoning + end.reasoning;
        const content = d.content + end.content;
        const blocks: object[] = [];
        if (thinking) blocks.push({ type: 'thinking', thinking, signature: '' });
        if (content) blocks.push({ type: 'text', text: content });
        for (const c of end.toolCalls) blocks.push({ type: 'tool_use', id: toolUseId(c.id), name: c.function.name, input: parseInput(c.function.arguments) });
        return {
          id: messageId(r),
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: blocks,
          ...stopOf(end.finishReason, stopReason, r.stop, clamped),
          usage: anthropicUsage(summary, prompt.ids.length),
        };
      } finally {
        release();
      }
    });

    api.post<{ Body: AnthropicBody }>('/v1/messages/count_tokens', { schema: { body: countTokensBody } }, async (req) => {
      const body = req.body;
      checkModel(ctx, body.model);
      const p = await anthropicPrompt(ctx, body);
      // an image's tokens are the projector's to count: a prompt with images is resolved as
      // /v1/messages resolves it (which refuses it when the model reads no images)
      if ((p.images?.length ?? 0) > 0) {
        const r = await resolveRequest(ctx, { ...messagesSpecOf(body, p), maxTokens: null });
        return { input_tokens: r.prompts[0]!.ids.length };
      }
      const text = await renderChatPrompt(ctx.text, { ...p, templateVars: { ...countTokensVars(body), ...p.templateVars } });
      const ids = await ctx.text.encode(text, { addSpecial: false, parseSpecial: true });
      return { input_tokens: ids.length };
    });
  });
}
