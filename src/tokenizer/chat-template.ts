// Chat templates (Jinja, as in tokenizer_config.json / tokenizer.chat_template) rendered
// with @huggingface/jinja. Every failure becomes a ChatTemplateError with a clear message.
import { existsSync, readFileSync } from 'node:fs';
import { Template } from '@huggingface/jinja';
import { InvalidArgumentError, LoomError } from '../errors.js';
import type { Tokenizer } from './tokenizer.js';

/** The model has no chat template, the template is broken, or it refused the messages (raise_exception). */
export class ChatTemplateError extends LoomError {}

export interface ChatMessage {
  role: string;
  content: string;
  name?: string;
  /** an assistant turn's tool calls, arguments as objects (HF templates iterate or `tojson` them) */
  tool_calls?: readonly { id?: string; type: 'function'; function: { name: string; arguments: unknown } }[];
  /** a `tool` turn: the call it answers */
  tool_call_id?: string;
}

export interface ChatOptions {
  bosToken?: string | undefined;
  eosToken?: string | undefined;
  /** end with the assistant's turn opening; default true */
  addGenerationPrompt?: boolean;
  /** more variables for the template (tools, date_string, enable_thinking, …) */
  extra?: Readonly<Record<string, unknown>>;
  /** a template to use instead of the tokenizer's own (--chat-template) */
  template?: string | undefined;
}

const compiled = new Map<string, Template>();

function compile(template: string): Template {
  let t = compiled.get(template);
  if (t === undefined) {
    try {
      t = new Template(template);
    } catch (e) {
      throw new ChatTemplateError(`chat template does not parse: ${messageOf(e)}`, { cause: e });
    }
    if (compiled.size > 16) compiled.clear();
    compiled.set(template, t);
  }
  return t;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** the tokenizer's chat template, or a ChatTemplateError naming `model` */
export function requireChatTemplate(tokenizer: Tokenizer, model = 'the model'): string {
  const t = tokenizer.chatTemplate;
  if (t === undefined || t.trim() === '') {
    throw new ChatTemplateError(`${model} has no chat template; use a completion prompt instead of chat messages`);
  }
  return t;
}

/**
 * Render messages through a template string, or through a tokenizer's own template
 * (its BOS/EOS texts filled in; a ChatTemplateError when it has none).
 */
export function renderChat(template: string, messages: readonly ChatMessage[], opts?: ChatOptions): string;
export function renderChat(tokenizer: Tokenizer, messages: readonly ChatMessage[], opts?: ChatOptions): string;
export function renderChat(source: string | Tokenizer, messages: readonly ChatMessage[], opts: ChatOptions = {}): string {
  let template: string;
  let bos = opts.bosToken;
  let eos = opts.eosToken;
  if (typeof source === 'string') {
    template = source;
  } else {
    template = opts.template ?? requireChatTemplate(source);
    bos ??= source.bosToken;
    eos ??= source.eosToken;
  }
  const t = compile(template);
  try {
    return t.render({
      ...opts.extra,
      messages: messages.map((m) => ({ ...m })),
      bos_token: bos ?? '',
      eos_token: eos ?? '',
      add_generation_prompt: opts.addGenerationPrompt ?? true,
    });
  } catch (e) {
    throw new ChatTemplateError(`chat template failed: ${messageOf(e)}`, { cause: e });
  }
}

/**
 * `--chat-template FILE_OR_STRING` as vLLM reads it: an existing file's text, else the
 * argument itself when it looks like a template; it must compile (checked at startup).
 */
export function loadChatTemplate(arg: string, flag = '--chat-template'): string {
  let text: string;
  if (existsSync(arg)) {
    try {
      text = readFileSync(arg, 'utf8');
    } catch (e) {
      throw new InvalidArgumentError(`${flag}: cannot read ${arg}: ${messageOf(e)}`);
    }
  } else if (/[{}\n]/.test(arg)) {
    text = arg;
  } else {
    throw new InvalidArgumentError(`${flag}: ${arg} is neither a file nor a Jinja template`);
  }
  try {
    compile(text);
  } catch (e) {
    throw new InvalidArgumentError(`${flag}: ${messageOf(e)}`);
  }
  return text;
}
