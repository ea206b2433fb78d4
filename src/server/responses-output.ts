// One response's output as the Responses API spells it: items (reasoning, an assistant
// message of output_text with its tokens' logprobs when asked, function_call, custom_tool_call,
// compaction), built from a ChatOutput's deltas, and the stream events that build them (the
// openai SDK's ResponseStreamEvent types), each numbered by an increasing sequence_number.
// The same object serves a whole response: it then only collects items, and emits nothing.
import { randomBytes } from 'node:crypto';
import type { ChatDelta, ChatEnd } from '../pipeline/chat-output.js';
import { customInput } from './responses-tools.js';
import type { ToolKinds } from './responses-tools.js';

export type StreamEvent = { type: string } & Record<string, unknown>;

export interface ReasoningItem {
  type: 'reasoning';
  id: string;
  summary: { type: 'summary_text'; text: string }[];
  content: { type: 'reasoning_text'; text: string }[];
  encrypted_content: null;
  status: 'in_progress' | 'completed' | 'incomplete';
}

/** an output token's logprob and its alternatives (OpenAI's ResponseOutputText.Logprob, chat's shape) */
export interface OutputLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

export interface MessageItem {
  type: 'message';
  id: string;
  role: 'assistant';
  status: 'in_progress' | 'completed' | 'incomplete';
  content: { type: 'output_text'; text: string; annotations: never[]; logprobs: OutputLogprob[] }[];
}

export interface FunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: 'in_progress' | 'completed' | 'incomplete';
  /** the namespace the called tool came in */
  namespace?: string;
}

export interface CustomToolCallItem {
  type: 'custom_tool_call';
  id: string;
  call_id: string;
  name: string;
  input: string;
  status: 'in_progress' | 'completed' | 'incomplete';
  namespace?: string;
}

export interface CompactionItem {
  type: 'compaction';
  id: string;
  encrypted_content: string;
}

export type OutputItem = ReasoningItem | MessageItem | FunctionCallItem | CustomToolCallItem | CompactionItem;

type CallItem = FunctionCallItem | CustomToolCallItem;

const hex = (n: number): string => randomBytes(n).toString('hex');
export const itemId = (prefix: 'rs' | 'msg' | 'fc' | 'ctc' | 'cmp'): string => `${prefix}_${hex(16)}`;

export class ResponseOutput {
  readonly items: OutputItem[] = [];
  private seq = 0;
  private open: { item: ReasoningItem | MessageItem; index: number } | undefined;
  /** call items streamed so far, by the tool call's index (`args`: the arguments as written) */
  private readonly calls = new Map<number, { item: CallItem; index: number; args: string }>();
  /** whitespace before any message text (e.g. between </think> and a tool call): held until text follows */
  private blank = '';
  /** logprobs of tokens whose text is not out yet (held back by the parser) */
  private pending: OutputLogprob[] = [];

  /**
   * `emit` receives each stream event (nothing for a whole response); calls to custom tools
   * become custom_tool_call items, their input whole at the end (it is written as a JSON
   * string argument, which only decodes whole); calls to a namespace's tools name it.
   */
  constructor(
    private readonly emit: (e: StreamEvent) => void = () => {},
    private readonly tools: ToolKinds = { custom: new Set(), namespaces: new Map() },
  ) {}

  event(type: string, fields: Record<string, unknown>): void {
    this.emit({ type, sequence_number: this.seq++, ...fields });
  }

  /**
   * A ChatOutput delta: reasoning, text, tool-call pieces; `logprobs` those of the tokens that
   * made it. They go with the message text: held while the parser holds the text back, and
   * dropped when the tokens turned out to be reasoning or a call.
   */
  push(d: ChatDelta, logprobs: readonly OutputLogprob[] = []): void {
    this.pending.push(...logprobs);
    if (d.reasoning) this.text('reasoning', d.reasoning);
    let said = false;
    if (d.content) {
      if (this.open?.item.type !== 'message' && d.content.trim() === '') this.blank += d.content;
      else {
        this.text('message', this.blank + d.content, this.pending);
        this.blank = '';
        this.pending = [];
        said = true;
      }
    }
    if (!said && (d.reasoning || d.toolCallDeltas.length > 0)) this.pending = [];
    for (const c of d.toolCallDeltas) {
      let call = this.calls.get(c.index);
      if (!call) {
        this.close();
        const name = c.function.name ?? '';
        const namespace = this.tools.namespaces.get(name);
        const item: CallItem = this.tools.custom.has(name)
          ? { type: 'custom_tool_call', id: itemId('ctc'), call_id: c.id ?? '', name, input: '', status: 'in_progress' }
          : { type: 'function_call', id: itemId('fc'), call_id: c.id ?? '', name, arguments: '', status: 'in_progress' };
        if (namespace !== undefined) item.namespace = namespace;
        call = { item, index: this.add(item), args: '' };
        this.calls.set(c.index, call);
      }
      if (c.function.arguments) {
        call.args += c.function.arguments;
        if (call.item.type === 'function_call') {
          call.item.arguments = call.args;
          this.event('response.function_call_arguments.delta', { item_id: call.item.id, output_index: call.index, delta: c.function.arguments });
        }
      }
    }
  }

  /** the output of a compaction: one compaction item carrying the summary */
  compaction(encryptedContent: string): void {
    this.close();
    const item: CompactionItem = { type: 'compaction', id: itemId('cmp'), encrypted_content: encryptedContent };
    const index = this.add(item);
    this.event('response.output_item.done', { output_index: index, item: { ...item } });
  }

  /** the end of the text: what was held back, and the calls whole; `complete` false marks items incomplete */
  finish(end: ChatEnd, complete: boolean): void {
    this.push({ reasoning: end.reasoning, content: end.content, toolCallDeltas: [] });
    // whitespace alone is a message only when nothing else was said
    if (this.blank && !this.items.some((i) => i.type === 'message') && end.toolCalls.length === 0 && this.calls.size === 0) this.text('message', this.blank, this.pending);
    this.blank = '';
    end.toolCalls.forEach((c, i) => {
      const sent = this.calls.get(i)?.args ?? '';
      const rest = c.function.arguments.startsWith(sent) ? c.function.arguments.slice(sent.length) : c.function.arguments;
      this.push({ reasoning: '', content: '', toolCallDeltas: [{ index: i, id: c.id, function: { name: c.function.name, arguments: rest } }] });
      const call = this.calls.get(i)!;
      call.args = c.function.arguments;
      Object.assign(call.item, { call_id: c.id, name: c.function.name }, call.item.type === 'function_call' && { arguments: c.function.arguments });
    });
    this.close(complete);
    for (const { item, index, args } of this.calls.values()) {
      if (item.status !== 'in_progress') continue;
      item.status = complete ? 'completed' : 'incomplete';
      const where = { item_id: item.id, output_index: index };
      if (item.type === 'custom_tool_call') {
        item.input = customInput(args);
        if (item.input) this.event('response.custom_tool_call_input.delta', { ...where, delta: item.input });
        this.event('response.custom_tool_call_input.done', { ...where, input: item.input });
      } else {
        this.event('response.function_call_arguments.done', { ...where, name: item.name, arguments: item.arguments });
      }
      this.event('response.output_item.done', { output_index: index, item: { ...item } });
    }
  }

  private add(item: OutputItem): number {
    const index = this.items.length;
    this.items.push(item);
    this.event('response.output_item.added', { output_index: index, item: structuredClone(item) });
    return index;
  }

  private text(kind: 'reasoning' | 'message', delta: string, logprobs: readonly OutputLogprob[] = []): void {
    if (this.open?.item.type !== kind) {
      this.close();
      const item: ReasoningItem | MessageItem =
        kind === 'reasoning'
          ? { type: 'reasoning', id: itemId('rs'), summary: [], content: [], encrypted_content: null, status: 'in_progress' }
          : { type: 'message', id: itemId('msg'), role: 'assistant', status: 'in_progress', content: [] };
      const index = this.add(item);
      this.open = { item, index };
      const part = kind === 'reasoning' ? { type: 'reasoning_text', text: '' } : { type: 'output_text', text: '', annotations: [], logprobs: [] };
      this.event('response.content_part.added', { item_id: item.id, output_index: index, content_index: 0, part });
      if (item.type === 'reasoning') item.content.push({ type: 'reasoning_text', text: '' });
      else item.content.push({ type: 'output_text', text: '', annotations: [], logprobs: [] });
    }
    const { item, index } = this.open;
    item.content[0]!.text += delta;
    if (item.type === 'message') item.content[0]!.logprobs.push(...logprobs);
    const type = kind === 'reasoning' ? 'response.reasoning_text.delta' : 'response.output_text.delta';
    this.event(type, { item_id: item.id, output_index: index, content_index: 0, delta, ...(kind === 'message' && { logprobs: [...logprobs] }) });
  }

  /** the open reasoning or message item, done */
  private close(complete = true): void {
    const open = this.open;
    if (!open) return;
    this.open = undefined;
    const { item, index } = open;
    const part = item.content[0]!;
    item.status = complete ? 'completed' : 'incomplete';
    const where = { item_id: item.id, output_index: index, content_index: 0 };
    if (item.type === 'reasoning') this.event('response.reasoning_text.done', { ...where, text: part.text });
    else this.event('response.output_text.done', { ...where, text: part.text, logprobs: [...(part as MessageItem['content'][number]).logprobs] });
    this.event('response.content_part.done', { ...where, part: structuredClone(part) });
    this.event('response.output_item.done', { output_index: index, item: structuredClone(item) });
  }
}
