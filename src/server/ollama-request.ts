// Ollama's /api/generate and /api/chat bodies (ollama/ollama api/types.go GenerateRequest,
// ChatRequest, Options; defaults from DefaultOptions: temperature 0.8, top_k 40, top_p 0.9,
// num_predict -1 = until the context is full) as a RequestSpec for the one pipeline.
// `images` (base64 files) go where Ollama's chatPrompt puts them: each at an "[img]" of the
// message's text, in order, the rest before the text. Fields loom cannot honour (tools, format,
// suffix, template) are refused by name;
// runner options that only matter to llama.cpp's loader (num_ctx, num_gpu, …) are ignored,
// as Ollama ignores options it does not know.
import { HttpError } from './errors.js';
import { chatPrompt } from './openai-request.js';
import { checkPromptBytes } from '../pipeline/prompt-bytes.js';
import { contextLimit } from '../pipeline/request.js';
import type { RequestSpec } from '../pipeline/request.js';
import type { ChatMessage } from '../tokenizer/chat-template.js';
import type { ServerContext } from './context.js';
import { imageList } from './context.js';
import type { ImageList } from './image-list.js';

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

/** Ollama's placeholder a message's text may hold where its next image goes */
const IMG = '[img]';

/** The message's text with its images' markers placed as Ollama's chatPrompt places its [img-N] tags. */
function withImages(text: string, images: unknown, param: string, list: ImageList): string {
  if (images == null) return text;
  if (!Array.isArray(images)) bad(`${param} must be a list of base64 strings`, param);
  let prefix = '';
  let out = text;
  (images as unknown[]).forEach((img, k) => {
    if (typeof img !== 'string') bad(`${param}[${k}] must be a base64 string`, param);
    const marker = list.addBase64(img as string, `${param}[${k}]`);
    if (out.includes(IMG)) out = out.replace(IMG, marker);
    else prefix += marker;
  });
  return prefix + out;
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
export async function ollamaGenerateSpec(ctx: ServerContext, body: OllamaGenerateBody): Promise<{ spec: RequestSpec; templated: boolean; images?: boolean } | undefined> {
  if (body.suffix) bad('suffix (fill-in-the-middle) is not supported by loom', 'suffix');
  if (body.template) bad('template: loom renders the model\'s own chat template and takes no Go template', 'template');
  if (body.prompt != null && typeof body.prompt !== 'string') bad('prompt must be a string', 'prompt');
  if (body.system != null && typeof body.system !== 'string') bad('system must be a string', 'system');
  const context = body.context ?? [];
  if (!Array.isArray(context) || !context.every((id) => Number.isInteger(id))) bad('context must be a list of token ids', 'context');
  const prompt = body.prompt ?? '';
  const hasImages = Array.isArray(body.images) && body.images.length > 0;
  if (prompt === '' && context.length === 0 && !hasImages) return undefined;
  const templated = !body.raw && hasTemplate(ctx);
  if (hasImages || (body.images != null && !Array.isArray(body.images))) return { templated, images: true, spec: await generateImagesSpec(ctx, body, prompt, templated, context) };
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

/** /api/generate with images: a chat prompt (or, raw, a text prompt) the pipeline renders and places the images in. */
async function generateImagesSpec(ctx: ServerContext, body: OllamaGenerateBody, prompt: string, templated: boolean, context: readonly number[]): Promise<RequestSpec> {
  if (context.length > 0) bad('context (a previous response\'s tokens) cannot be continued with images: send the conversation to /api/chat', 'context');
  const list = imageList(ctx);
  const user = { role: 'user', content: withImages(prompt, body.images, 'images', list) };
  const system = body.system ? [{ role: 'system', content: body.system }] : [];
  const images = (await list.forMessages([...system, user], 'images'))!;
  const common = { ...samplingOf(body.options), promptParam: 'prompt', idPrefix: 'ollama-generate' };
  if (templated) return { ...common, prompts: [{ messages: [...system, user], addGenerationPrompt: true, images }], addSpecialTokens: false, parseSpecial: true };
  const text = body.system && !body.raw ? `${body.system}\n\n${user.content}` : user.content;
  return { ...common, prompts: [{ text, images }], addSpecialTokens: true, parseSpecial: false };
}

/** /api/chat: the messages through the model's chat template. Undefined for no messages ("load"). */
export async function ollamaChatSpec(ctx: ServerContext, body: OllamaChatBody): Promise<RequestSpec | undefined> {
  if (body.tools != null && body.tools.length > 0) bad('tools are not supported by loom yet', 'tools');
  const messages = body.messages ?? [];
  if (!Array.isArray(messages)) bad('messages must be a list', 'messages');
  for (const [i, m] of messages.entries()) {
    if (!isObject(m) || typeof m.role !== 'string' || typeof (m.content ?? '') !== 'string') bad(`messages[${i}] needs a role and a string content`, `messages[${i}]`);
  }
  if (messages.length === 0) return undefined;
  const list = imageList(ctx);
  const chat = messages.map((m, i) => ({ role: m.role, content: withImages(m.content ?? '', m.images, `messages[${i}].images`, list) }));
  const images = await list.forMessages(chat, 'messages');
  if (!hasTemplate(ctx)) {
    // as Ollama's default template and `loom chat` do for a model without one: the transcript continued as plain text
    return {
      ...samplingOf(body.options),
      prompts: [images ? { text: joined(chat), images } : joined(chat)],
      promptParam: 'messages',
      addSpecialTokens: true,
      parseSpecial: false,
      idPrefix: 'ollama-chat',
    };
  }
  return {
    ...samplingOf(body.options),
    // rendered by the pipeline
    prompts: [{ messages: chat, addGenerationPrompt: true, ...(images && { images }) }],
    promptParam: 'messages',
    addSpecialTokens: false, // the template carries its own BOS
    parseSpecial: true,
    idPrefix: 'ollama-chat',
  };
}

/** a conversation as plain text, for a model without a template */
const joined = (messages: readonly ChatMessage[]): string => messages.map((m) => m.content).filter((t) => t !== '').join('\n');
