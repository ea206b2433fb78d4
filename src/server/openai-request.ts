// OpenAI request bodies (with vLLM's extra fields) as RequestSpecs: field names, defaults
// and vLLM's rules (entrypoints/openai/completion/protocol.py, chat_completion/protocol.py).
// Everything is checked here or in request.ts before a response starts.
import { reasoningEffortVars } from './reasoning-effort.js';
import type { ChatMessage } from '../tokenizer/chat-template.js';
import { canonicalJsonValue } from '../pipeline/canonical-json.js';
import { renderChatPrompt } from '../pipeline/prompt.js';
import type { ServerContext } from './context.js';
import { checkModel, imageList, noteIgnoredFields } from './context.js';
import { HttpError } from './errors.js';
import type { RequestSpec } from '../pipeline/request.js';
import { chatBody, completionsBody } from './schemas.js';
import { grammarOfBody } from './structured-output.js';
import type { StructuredOutputFields } from './structured-output.js';
import type { ChatOutputConfig } from '../pipeline/chat-output.js';
import type { ResolvedRequest } from '../pipeline/request.js';
import type { ToolFields } from '../pipeline/tools/request.js';
import type { ImageList } from './image-list.js';

/** Sampling and request fields both endpoints share (OpenAI + vLLM). */
export interface OpenAISampling extends StructuredOutputFields {
  /** optional, as in vLLM and llama-server: the served model when left out */
  model?: string;
  max_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  n?: number | null;
  stop?: string | string[] | null;
  stop_token_ids?: number[] | null;
  seed?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  repetition_penalty?: number | null;
  logit_bias?: Record<string, number> | null;
  ignore_eos?: boolean | null;
  min_tokens?: number | null;
  skip_special_tokens?: boolean | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean | null; continuous_usage_stats?: boolean | null } | null;
  include_stop_str_in_output?: boolean | null;
  spaces_between_special_tokens?: boolean | null;
  truncate_prompt_tokens?: number | null;
  allowed_token_ids?: number[] | null;
  bad_words?: string[] | null;
  add_special_tokens?: boolean | null;
  priority?: number | null;
  request_id?: string | null;
  cache_salt?: string | null;
  return_token_ids?: boolean | null;
  prompt_logprobs?: number | null;
}

export interface CompletionsBody extends OpenAISampling {
  prompt: string | string[] | number[] | number[][];
  echo?: boolean | null;
  logprobs?: number | null;
  best_of?: number | null;
  suffix?: string | null;
}

/** A message of a chat request: assistant turns may carry tool calls, `tool` turns answer one. */
export interface ChatBodyMessage {
  role: string;
  content?: string | ChatContentPart[] | null;
  name?: string;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[] | null;
  tool_call_id?: string;
}

/** a content part: `text`, or `image_url` (an object with `url` and `detail`, or the URL alone as vLLM accepts) */
export interface ChatContentPart {
  type: string;
  text?: string;
  image_url?: string | { url?: string; detail?: string };
}

export interface ChatBody extends OpenAISampling, ToolFields {
  messages: ChatBodyMessage[];
  max_completion_tokens?: number | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  add_generation_prompt?: boolean | null;
  continue_final_message?: boolean | null;
  echo?: boolean | null;
  chat_template_kwargs?: Record<string, unknown> | null;
  /** vLLM's: to the template as `reasoning_effort` ("none" also as enable_thinking false) */
  reasoning_effort?: string | null;
}

const COMPLETIONS_FIELDS = new Set(Object.keys(completionsBody.properties));
const CHAT_FIELDS = new Set(Object.keys(chatBody.properties));

/** OpenAI's default max_tokens for completions (vLLM's CompletionRequest too) */
const DEFAULT_COMPLETION_MAX_TOKENS = 16;

function commonSpec(body: OpenAISampling, logprobs: number | null, promptLogprobs: number | null) {
  // vLLM's request validators (protocol.py validate_stream_options, check_logprobs)
  if (body.stream_options != null && !body.stream) throw new HttpError(400, 'Stream options can only be defined when `stream=True`.', 'invalid_request_error', 'stream_options');
  if (body.stream && body.prompt_logprobs != null && body.prompt_logprobs > 0) {
    throw new HttpError(400, '`prompt_logprobs` are not available when `stream=True`.', 'invalid_request_error', 'prompt_logprobs');
  }
  // vLLM schedules first-come-first-served unless started with --scheduling-policy priority,
  // and then refuses a non-zero priority; loom's scheduler is FCFS
  if (body.priority != null && body.priority !== 0) {
    throw new HttpError(400, `Got priority ${body.priority} but priority scheduling is not enabled.`, 'invalid_request_error', 'priority');
  }
  const topK = body.top_k ?? 0;
  const structured = grammarOfBody(body);
  return {
    sampling: {
      temperature: body.temperature ?? 1,
      topP: body.top_p ?? 1,
      topK: topK < 0 ? 0 : topK, // vLLM: -1 (or 0) disables top-k
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
      logprobs,
      promptLogprobs,
      allowedTokenIds: body.allowed_token_ids ?? null,
      grammar: structured?.grammar ?? null,
      cacheSalt: body.cache_salt ?? null,
    },
    paramNames: { grammar: structured?.param ?? 'grammar' } as Record<string, string>,
    stop: body.stop ?? null,
    badWords: body.bad_words ?? null,
    truncatePromptTokens: body.truncate_prompt_tokens ?? null,
    includeStopStrInOutput: body.include_stop_str_in_output ?? false,
    skipSpecialTokens: body.skip_special_tokens ?? true,
    clientRequestId: body.request_id ?? null,
  };
}

export function completionsSpec(ctx: ServerContext, body: CompletionsBody): RequestSpec {
  checkModel(ctx, body.model);
  noteIgnoredFields(ctx, body, COMPLETIONS_FIELDS, '/v1/completions');
  if (body.suffix) throw new HttpError(400, 'suffix is not supported', 'invalid_request_error', 'suffix');
  if (body.best_of != null && body.best_of !== (body.n ?? 1)) throw new HttpError(400, 'best_of other than n is not supported', 'invalid_request_error', 'best_of');
  // echo with logprobs reports the prompt's tokens too, as OpenAI's API does
  const promptLogprobs = body.prompt_logprobs ?? (body.echo && body.logprobs != null ? body.logprobs : null);
  return {
    ...commonSpec(body, body.logprobs ?? null, promptLogprobs),
    prompts: normalizePrompts(body.prompt),
    promptParam: 'prompt',
    addSpecialTokens: body.add_special_tokens ?? true,
    parseSpecial: true,
    maxTokens: body.max_tokens,
    maxTokensParam: 'max_tokens',
    defaultMaxTokens: DEFAULT_COMPLETION_MAX_TOKENS,
    idPrefix: 'cmpl',
  };
}

/** The chat's spec, and the text an `echo` repeats (the final message, when it is the assistant's). */
export interface ChatPlan {
  spec: RequestSpec;
  /** the text an `echo` repeats */
  echoText: string;
}

/** How a resolved chat's output is split into reasoning, content and tool calls. */
export function chatOutputConfig(ctx: ServerContext, body: ChatBody, r: ResolvedRequest): ChatOutputConfig {
  const tools = r.tools;
  return { reasoningParser: r.reasoning?.parser, reasoningEnded: r.reasoning?.ended, chatTemplateKwargs: chatTemplateVars(body), toolParser: tools?.parser, forcedTools: tools?.forced?.tools, parallelToolCalls: tools?.parallel ?? true };
}

/** the template variables a chat request sets: reasoning_effort's, then chat_template_kwargs (which win) */
function chatTemplateVars(body: ChatBody): Record<string, unknown> | undefined {
  const vars = { ...reasoningEffortVars(body.reasoning_effort), ...body.chat_template_kwargs };
  return Object.keys(vars).length > 0 ? vars : undefined;
}

export async function chatSpec(ctx: ServerContext, body: ChatBody): Promise<ChatPlan> {
  checkModel(ctx, body.model);
  noteIgnoredFields(ctx, body, CHAT_FIELDS, '/v1/chat/completions');
  const logprobs = body.logprobs ? (body.top_logprobs ?? 0) : null;
  if (!body.logprobs && body.top_logprobs != null && body.top_logprobs > 0) {
    throw new HttpError(400, 'when using `top_logprobs`, `logprobs` must be set to true', 'invalid_request_error', 'top_logprobs');
  }
  const common = commonSpec(body, logprobs, body.prompt_logprobs ?? null);
  const tools: ToolFields = { tools: body.tools ?? null, tool_choice: body.tool_choice ?? null, parallel_tool_calls: body.parallel_tool_calls ?? null };
  const kwargs = chatTemplateVars(body);
  const list = imageList(ctx);
  const messages = chatMessages(body.messages, list);
  const images = await list.forMessages(messages, 'messages');
  const last = messages.at(-1);
  const echoText = body.echo && last?.role === 'assistant' ? last.content : '';
  return {
    spec: {
      ...common,
      // rendered by the pipeline, with the tools' template variables; reasoning_effort reaches the
      // template as vLLM passes it, chat_template_kwargs win over it (chatTemplateVars)
      prompts: [{ messages, addGenerationPrompt: body.add_generation_prompt ?? true, continueFinalMessage: body.continue_final_message ?? false, templateVars: { ...kwargs }, ...(images && { images }) }],
      tools,
      promptParam: 'messages',
      // the rendered template carries its own BOS where the model wants one (vLLM: add_special_tokens false for chat)
      addSpecialTokens: body.add_special_tokens ?? false,
      parseSpecial: true,
      maxTokens: body.max_completion_tokens ?? body.max_tokens,
      maxTokensParam: body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens',
      defaultMaxTokens: 'context',
      idPrefix: 'chatcmpl',
      paramNames: { ...common.paramNames, logprobs: 'logprobs' },
    },
    echoText,
  };
}

/** kinds of content part other APIs send that loom does not read, named in the refusal */
const NOT_READ = new Set(['input_audio', 'audio_url', 'video_url', 'input_video', 'file']);

/**
 * A message's content parts as one text: text parts joined as they come, each image_url part
 * an IMAGE_MARKER where it was (its image added to `images`; without a list, images are
 * refused: the route has no way to pass them on).
 */
function partsText(parts: readonly ChatContentPart[], where: string, images: ImageList | undefined): string {
  return parts
    .map((p, j) => {
      const at = `${where}.content[${j}]`;
      if (p.type === 'text') {
        if (typeof p.text !== 'string') throw new HttpError(400, `${at}: a text part needs a string \`text\``, 'invalid_request_error', 'messages');
        return p.text;
      }
      if (p.type === 'image_url') {
        const url = typeof p.image_url === 'string' ? p.image_url : p.image_url?.url;
        if (typeof url !== 'string' || url === '') throw new HttpError(400, `${at}: an image_url part needs image_url.url (a data URL or an http(s) URL)`, 'invalid_request_error', 'messages');
        if (!images) throw new HttpError(400, `${at}: image parts are not accepted here`, 'invalid_request_error', 'messages');
        return images.addUrl(url, `${at}.image_url`);
      }
      if (NOT_READ.has(p.type)) throw new HttpError(400, `${at}: ${p.type} parts are not supported: loom reads text and images (image_url)`, 'invalid_request_error', 'messages');
      throw new HttpError(400, `${at}: content parts of type ${JSON.stringify(p.type)} are not supported (text, image_url)`, 'invalid_request_error', 'messages');
    })
    .join('');
}

/** Messages as templates read them: text content (images as markers, into `images`), tool-call arguments as objects (as vLLM passes them), their keys sorted so a resent call renders the same. */
export function chatMessages(messages: ChatBody['messages'], images?: ImageList): ChatMessage[] {
  return messages.map((m, i) => {
    const content = m.content == null ? '' : typeof m.content === 'string' ? m.content : partsText(m.content, `messages[${i}]`, images);
    const out: ChatMessage = { role: m.role, content };
    if (m.name !== undefined) out.name = m.name;
    if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
    if (m.tool_calls) {
      out.tool_calls = m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.function.name, arguments: parseArguments(c.function.arguments, i) } }));
    }
    return out;
  });
}

function parseArguments(args: string, index: number): unknown {
  try {
    return canonicalJsonValue(JSON.parse(args));
  } catch {
    throw new HttpError(400, `messages[${index}].tool_calls: function.arguments is not JSON`, 'invalid_request_error', 'messages');
  }
}

export interface ChatPromptOptions {
  readonly addGenerationPrompt: boolean;
  /** leave the final (assistant) message open so the model continues it (vLLM / HF transformers) */
  readonly continueFinalMessage?: boolean;
  readonly extra?: Record<string, unknown>;
}

/** The chat rendered by the model's template, as text (tokenized with parseSpecial): for routes that need the text before the pipeline. */
export async function chatPrompt(ctx: ServerContext, messages: ChatBody['messages'], opts: ChatPromptOptions): Promise<string> {
  return renderChatPrompt(ctx.text, { messages: chatMessages(messages), addGenerationPrompt: opts.addGenerationPrompt, continueFinalMessage: opts.continueFinalMessage ?? false, ...(opts.extra && { templateVars: opts.extra }) });
}

function normalizePrompts(prompt: CompletionsBody['prompt']): (string | number[])[] {
  if (typeof prompt === 'string') return [prompt];
  if (prompt.length > 0 && typeof prompt[0] === 'number') return [prompt as number[]];
  return prompt as (string | number[])[];
}
