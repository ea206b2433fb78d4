// What the request pipeline reads: the engine (its info: context, blocks, logprobs mode),
// the tokenizer, a text codec (encode / decode / chat rendering; the server's offloads long
// texts to its tokenizer pool, the library's runs inline) and the limits of who calls it.
// The server's context is one of these; the library and `loom generate` make their own.
import type { EngineClient } from '../engine/client.js';
import { renderChat } from '../tokenizer/chat-template.js';
import type { ChatMessage } from '../tokenizer/chat-template.js';
import type { DecodeOptions, EncodeOptions, Tokenizer } from '../tokenizer/tokenizer.js';
import type { RequestLimits } from './limits.js';
import type { ReasoningParserName } from './reasoning/parser.js';
import type { ToolCallParserName } from './tools/parsers.js';
import type { VisionContext } from './images.js';

export interface RenderOptions {
  readonly addGenerationPrompt: boolean;
  /** extra template variables (tools, chat_template_kwargs) */
  readonly extra?: Readonly<Record<string, unknown>> | undefined;
}

/** encode / decode / render: the same ids and text whichever thread does the work */
export interface TextCodec {
  encode(text: string, opts?: EncodeOptions): Promise<number[]>;
  decode(ids: readonly number[], opts?: DecodeOptions): Promise<string>;
  render(messages: readonly ChatMessage[], opts: RenderOptions): Promise<string>;
}

export interface PipelineOptions {
  /** the served context length (the engine's KV cache may bound it further) */
  readonly maxModelLen: number;
  /** most sequences (prompts × n) one request may ask for; default: no bound */
  readonly maxPendingRequests?: number;
  /** n, stop strings, logit_bias entries per request (limits.ts) */
  readonly limits?: Partial<RequestLimits> | undefined;
  /** a chat template used instead of the model's own (the tool-call parser is read from it) */
  readonly chatTemplate?: string | undefined;
  /** splits <think>…</think> into reasoning (--reasoning-parser) */
  readonly reasoningParser?: ReasoningParserName | undefined;
  /** how tool calls are read from the model's output (--tool-call-parser); default: from the chat template */
  readonly toolCallParser?: ToolCallParserName | undefined;
}

/** a request the engine is running, as an abort finds it */
export interface RunningRequest {
  abort(): void;
}

export interface PipelineContext {
  readonly engine: EngineClient;
  readonly tokenizer: Tokenizer;
  readonly text: TextCodec;
  readonly options: PipelineOptions;
  /** requests in the engine, by engine request id (client ids must not collide with them) */
  readonly requests: Map<string, RunningRequest>;
  /** the served model's vision projector (--mmproj): images are refused without one */
  readonly vision?: VisionContext | undefined;
}

/** A text codec on this thread (the library, the CLI): the tokenizer's own calls. */
export function inlineText(tokenizer: Tokenizer, chatTemplate?: string): TextCodec {
  return {
    encode: async (text, opts = {}) => tokenizer.encode(text, { addSpecial: opts.addSpecial ?? true, parseSpecial: opts.parseSpecial ?? true }),
    decode: async (ids, opts = {}) => tokenizer.decode(ids, { skipSpecial: opts.skipSpecial ?? true }),
    render: async (messages, opts) => renderChat(tokenizer, messages, { addGenerationPrompt: opts.addGenerationPrompt, template: chatTemplate, ...(opts.extra && { extra: opts.extra }) }),
  };
}

/** no per-request limits: a library or CLI caller pays for its own requests */
const UNLIMITED: RequestLimits = { maxN: Infinity, maxStopStrings: Infinity, maxLogitBias: Infinity };

/** A pipeline context over an engine of this process's, for the library and the CLI. */
export function localContext(engine: EngineClient, tokenizer: Tokenizer, chatTemplate?: string): PipelineContext {
  return { engine, tokenizer, text: inlineText(tokenizer, chatTemplate), options: { maxModelLen: engine.info.maxModelLen, limits: UNLIMITED, chatTemplate }, requests: new Map() };
}
