// Ollama's /api/generate and /api/chat bodies (ollama/ollama api/types.go GenerateRequest,
// ChatRequest, Options; defaults from DefaultOptions: temperature 0.8, top_k 40, top_p 0.9,
// num_predict -1 = until the context is full) as a RequestSpec for the one pipeline.
// Fields loom cannot honour (images, tools, format, suffix, template) are refused by name;
// runner options that only matter to llama.cpp's loader (num_ctx, num_gpu, …) are ignored,
// as Ollama ignores options it does not know.
import type { ServerContext } from './context.js';
import { HttpError } from './errors.js';
import { chatPrompt } from './openai-request.js';
import { checkPromptBytes } from '../pipeline/prompt-bytes.js';
import { contextLimit } from '../pipeline/request.js';
import type { RequestSpec } from '../pipeline/request.js';

export interface OllamaOptions {
  num_predict?: number;
  temperature?: number;
  top_k?: number;
  top_p?: number;
  min_p?: number;
  seed?: number;
  stop?: string[];
  repeat_penalty?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  [other: string]: unknown;
}

export interface OllamaMessage {
  role: string;
  content: string;
  images?: unknown[] | null;
  tool_calls?: unknown[] | null;
}

interface OllamaCommon {
  model?: string;
  stream?: boolean;
  format?: unknown;
  options?: OllamaOptions | null;
  keep_alive?: unknown;
  think?: unknown;
}

export interface OllamaGenerateBody extends OllamaCommon {
  prompt?: string;
  suffix?: string;
  system?: string;
  template?: string;
  raw?: boolean;
  images?: unknown[] | null;
  context?: number[] | null;
}

export interface OllamaChatBody extends OllamaCommon {
  messages?: OllamaMessage[] | null;
  tools?: unknown[] | null;
}

const bad = (message: string, param: string): never => {
  throw new HttpError(400, message, 'invalid_request_error', param);
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function num(o: OllamaOptions, key: keyof OllamaOptions & string, integer = false): number | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v))) bad(`option "${key}" must be ${integer ? 'an integer' : 'a number'}`, `options.${key}`);
  return v as number;
}

/** The request's body as an object, with the fields every Ollama request shares checked. */
export function checkCommon(body: unknown, where: string): asserts body is OllamaCommon {
  if (!isObject(body)) bad(`${where}: the body must be a JSON object`, 'body');
  const b = body as OllamaCommon;
  if (b.model !== undefined && typeof b.model !== 'string') bad('model must be a string', 'model');
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== 'boolean') bad('stream must be true or false', 'stream');
  if (b.options != null && !isObject(b.options)) bad('options must be an object', 'options');
  if (b.format != null && b.format !== '') bad('format (JSON mode and structured outputs) is not supported by loom yet', 'format');
}

function samplingOf(options: OllamaOptions | null | undefined): Pick<RequestSpec, 'sampling' | 'stop' | 'maxTokens' | 'maxTokensParam' | 'defaultMaxTokens'> {
  const o = options ?? {};
  const stop = o.stop;
  if (stop != null && !(Array.isArray(stop) && stop.every((s) => typeof s === 'string'))) bad('option "stop" must be a list of strings', 'options.stop');
  const predict = num(o, 'num_predict', true);
  const seed = num(o, 'seed', true);
  const topK = num(o, 'top_k', true) ?? 40;
  return {
    sampling: {
      temperature: num(o, 'temperature') ?? 0.8,
      topK: topK <= 0 ? 0 : topK,
      topP: num(o, 'top_p') ?? 0.9,
      minP: num(o, 'min_p') ?? 0,
      n: 1,
      seed: seed === undefined || seed < 0 ? null : seed,
      repetitionPenalty: num(o, 'repeat_penalty') ?? 1,
      presencePenalty: num(o, 'presence_penalty') ?? 0,
      frequencyPenalty: num(o, 'frequency_penalty') ?? 0,
      logprobs: null,
    },
    stop: stop ?? null,
    // -1 (infinite) and -2 (fill the context) both end at the context's end here
    maxTokens: predict === undefined || predict < 0 ? undefined : predict,
    maxTokensParam: 'options.num_predict',
    defaultMaxTokens: 'context',
  };
}

/** the --chat-template given, else the model's own */
function hasTemplate(ctx: ServerContext): boolean {
  return (ctx.options.chatTemplate ?? ctx.tokenizer.chatTemplate ?? '').trim() !== '';
}

/**
 * /api/generate: the prompt (and system) through the model's chat template as a user turn,
 * as Ollama does, unless `raw` or the model has no template; `context` (a previous
 * response's token ids) goes first. Undefined when there is nothing to run (Ollama's "load").
 */
export async function ollamaGenerateSpec(ctx: ServerContext, body: OllamaGenerateBody): Promise<{ spec: RequestSpec; templated: boolean } | undefined> {
  if (body.images != null && body.images.length > 0) bad('images are not supported: loom serves text-only models', 'images');
  if (body.suffix) bad('suffix (fill-in-the-middle) is not supported by loom', 'suffix');
  if (body.template) bad('template: loom renders the model\'s own chat template and takes no Go template', 'template');
  if (body.prompt != null && typeof body.prompt !== 'string') bad('prompt must be a string', 'prompt');
  if (body.system != null && typeof body.system !== 'string') bad('system must be a string', 'system');
  const context = body.context ?? [];
  if (!Array.isArray(context) || !context.every((id) => Number.isInteger(id))) bad('context must be a list of token ids', 'context');
  const prompt = body.prompt ?? '';
  if (prompt === '' && context.length === 0) return undefined;
  const templated = !body.raw && hasTemplate(ctx);
  let text = prompt;
  if (templated) {
    const messages = [...(body.system ? [{ role: 'system', content: body.system }] : []), { role: 'user', content: prompt }];
    text = await chatPrompt(ctx, messages, { addGenerationPrompt: true });
  } else if (body.system && !body.raw) {
    text = `${body.system}\n\n${prompt}`;
  }
  checkPromptBytes(ctx.tokenizer, text, contextLimit(ctx), 'prompt');
  const promptIds = await ctx.text.encode(text, { addSpecial: !templated && context.length === 0, parseSpecial: templated });
  return {
    templated,
    spec: {
      ...samplingOf(body.options),
      prompts: [[...context, ...promptIds]],
      promptParam: 'prompt',
      addSpecialTokens: false,
      idPrefix: 'ollama-generate',
    },
  };
}

/** /api/chat: the messages through the model's chat template. Undefined for no messages ("load"). */
export async function ollamaChatSpec(ctx: ServerContext, body: OllamaChatBody): Promise<RequestSpec | undefined> {
  if (body.tools != null && body.tools.length > 0) bad('tools are not supported by loom yet', 'tools');
  const messages = body.messages ?? [];
  if (!Array.isArray(messages)) bad('messages must be a list', 'messages');
  for (const [i, m] of messages.entries()) {
    if (!isObject(m) || typeof m.role !== 'string' || typeof (m.content ?? '') !== 'string') bad(`messages[${i}] needs a role and a string content`, `messages[${i}]`);
    if (m.images != null && m.images.length > 0) bad('images are not supported: loom serves text-only models', `messages[${i}].images`);
  }
  if (messages.length === 0) return undefined;
  if (!hasTemplate(ctx)) {
    // as Ollama's default template and `loom chat` do for a model without one: the transcript continued as plain text
    return {
      ...samplingOf(body.options),
      prompts: [messages.map((m) => m.content ?? '').filter((t) => t !== '').join('\n')],
      promptParam: 'messages',
      addSpecialTokens: true,
      parseSpecial: false,
      idPrefix: 'ollama-chat',
    };
  }
  return {
    ...samplingOf(body.options),
    // rendered by the pipeline
    prompts: [{ messages: messages.map((m) => ({ role: m.role, content: m.content ?? '' })), addGenerationPrompt: true }],
    promptParam: 'messages',
    addSpecialTokens: false, // the template carries its own BOS
    parseSpecial: true,
    idPrefix: 'ollama-chat',
  };
}
