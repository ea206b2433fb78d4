// Tool calls as OpenAI's chat API spells them: whole (a message's tool_calls) and as the
// deltas a stream sends (the first for a call carries its id, type and name; later ones
// add to its arguments; the client joins them by index).
import { randomBytes } from 'node:crypto';
import type { ParsedToolCall } from './parsers.js';

export interface OpenAIToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** OpenAI-style tool call id: call_ and 24 random letters/digits */
export function toolCallId(): string {
  return 'call_' + [...randomBytes(24)].map((b) => ALNUM[b % ALNUM.length]).join('');
}

export function openAICalls(calls: readonly ParsedToolCall[]): OpenAIToolCall[] {
  return calls.map((c) => ({ id: toolCallId(), type: 'function', function: { name: c.name, arguments: c.arguments } }));
}

/** each call whole, as one delta */
export function wholeCallDeltas(calls: readonly OpenAIToolCall[]): ToolCallDelta[] {
  return calls.map((c, index) => ({ index, ...c }));
}
