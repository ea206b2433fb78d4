// The output of a forced tool choice (forced.ts) as tool calls. A named function's output
// is its arguments, so they stream as they are generated (one call, index 0); a "required"
// array is parsed when the choice ends, each call then one delta. An output cut off by
// max_tokens keeps finish_reason "length": a named call carries the cut arguments (as
// vLLM does), a cut array stays content.
import { parseRequiredCalls } from './forced.js';
import type { ForcedTools } from './forced.js';
import { openAICalls, toolCallId, wholeCallDeltas } from './openai-calls.js';
import type { OpenAIToolCall, ToolCallDelta } from './openai-calls.js';

export interface ForcedEnd {
  content: string;
  toolCalls: OpenAIToolCall[];
  /** what a stream has not sent yet */
  toolCallDeltas: ToolCallDelta[];
  /** true when the calls are complete (finish_reason "tool_calls") */
  complete: boolean;
}

export class ForcedCallOutput {
  private text = '';
  private readonly id = toolCallId();
  private opened = false;

  constructor(
    private readonly forced: ForcedTools,
    private readonly parallel: boolean,
  ) {}

  /** the deltas to stream for this piece of output */
  push(piece: string): ToolCallDelta[] {
    this.text += piece;
    if (this.forced.kind !== 'named' || piece === '') return [];
    return [this.namedDelta(piece)];
  }

  finish(): ForcedEnd {
    if (this.forced.kind === 'named') {
      const call: OpenAIToolCall = { id: this.id, type: 'function', function: { name: this.forced.name, arguments: this.text } };
      return { content: '', toolCalls: [call], toolCallDeltas: this.opened ? [] : [this.namedDelta('')], complete: isJson(this.text) };
    }
    const parsed = parseRequiredCalls(this.text);
    if (parsed === null) return { content: this.text, toolCalls: [], toolCallDeltas: [], complete: false };
    // the grammar already holds the array to one item without parallel_tool_calls
    const calls = openAICalls(this.parallel ? parsed : parsed.slice(0, 1));
    return { content: '', toolCalls: calls, toolCallDeltas: wholeCallDeltas(calls), complete: true };
  }

  private namedDelta(args: string): ToolCallDelta {
    if (this.opened) return { index: 0, function: { arguments: args } };
    this.opened = true;
    return { index: 0, id: this.id, type: 'function', function: { name: (this.forced as { name: string }).name, arguments: args } };
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
