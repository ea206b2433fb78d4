// Anthropic Messages request bodies (POST /v1/messages, /v1/messages/count_tokens) as
// RequestSpecs: the conversation becomes the chat messages /v1/chat/completions would hand
// the template (text joined as OpenAI's content parts are, tool_use as tool_calls with
// object arguments, tool_result as `tool` turns), tools as OpenAI function tools, and
// tool_choice any/tool as "required"/a named function (forced by grammar). Fields Claude
// Code sends that loom has no use for (metadata, context_management, output_config's effort,
// cache_control, anthropic-beta) are accepted and ignored, as llama-server does: loom's prefix
// cache keeps every full block of every prompt without being asked, so cache_control breakpoints
// (on system, message and tool_result blocks, tools, or the whole request) change nothing.
// A tool_result with is_error reaches the model marked as an error (errorMarked).
// Rendering is stable across an agent's turns: tool arguments with their keys sorted (as chat's),
// Claude Code's billing line is left out and its tokens-left count moved after the history.
import type { GrammarSpec } from '../engine/grammar/spec.js';
import type { ChatMessage } from '../tokenizer/chat-template.js';
import { canonicalJsonValue } from '../pipeline/canonical-json.js';
import type { ChatOutputConfig } from '../pipeline/chat-output.js';
import type { ChatPrompt } from '../pipeline/prompt.js';
import { reasoningParserOf } from '../pipeline/request.js';
import type { RequestSpec, ResolvedRequest } from '../pipeline/request.js';
import type { ChatTool, ToolChoice, ToolFields } from '../pipeline/tools/request.js';
import type { ServerContext } from './context.js';
import { checkModel, imageList } from './context.js';
import { HttpError } from './errors.js';
import type { ImageList } from './image-list.js';
import type { AnthropicBlock, AnthropicBody, AnthropicTool } from './anthropic-body.js';

/**
 * Claude Code's attribution block, `x-anthropic-billing-header: cc_version=…;`: for
 * Anthropic's billing, not the model, and it may differ per request; left out.
 */
const BILLING_HEADER = 'x-anthropic-billing-header:';
/**
 * Claude Code's `<total_tokens>N tokens left</total_tokens>` (its totalTokensReminder):
 * a count that changes every turn, wherever it sits in the system prompt. It is moved out
 * of the system prompt to a system message after the conversation, so the system prompt
 * and the history before it render the same every turn and the prefix cache holds.
 */
const TOKENS_LEFT = /[ \t]*<total_tokens>[^<]*<\/total_tokens>[ \t]*\n?/g;

/** The system prompt's stable text, and its per-turn text (rendered after the conversation). */
function systemParts(system: AnthropicBody['system']): { stable: string; late: string } {
  if (system === undefined) return { stable: '', late: '' };
  const texts = (typeof system === 'string' ? [system] : system.map((b, i) => {
    if (b.type !== 'text') throw new HttpError(400, `system.${i}: only text blocks are supported, got "${b.type}"`, 'invalid_request_error', 'system');
    return b.text;
  })).filter((t) => !t.startsWith(BILLING_HEADER));
  const late: string[] = [];
  const stable = texts
    .map((t) => t.replace(TOKENS_LEFT, (m) => (late.push(m.trim()), '')))
    .filter((t) => t.trim() !== '')
    .join('\n');
  return { stable, late: late.join('\n') };
}

const unsupported = (where: string, type: string): HttpError =>
  new HttpError(400, `${where}: ${type} blocks are not supported: loom reads text and image blocks`, 'invalid_request_error', 'messages');

/** Anthropic's image media types (its API refuses others) */
const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

/** An image block as IMAGE_MARKER, its image added to `images` (base64 or URL source; Files API ids are not loom's). */
function imageMarker(b: AnthropicBlock, where: string, images: ImageList | undefined): string {
  if (!images) throw new HttpError(400, `${where}: image blocks are not accepted here`, 'invalid_request_error', 'messages');
  const src = b.source;
  const param = `${where}.source`;
  if (src?.type === 'base64') {
    if (typeof src.media_type !== 'string' || !IMAGE_TYPES.includes(src.media_type)) {
      throw new HttpError(400, `${param}.media_type: Input should be ${IMAGE_TYPES.map((t) => `'${t}'`).join(', ')}`, 'invalid_request_error', 'messages');
    }
    if (typeof src.data !== 'string') throw new HttpError(400, `${param}.data: Field required`, 'invalid_request_error', 'messages');
    return images.addBase64(src.data, param);
  }
  if (src?.type === 'url') {
    if (typeof src.url !== 'string') throw new HttpError(400, `${param}.url: Field required`, 'invalid_request_error', 'messages');
    return images.addUrl(src.url, param);
  }
  if (src?.type === 'file') throw new HttpError(400, `${param}: file sources (the Files API) are not supported: send the image as base64 or a URL`, 'invalid_request_error', 'messages');
  throw new HttpError(400, `${param}: an image source is {"type": "base64", "media_type", "data"} or {"type": "url", "url"}`, 'invalid_request_error', 'messages');
}

/** a tool_result's content as text (text blocks joined, images as markers) */
function resultText(content: AnthropicBlock['content'], where: string, images: ImageList | undefined): string {
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  return content
    .map((b, i) => {
      if (b.type === 'text') return b.text ?? '';
      if (b.type === 'image') return imageMarker(b, `${where}.content.${i}`, images);
      throw unsupported(`${where}.content.${i}`, b.type);
    })
    .join('');
}

/**
 * A failed tool's result, marked so the model reads it as a failure: chat templates render a
 * tool turn's content and nothing else (no template reads an error flag), so `is_error: true`
 * becomes an "Error: " prefix — unless the text already says so (Claude Code sends
 * `<tool_use_error>…</tool_use_error>`; Anthropic's own examples start with "Error:").
 */
export function errorMarked(text: string, isError: boolean): string {
  if (!isError || /^\s*(error\b|<tool_use_error>)/i.test(text)) return text;
  return `Error: ${text}`;
}

/** The conversation as chat messages, as /v1/chat/completions would hand them to the template (images as markers, into `images`). */
export function anthropicMessages(body: Pick<AnthropicBody, 'system' | 'messages'>, images?: ImageList): ChatMessage[] {
  const out: ChatMessage[] = [];
  const system = systemParts(body.system);
  if (system.stable) out.push({ role: 'system', content: system.stable });
  body.messages.forEach((m, i) => {
    if (typeof m.content === 'string') {
      out.push({ role: m.role, content: m.content });
      return;
    }
    let text = '';
    const calls: NonNullable<ChatMessage['tool_calls']>[number][] = [];
    m.content.forEach((b, j) => {
      const where = `messages.${i}.content.${j}`;
      switch (b.type) {
        case 'text':
          text += b.text ?? '';
          break;
        case 'image':
          text += imageMarker(b, where, images);
          break;
        case 'tool_use':
          if (m.role !== 'assistant') throw new HttpError(400, `${where}: tool_use blocks belong to assistant messages`, 'invalid_request_error', 'messages');
          calls.push({ id: b.id ?? '', type: 'function', function: { name: b.name ?? '', arguments: canonicalJsonValue(b.input ?? {}) } });
          break;
        case 'tool_result':
          if (m.role !== 'user') throw new HttpError(400, `${where}: tool_result blocks belong to user messages`, 'invalid_request_error', 'messages');
          out.push({ role: 'tool', content: errorMarked(resultText(b.content, where, images), b.is_error === true), tool_call_id: b.tool_use_id ?? '' });
          break;
        case 'thinking':
        case 'redacted_thinking':
          // earlier turns' reasoning is not part of the prompt (as templates drop reasoning_content)
          break;
        default:
          throw unsupported(where, b.type);
      }
    });
    if (text === '' && calls.length === 0 && m.content.some((b) => b.type === 'tool_result')) return;
    const msg: ChatMessage = { role: m.role, content: text };
    if (calls.length > 0) msg.tool_calls = calls;
    out.push(msg);
  });
  if (system.late) out.push({ role: 'system', content: system.late });
  return out;
}

/** Anthropic's tools as OpenAI function tools; server tools (no input_schema) are not loom's to run */
function chatTools(tools: AnthropicTool[] | undefined): ChatTool[] {
  return (tools ?? [])
    .filter((t) => t.input_schema !== undefined)
    .map((t) => ({ type: 'function', function: { name: t.name, ...(t.description !== undefined && { description: t.description }), parameters: t.input_schema!, ...(t.strict !== undefined && { strict: t.strict }) } }));
}

function toolFields(body: AnthropicBody): ToolFields {
  const tools = chatTools(body.tools);
  const c = body.tool_choice;
  let choice: ToolChoice | null = null;
  if (c?.type === 'auto') choice = 'auto';
  else if (c?.type === 'none') choice = 'none';
  else if (c?.type === 'any') choice = 'required';
  else if (c?.type === 'tool') {
    if (!c.name) throw new HttpError(400, 'tool_choice.name: Field required', 'invalid_request_error', 'tool_choice');
    choice = { type: 'function', function: { name: c.name } };
  }
  return { tools: tools.length > 0 ? tools : null, tool_choice: choice, parallel_tool_calls: c?.disable_parallel_tool_use === true ? false : null };
}

/** Template variables for thinking: a reasoning model thinks when the request asks it to. */
function thinkingVars(ctx: ServerContext, body: AnthropicBody): Record<string, unknown> {
  if (reasoningParserOf(ctx) === undefined) return {};
  const on = body.thinking !== undefined && body.thinking.type !== 'disabled';
  return { enable_thinking: on };
}

/** Anthropic's structured outputs (Claude Code asks so for its session titles): the schema as a grammar */
function outputGrammar(body: AnthropicBody): GrammarSpec | null {
  const format = body.output_config?.format ?? body.output_format;
  if (format == null) return null;
  const param = body.output_format ? 'output_format' : 'output_config.format';
  if (format.type !== 'json_schema' || format.schema === undefined) throw new HttpError(400, `${param}: only {"type": "json_schema", "schema": …} is supported`, 'invalid_request_error', param);
  return { type: 'json_schema', schema: format.schema };
}

/** The chat prompt of a Messages request (rendered by the pipeline with the tools' variables), its images decoded or fetched. */
export async function anthropicPrompt(ctx: ServerContext, body: AnthropicBody): Promise<ChatPrompt> {
  const list = imageList(ctx);
  const messages = anthropicMessages(body, list);
  const images = await list.forMessages(messages, 'messages');
  return { messages, addGenerationPrompt: true, continueFinalMessage: false, templateVars: thinkingVars(ctx, body), ...(images && { images }) };
}

export async function messagesSpec(ctx: ServerContext, body: AnthropicBody): Promise<RequestSpec> {
  checkModel(ctx, body.model);
  return messagesSpecOf(body, await anthropicPrompt(ctx, body));
}

/**
 * anthropic-version 2026-10-21 (the current SDK's) dropped temperature, top_p and top_k;
 * 2023-06-01 has them. A request under a version without them that sends one is refused, as
 * Anthropic's API refuses a field its version does not have. Without the header (or with a
 * version that is not a date) they are read, as loom always has.
 */
const SAMPLING_DROPPED = '2026-10-21';
const SAMPLING_FIELDS = ['temperature', 'top_p', 'top_k'] as const;

export function checkVersionFields(body: AnthropicBody, version: string | undefined): void {
  if (version === undefined || !/^\d{4}-\d{2}-\d{2}$/.test(version) || version < SAMPLING_DROPPED) return;
  const field = SAMPLING_FIELDS.find((f) => body[f] !== undefined);
  if (field === undefined) return;
  throw new HttpError(400, `${field}: Extra inputs are not permitted (anthropic-version ${version} has no temperature, top_p or top_k; send anthropic-version: 2023-06-01 to set them)`, 'invalid_request_error', field);
}

/** The request around its prompt (already parsed, its images decoded or fetched). */
export function messagesSpecOf(body: AnthropicBody, prompt: ChatPrompt): RequestSpec {
  return {
    prompts: [prompt],
    promptParam: 'messages',
    addSpecialTokens: false,
    parseSpecial: true,
    maxTokens: body.max_tokens,
    maxTokensParam: 'max_tokens',
    defaultMaxTokens: 'context',
    sampling: { temperature: body.temperature ?? 1, topP: body.top_p ?? 1, topK: body.top_k ?? 0, grammar: outputGrammar(body) },
    tools: toolFields(body),
    stop: body.stop_sequences ?? null,
    idPrefix: 'msg',
    paramNames: { grammar: body.output_format ? 'output_format' : 'output_config.format' },
  };
}

/** The tools' template variables for count_tokens (no parser is needed to count) */
export function countTokensVars(body: AnthropicBody): Record<string, unknown> {
  const tools = chatTools(body.tools);
  return tools.length > 0 ? { tools } : {};
}

export function messagesOutputConfig(ctx: ServerContext, body: AnthropicBody, r: ResolvedRequest): ChatOutputConfig {
  const tools = r.tools;
  return { reasoningParser: r.reasoning?.parser, reasoningEnded: r.reasoning?.ended, chatTemplateKwargs: thinkingVars(ctx, body), toolParser: tools?.parser, forcedTools: tools?.forced?.tools, parallelToolCalls: tools?.parallel ?? true };
}
