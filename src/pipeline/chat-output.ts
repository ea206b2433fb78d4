// One chat choice's generated text as OpenAI's message parts: reasoning (--reasoning-parser),
// content, and tool calls (the tool-call parser), both streamed and whole. Tool-call text is
// held back from the stream from its opening marker on and parsed when the choice ends (a
// complete, well-formed call per tool_calls delta); text that does not parse as calls goes
// out as content then. A forced tool choice (tool_choice "required", a named function, or
// the generic format) reads the grammar-shaped output as calls instead
// (tools/forced-output.ts): on a reasoning model, the content after the reasoning, where
// the engine started the grammar (engine/grammar/gate.ts).
import { partialTagLength } from './partial-tag.js';
import { ReasoningSplitter } from './reasoning/parser.js';
import type { ReasoningParserName } from './reasoning/parser.js';
import { ForcedCallOutput } from './tools/forced-output.js';
import type { ForcedTools } from './tools/forced.js';
import { openAICalls, wholeCallDeltas } from './tools/openai-calls.js';
import type { OpenAIToolCall, ToolCallDelta } from './tools/openai-calls.js';
import type { ParsedToolCall, ToolCallParser } from './tools/parsers.js';

export type { OpenAIToolCall, ToolCallDelta } from './tools/openai-calls.js';
export { toolCallId } from './tools/openai-calls.js';

export interface ChatOutputConfig {
  readonly reasoningParser?: ReasoningParserName | undefined;
  readonly chatTemplateKwargs?: Readonly<Record<string, unknown>> | undefined;
  /** the prompt closed the reasoning (pipeline/reasoning/grammar-gate.ts): the output is content */
  readonly reasoningEnded?: boolean | undefined;
  /** set when the request's tools may be called (tool_choice auto) and a parser is known */
  readonly toolParser?: ToolCallParser | undefined;
  /** set when tool_choice forces a call: the grammar shaped the content, no parser applies */
  readonly forcedTools?: ForcedTools | undefined;
  /** false: only the first call is kept (OpenAI's parallel_tool_calls) */
  readonly parallelToolCalls?: boolean;
}

export interface ChatDelta {
  reasoning: string;
  content: string;
  /** tool-call deltas to stream now */
  toolCallDeltas: ToolCallDelta[];
}

export interface ChatEnd extends ChatDelta {
  /** every call of the choice, whole (the message's tool_calls) */
  toolCalls: OpenAIToolCall[];
  /** OpenAI's finish_reason given the engine's */
  finishReason: string | null;
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
  private readonly forced: ForcedCallOutput | undefined;

  constructor(private readonly config: ChatOutputConfig) {
    this.forced = config.forcedTools && new ForcedCallOutput(config.forcedTools);
    this.reasoning = config.reasoningParser ? new ReasoningSplitter(config.reasoningParser, config.chatTemplateKwargs, { reasoningEnded: config.reasoningEnded }) : undefined;
    this.tools = !this.forced && config.toolParser ? new ToolCallStreamer(config.toolParser) : undefined;
  }

  get splitsReasoning(): boolean {
    return this.config.reasoningParser !== undefined;
  }

  push(text: string): ChatDelta {
    const r = this.reasoning ? this.reasoning.push(text) : { reasoning: '', content: text };
    if (this.forced) {
      const f = r.content ? this.forced.push(r.content) : { content: '', toolCallDeltas: [] };
      return { reasoning: r.reasoning, content: f.content, toolCallDeltas: f.toolCallDeltas };
    }
    return { reasoning: r.reasoning, content: this.tools && r.content ? this.tools.push(r.content) : r.content, toolCallDeltas: [] };
  }

  /** the choice's end; `reason` is the engine's finish reason */
  finish(reason: string | null): ChatEnd {
    const r = this.reasoning ? this.reasoning.finish() : { reasoning: '', content: '' };
    if (this.forced) {
      const last = r.content ? this.forced.push(r.content) : { content: '', toolCallDeltas: [] };
      const end = this.forced.finish();
      return {
        reasoning: r.reasoning,
        content: last.content + end.content,
        toolCalls: end.toolCalls,
        toolCallDeltas: [...last.toolCallDeltas, ...end.toolCallDeltas],
        finishReason: end.complete ? 'tool_calls' : reason,
      };
    }
    let content = this.tools && r.content ? this.tools.push(r.content) : r.content;
    let calls: ParsedToolCall[] = [];
    if (this.tools) {
      const end = this.tools.finish();
      content += end.content;
      calls = this.config.parallelToolCalls === false ? end.calls.slice(0, 1) : end.calls;
    }
    const toolCalls = openAICalls(calls);
    // vLLM: a parsed call makes the finish reason tool_calls, whatever ended the text
    return { reasoning: r.reasoning, content, toolCalls, toolCallDeltas: wholeCallDeltas(toolCalls), finishReason: toolCalls.length > 0 ? 'tool_calls' : reason };
  }
}
