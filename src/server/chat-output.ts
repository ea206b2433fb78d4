// One chat choice's generated text as OpenAI's message parts: reasoning (--reasoning-parser),
// content, and tool calls (the tool-call parser), both streamed and whole. Tool-call text is
// held back from the stream from its opening marker on and parsed when the choice ends (a
// complete, well-formed call per tool_calls delta); text that does not parse as calls goes
// out as content then.
import { randomBytes } from 'node:crypto';
import { partialTagLength } from './partial-tag.js';
import { ReasoningSplitter } from './reasoning/parser.js';
import type { ReasoningParserName } from './reasoning/parser.js';
import type { ParsedToolCall, ToolCallParser } from './tools/parsers.js';

export interface ChatOutputConfig {
  readonly reasoningParser?: ReasoningParserName | undefined;
  readonly chatTemplateKwargs?: Readonly<Record<string, unknown>> | undefined;
  /** set when the request's tools may be called (tool_choice auto) and a parser is known */
  readonly toolParser?: ToolCallParser | undefined;
  /** false: only the first call is kept (OpenAI's parallel_tool_calls) */
  readonly parallelToolCalls?: boolean;
}

export interface OpenAIToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatDelta {
  reasoning: string;
  content: string;
}

export interface ChatEnd extends ChatDelta {
  toolCalls: OpenAIToolCall[];
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** OpenAI-style tool call id: call_ and 24 random letters/digits */
export function toolCallId(): string {
  return 'call_' + [...randomBytes(24)].map((b) => ALNUM[b % ALNUM.length]).join('');
}

/** Content as it streams, held back from a tool-call marker on. */
class ToolCallStreamer {
  private state: 'lead' | 'text' | 'calls';
  private held = '';

  constructor(private readonly parser: ToolCallParser) {
    this.state = parser.leadMarkers.length > 0 ? 'lead' : 'text';
  }

  push(text: string): string {
    if (this.state === 'calls') {
      this.held += text;
      return '';
    }
    const buf = this.held + text;
    this.held = '';
    if (this.state === 'lead') {
      const lead = buf.trimStart();
      if (lead === '' || this.parser.leadMarkers.some((m) => m.startsWith(lead) && m !== lead)) {
        this.held = buf;
        return '';
      }
      if (this.parser.leadMarkers.some((m) => lead.startsWith(m))) {
        this.state = 'calls';
        this.held = buf;
        return '';
      }
      this.state = 'text';
    }
    let first = -1;
    for (const m of this.parser.markers) {
      const at = buf.indexOf(m);
      if (at >= 0 && (first < 0 || at < first)) first = at;
    }
    if (first >= 0) {
      this.state = 'calls';
      this.held = buf.slice(first);
      return buf.slice(0, first);
    }
    const keep = partialTagLength(buf, this.parser.markers);
    this.held = buf.slice(buf.length - keep);
    return buf.slice(0, buf.length - keep);
  }

  finish(): { content: string; calls: ParsedToolCall[] } {
    const held = this.held;
    this.held = '';
    if (this.state !== 'calls') return { content: held, calls: [] };
    return this.parser.parse(held);
  }
}

export class ChatOutput {
  private readonly reasoning: ReasoningSplitter | undefined;
  private readonly tools: ToolCallStreamer | undefined;

  constructor(private readonly config: ChatOutputConfig) {
    this.reasoning = config.reasoningParser && new ReasoningSplitter(config.reasoningParser, config.chatTemplateKwargs);
    this.tools = config.toolParser && new ToolCallStreamer(config.toolParser);
  }

  get splitsReasoning(): boolean {
    return this.reasoning !== undefined;
  }

  push(text: string): ChatDelta {
    const r = this.reasoning ? this.reasoning.push(text) : { reasoning: '', content: text };
    return { reasoning: r.reasoning, content: this.tools && r.content ? this.tools.push(r.content) : r.content };
  }

  finish(): ChatEnd {
    const r = this.reasoning ? this.reasoning.finish() : { reasoning: '', content: '' };
    let content = this.tools && r.content ? this.tools.push(r.content) : r.content;
    let calls: ParsedToolCall[] = [];
    if (this.tools) {
      const end = this.tools.finish();
      content += end.content;
      calls = this.config.parallelToolCalls === false ? end.calls.slice(0, 1) : end.calls;
    }
    return { reasoning: r.reasoning, content, toolCalls: calls.map((c) => ({ id: toolCallId(), type: 'function', function: { name: c.name, arguments: c.arguments } })) };
  }
}
