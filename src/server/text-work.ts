// The serving thread's text work: encode, decode and chat rendering go to the tokenizer pool
// when the text is long enough to block (a 4 MiB prompt takes seconds to tokenize), and stay
// inline when short (a worker's round trip costs more than the work) or when there is no
// pool. Both paths give the same ids: the workers load the same tokenizer from the same file.
import { renderChat } from '../tokenizer/chat-template.js';
import type { ChatMessage } from '../tokenizer/chat-template.js';
import type { RenderOptions, TextCodec } from '../pipeline/context.js';
import type { DecodeOptions, EncodeOptions, Tokenizer } from '../tokenizer/tokenizer.js';
import type { JsonIds, TokenizerPool } from './tokenizer-pool.js';

/** texts longer than this (UTF-16 units) are encoded / rendered in the pool (4 Ki chars: ~5-10 ms inline) */
export const OFFLOAD_CHARS = 4 * 1024;
/**
 * a text up to this long runs inline rather than wait behind a backlog over BUSY_BACKLOG
 * (a client's megabytes in every worker must not hold up another client's page of text)
 */
export const INLINE_WHEN_BUSY_CHARS = 16 * 1024;
export const BUSY_BACKLOG = 256 * 1024;
/** id lists longer than this are decoded in the pool */
export const OFFLOAD_IDS = 8 * 1024;

export type { RenderOptions } from '../pipeline/context.js';

export class TextWork implements TextCodec {
  constructor(
    readonly tokenizer: Tokenizer,
    private readonly pool: TokenizerPool | undefined,
    /** --chat-template: the workers were given the same one */
    private readonly chatTemplate: string | undefined,
  ) {}

  /** whether a text of this many UTF-16 units goes to the pool */
  offloads(chars: number): boolean {
    if (chars <= OFFLOAD_CHARS || this.pool === undefined || !this.pool.running) return false;
    return chars > INLINE_WHEN_BUSY_CHARS || this.pool.backlog <= BUSY_BACKLOG;
  }

  async encode(text: string, opts: EncodeOptions = {}): Promise<number[]> {
    const addSpecial = opts.addSpecial ?? true;
    const parseSpecial = opts.parseSpecial ?? true;
    if (!this.offloads(text.length)) return this.tokenizer.encode(text, { addSpecial, parseSpecial });
    return toArray(await this.pool!.encode(text, addSpecial, parseSpecial));
  }

  /** the ids as JSON text and their count: for an answer that only carries them (/tokenize) */
  async encodeJson(text: string, opts: EncodeOptions = {}): Promise<JsonIds> {
    const addSpecial = opts.addSpecial ?? true;
    const parseSpecial = opts.parseSpecial ?? true;
    if (this.offloads(text.length)) return this.pool!.encodeJson(text, addSpecial, parseSpecial);
    const ids = this.tokenizer.encode(text, { addSpecial, parseSpecial });
    return { json: JSON.stringify(ids), count: ids.length };
  }

  async decode(ids: readonly number[], opts: DecodeOptions = {}): Promise<string> {
    const skipSpecial = opts.skipSpecial ?? true;
    if (ids.length <= OFFLOAD_IDS || this.pool === undefined || !this.pool.running) return this.tokenizer.decode(ids, { skipSpecial });
    return this.pool.decode(Int32Array.from(ids), skipSpecial);
  }

  async render(messages: readonly ChatMessage[], opts: RenderOptions): Promise<string> {
    if (!this.offloads(renderSize(messages, opts.extra))) {
      return renderChat(this.tokenizer, messages, { addGenerationPrompt: opts.addGenerationPrompt, template: this.chatTemplate, ...(opts.extra && { extra: opts.extra }) });
    }
    return this.pool!.render(messages, opts.addGenerationPrompt, opts.extra);
  }
}

/** a plain loop: ~10x faster than Array.from on a million ids (which iterates) */
function toArray(ids: Int32Array): number[] {
  const out = new Array<number>(ids.length);
  for (let i = 0; i < ids.length; i++) out[i] = ids[i]!;
  return out;
}

/** about the characters a rendering reads: message texts, tool calls and extra variables (tools) */
function renderSize(messages: readonly ChatMessage[], extra: Readonly<Record<string, unknown>> | undefined): number {
  let n = 0;
  for (const m of messages) {
    n += m.content.length + m.role.length;
    if (m.tool_calls) n += JSON.stringify(m.tool_calls).length;
    if (n > OFFLOAD_CHARS) return n;
  }
  return extra === undefined ? n : n + JSON.stringify(extra).length;
}
