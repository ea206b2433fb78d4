// The request pipeline's one resolver. Every front door (the server's API surfaces: OpenAI,
// LMDeploy's /generate, Ollama's; the library's LLM; `loom generate`) maps its input into a
// RequestSpec; resolveRequest checks it completely (the prompt against the vocabulary and
// the context, every sampling field, stop and bias ids, bad words, the grammar) and returns
// one frozen ResolvedRequest, before the engine sees it or a byte of a response is written.
// Every refusal is a named domain error (src/errors.ts) naming the field (`param`, as the
// caller's API spells it); the server maps them to HTTP. The engine only asserts.
import { ContextLengthExceededError, InvalidArgumentError } from '../errors.js';
import { checkLogprobsRequest } from '../engine/logprobs.js';
import { resolveSamplingParams } from '../engine/sampling-params.js';
import { checkGrammarCompiles } from '../engine/grammar/check.js';
import type { SamplingParams, SamplingParamsInput } from '../engine/sampling-params.js';
import type { PipelineContext } from './context.js';
import { checkLimits } from './limits.js';
import { checkPromptBytes } from './prompt-bytes.js';
import { isChatPrompt, isTextImagesPrompt, renderChatPrompt } from './prompt.js';
import type { PromptInput } from './prompt.js';
import { Slicer } from './slicer.js';
import { reasoningParserForTemplate } from './reasoning/formats.js';
import type { ReasoningParserName } from './reasoning/parser.js';
import { planReasoning } from './reasoning/grammar-gate.js';
import type { ReasoningPlan } from './reasoning/grammar-gate.js';
import { parserNeedsSpecialTokens } from './reasoning/parser.js';
import { checkToolSchemasCompile } from './tools/forced.js';
import { planTools, withGenericToolsInstruction } from './tools/request.js';
import type { ChatToolsPlan, ToolFields } from './tools/request.js';
import type { EngineImage } from '../engine/image-spans.js';
import { tokenizeImagePrompt } from './image-prompt.js';

export type { PromptInput } from './prompt.js';

export interface RequestSpec {
  /** one or more prompts: text, token ids, or a chat the model's template renders */
  readonly prompts: readonly PromptInput[];
  /** the field the prompts came in (`prompt`, `input_ids`, `messages`) */
  readonly promptParam: string;
  /** add BOS/EOS to text prompts where the model wants them */
  readonly addSpecialTokens: boolean;
  /** special-token text in a text prompt becomes its id (a rendered chat template; chat prompts always) */
  readonly parseSpecial?: boolean;
  /** the requested limit, and the field it came in */
  readonly maxTokens: number | null | undefined;
  readonly maxTokensParam: string;
  /** when maxTokens is absent: a fixed default, or whatever the context has left */
  readonly defaultMaxTokens: number | 'context';
  readonly sampling: Omit<SamplingParamsInput, 'maxTokens' | 'badWords'>;
  /** functions the model may call (OpenAI's shape: other APIs map theirs onto it): in the chat template, forced by a grammar or parsed from the output */
  readonly tools?: ToolFields;
  readonly stop?: string | readonly string[] | null;
  /** words (text) never generated: tokenized with and without a leading space, as vLLM does */
  readonly badWords?: readonly string[] | null;
  /** keep only the last k prompt tokens (vLLM's truncate_prompt_tokens; -1 = the context) */
  readonly truncatePromptTokens?: number | null;
  readonly includeStopStrInOutput?: boolean;
  readonly skipSpecialTokens?: boolean;
  /** the response id: the surface's prefix, plus the client's id when it gave one */
  readonly idPrefix: string;
  /** how this surface names a sampling field, where it differs from OpenAI's (e.g. logprobs → return_logprob) */
  readonly paramNames?: Readonly<Record<string, string>>;
  readonly clientRequestId?: string | null;
}

export interface ResolvedPrompt {
  readonly ids: readonly number[];
  /** the prompt as text (token-id prompts decoded, chats rendered), for echo */
  readonly text: string;
  /** the engine's parameters for this prompt (max_tokens may differ per prompt) */
  readonly params: SamplingParams;
  /** its images, decoded and prepared (ids hold IMAGE_TOKEN_ID at their positions); their pixels go to the engine */
  readonly images?: readonly EngineImage[];
}

export interface ResolvedRequest {
  readonly id: string;
  readonly prompts: readonly ResolvedPrompt[];
  readonly stop: readonly string[];
  readonly includeStopStrInOutput: boolean;
  readonly skipSpecialTokens: boolean;
  /** how the output's tool calls are read (the parser, or the forced choice's shape); undefined without `tools` in the spec */
  readonly tools: ChatToolsPlan | undefined;
  /** a chat's reasoning (when a reasoning parser applies): whether the prompt closed it, where the grammar starts */
  readonly reasoning: ReasoningPlan | undefined;
}

/** Tokens a prompt plus its completion may use: the served length, within the KV cache. */
export function contextLimit(ctx: PipelineContext): number {
  const { numBlocks, blockSize } = ctx.engine.info;
  return Math.min(ctx.options.maxModelLen, numBlocks * blockSize);
}

export async function resolveRequest(ctx: PipelineContext, spec: RequestSpec): Promise<ResolvedRequest> {
  checkLimits(ctx.options.limits, spec);
  checkSequences(ctx, spec);
  const id = requestIdFor(ctx, spec);
  const planned = spec.tools ? planTools(ctx, spec.tools) : undefined;
  // the generic tool format is a grammar too: a response_format of the client's own wins, and
  // the calls are then left unparsed (as "auto" without a parser was before)
  const tools = planned?.forced?.tools.kind === 'generic' && spec.sampling.grammar != null ? { ...planned, forced: undefined } : planned;
  const names: Record<string, string> = { max_tokens: spec.maxTokensParam, ...spec.paramNames };
  let sampling = spec.sampling;
  if (tools?.forced) {
    if (sampling.grammar != null) {
      const param = names['grammar'] ?? 'grammar';
      throw new InvalidArgumentError(`${param} cannot be combined with tool_choice "required" or a named function (both constrain the output)`, param);
    }
    sampling = { ...sampling, grammar: tools.forced.grammar };
    names['grammar'] = 'tools';
  }
  const stop = stopStrings(spec.stop);
  const badWords: number[][] = [];
  for (const w of spec.badWords ?? []) badWords.push(...(await badWordIds(ctx, w)));
  const prompts: ResolvedPrompt[] = [];
  let reasoning: ReasoningPlan | undefined;
  // a long prompt list is resolved in slices, so other requests are served in between
  const slicer = new Slicer();
  for (const p of spec.prompts) {
    await slicer.tick();
    const chat = isChatPrompt(p);
    let text: string | readonly number[];
    const inputImages = (isChatPrompt(p) || isTextImagesPrompt(p)) && p.images?.length ? p.images : undefined;
    if (inputImages) checkImageRequest(ctx, spec, names);
    if (isTextImagesPrompt(p)) text = p.text;
    else if (isChatPrompt(p)) {
      // the generic tool format is told to the model in the system message
      const q = tools?.forced?.tools.kind === 'generic' ? { ...p, messages: withGenericToolsInstruction(p.messages, spec.tools?.tools ?? []) } : p;
      text = await renderChatPrompt(ctx.text, tools ? { ...q, templateVars: { ...tools.templateVars, ...q.templateVars } } : q);
    } else text = p;
    if (typeof text === 'string' && spec.truncatePromptTokens == null) checkPromptBytes(ctx.tokenizer, text, contextLimit(ctx), spec.promptParam);
    const parseSpecial = chat || (spec.parseSpecial ?? true);
    let images: EngineImage[] | undefined;
    let ids: number[];
    if (inputImages && typeof text === 'string') {
      ({ ids, images } = await tokenizeImagePrompt(ctx, text, inputImages, { addSpecial: spec.addSpecialTokens, parseSpecial, param: spec.promptParam }));
    } else ids = typeof text === 'string' ? await ctx.text.encode(text, { addSpecial: spec.addSpecialTokens, parseSpecial }) : [...text];
    checkTokenIds(ctx, ids, spec.promptParam);
    if (ids.length === 0) throw new InvalidArgumentError('The prompt must not be empty', spec.promptParam);
    ids = truncate(ctx, ids, spec.truncatePromptTokens);
    const maxTokens = resolveMaxTokens(ctx, ids.length, spec.maxTokens, spec.defaultMaxTokens, spec.promptParam, spec.maxTokensParam);
    const parser = isChatPrompt(p) ? reasoningParserOf(ctx) : undefined;
    // a grammar on a reasoning model starts when the reasoning ends
    const plan = parser && planReasoning(ctx.tokenizer, parser, isChatPrompt(p) ? p.templateVars : undefined, ids);
    reasoning ??= plan;
    const gate = sampling.grammar != null && plan?.gate ? { grammarGate: plan.gate } : {};
    const params = resolveParams(ctx, { ...sampling, ...gate, maxTokens, badWords }, names);
    prompts.push({ ids, text: typeof text === 'string' ? text : await ctx.text.decode(ids, { skipSpecial: false }), params: Object.freeze(params), ...(images && { images }) });
  }
  const grammar = prompts[0]?.params.grammar;
  if (grammar) {
    try {
      await checkGrammarCompiles(grammar);
    } catch (err) {
      if (!(err instanceof InvalidArgumentError)) throw err;
      // the forced-call grammar did not compile: find the tool whose schema xgrammar refuses, to name it
      if (tools?.forced && spec.tools?.tools) await checkToolSchemasCompile(spec.tools.tools, tools.forced.tools);
      throw new InvalidArgumentError(err.message, names['grammar'] ?? 'grammar');
    }
  }
  return Object.freeze({
    id,
    prompts: Object.freeze(prompts),
    stop: Object.freeze(stop),
    includeStopStrInOutput: spec.includeStopStrInOutput ?? false,
    // a chat whose output is read through special-token markup (gpt-oss's harmony) keeps it in
    // the text for the parser, which takes it out: the client never sees it either way
    skipSpecialTokens: spec.prompts.some(isChatPrompt) && (parserNeedsSpecialTokens(ctx.options.reasoningParser) || tools?.parser?.name === 'openai') ? false : (spec.skipSpecialTokens ?? true),
    tools,
    reasoning,
  });
}

/**
 * What a prompt with images cannot have, refused before anything is decoded: no projector; a
 * cut of the prompt (it could cut an image); prompt logprobs (an image's positions have no
 * tokens to score: vLLM returns none for them either, loom refuses).
 */
function checkImageRequest(ctx: PipelineContext, spec: RequestSpec, names: Readonly<Record<string, string>>): void {
  if (!ctx.vision) throw new InvalidArgumentError('This model cannot read images: start loom with a vision projector (--mmproj)', spec.promptParam);
  if (spec.truncatePromptTokens != null) throw new InvalidArgumentError('truncate_prompt_tokens cannot be used with images (it could cut one)', 'truncate_prompt_tokens');
  if (spec.sampling.promptLogprobs != null) {
    const param = names['prompt_logprobs'] ?? 'prompt_logprobs';
    throw new InvalidArgumentError(`${param} cannot be used with images: an image's positions have no tokens to score`, param);
  }
}

/** The reasoning parser of a chat: --reasoning-parser, or the one the chat template's own markers imply. */
export function reasoningParserOf(ctx: Pick<PipelineContext, 'options' | 'tokenizer'>): ReasoningParserName | undefined {
  return ctx.options.reasoningParser ?? reasoningParserForTemplate(ctx.options.chatTemplate ?? ctx.tokenizer.chatTemplate);
}

/**
 * prompts × n above what the caller admits at once is refused before any prompt is
 * tokenized (admission says the same after; this spares the work of a hopeless request)
 */
function checkSequences(ctx: PipelineContext, spec: RequestSpec): void {
  const sequences = spec.prompts.length * (spec.sampling.n ?? 1);
  const max = ctx.options.maxPendingRequests;
  if (max !== undefined && sequences > max) {
    throw new InvalidArgumentError(`this request asks for ${sequences} sequences (prompts × n), more than this server admits at once (--max-pending-requests ${max})`, 'n');
  }
}

/** Defaults filled and every field checked against the vocabulary; errors name the field. */
function resolveParams(ctx: PipelineContext, input: SamplingParamsInput, names: Readonly<Record<string, string>>): SamplingParams {
  try {
    const params = resolveSamplingParams(input, ctx.tokenizer.vocabSize);
    checkLogprobsRequest(ctx.engine.info.logprobsMode, params);
    return params;
  } catch (err) {
    if (!(err instanceof InvalidArgumentError)) throw err;
    const param = err.param !== null ? (names[err.param] ?? err.param) : null;
    throw new InvalidArgumentError(err.message, param);
  }
}

export function checkTokenIds(ctx: Pick<PipelineContext, 'tokenizer'>, ids: readonly number[], param: string): void {
  const vocab = ctx.tokenizer.vocabSize;
  const bad = ids.find((id) => !(Number.isSafeInteger(id) && id >= 0 && id < vocab));
  if (bad !== undefined) throw new InvalidArgumentError(`token id ${bad} is outside the vocabulary (${vocab})`, param);
}

function truncate(ctx: PipelineContext, ids: number[], k: number | null | undefined): number[] {
  if (k == null) return ids;
  const limit = contextLimit(ctx);
  if (k === -1) k = limit;
  if (k < 1 || k > limit) {
    throw new InvalidArgumentError(`truncate_prompt_tokens must be -1 or in [1, ${limit}] (the context), got ${k}`, 'truncate_prompt_tokens');
  }
  return ids.length > k ? ids.slice(ids.length - k) : ids; // the last k, as vLLM's left truncation
}

/** The completion's token limit: the request's, within what the context has left. */
export function resolveMaxTokens(ctx: PipelineContext, promptTokens: number, requested: number | null | undefined, fallback: number | 'context', promptParam: string, maxParam: string): number {
  const max = contextLimit(ctx);
  if (promptTokens >= max) {
    throw new ContextLengthExceededError(`This model's maximum context length is ${max} tokens. However, your request has ${promptTokens} input tokens. Please reduce the length of the input.`, promptParam);
  }
  if (requested != null && promptTokens + requested > max) {
    throw new ContextLengthExceededError(
      `This model's maximum context length is ${max} tokens. However, you requested ${promptTokens + requested} tokens (${promptTokens} in the input, ${requested} in the completion). Please reduce the length of the input or completion.`,
      maxParam,
    );
  }
  if (requested != null) return requested;
  return fallback === 'context' ? max - promptTokens : Math.min(fallback, max - promptTokens);
}

export function stopStrings(stop: string | readonly string[] | null | undefined): string[] {
  if (stop == null) return [];
  return (typeof stop === 'string' ? [stop] : [...stop]).filter((s) => s.length > 0);
}

/** vLLM's bad_words: the word's tokens, with and without a leading space (deduplicated) */
async function badWordIds(ctx: PipelineContext, word: string): Promise<number[][]> {
  const variants = await Promise.all([word, ` ${word.trimStart()}`].map((w) => ctx.text.encode(w, { addSpecial: false, parseSpecial: false })));
  const seen = new Set<string>();
  return variants.filter((ids) => ids.length > 0 && !seen.has(ids.join(',')) && seen.add(ids.join(',')));
}

let counter = 0;
export function newRequestId(prefix: string): string {
  counter = (counter + 1) % 1e9;
  return `${prefix}-${Date.now().toString(36)}${counter.toString(36)}${Math.random().toString(36).slice(2, 8)}`;
}

function requestIdFor(ctx: PipelineContext, spec: RequestSpec): string {
  if (spec.clientRequestId == null) return newRequestId(spec.idPrefix);
  const id = `${spec.idPrefix}-${spec.clientRequestId}`;
  if (ctx.requests.has(id) || ctx.requests.has(`${id}-0`)) throw new InvalidArgumentError(`request_id ${spec.clientRequestId} is already in use`, 'request_id');
  return id;
}
