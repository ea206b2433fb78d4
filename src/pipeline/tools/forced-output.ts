// The output of a forced tool choice (forced.ts) as tool calls, streamed while generated.
// A named function's output is its arguments (one call, index 0); a "required" array is
// scanned (required-scan.ts): each call opens with its id and name once its parameters
// start, then its arguments follow as they come. A call cut off by max_tokens keeps its cut
// arguments and finish_reason "length" (as vLLM returns a cut named call); a "required"
// output cut before any call had a name stays content. The generic format ("auto" without
// a parser) is either such an array or {"response": text}, whose text is the content,
// streamed as the string grows (its escapes decoded, a cut escape held back).
import { parseRequiredCalls } from './forced.js';
import type { ForcedTools } from './forced.js';
import { toolCallId } from './openai-calls.js';
import type { OpenAIToolCall, ToolCallDelta } from './openai-calls.js';
import { RequiredCallScanner } from './required-scan.js';
import type { ScannedCall } from './required-scan.js';

export interface ForcedDelta {
  /** the generic reply's text, as it grows */
  content: string;
  toolCallDeltas: ToolCallDelta[];
}

export interface ForcedEnd {
  /** what a stream has not sent yet of the content */
  content: string;
  toolCalls: OpenAIToolCall[];
  /** what a stream has not sent yet */
  toolCallDeltas: ToolCallDelta[];
  /** true when the calls are complete (finish_reason "tool_calls") */
  complete: boolean;
}

/** one call's stream: the id, and how much of its arguments went out */
interface Sent {
  id: string;
  upTo: number;
}

export class ForcedCallOutput {
  private readonly scanner = new RequiredCallScanner();
  private readonly sent: Sent[] = [];

  constructor(private readonly forced: ForcedTools) {}

  /** the generic format's output until it shows whether it is calls ("[") or a reply ("{"); a reply's whole text */
  private held = '';
  private reply = false;
  /** how much of the reply's text went out */
  private replySent = 0;

  /** what to stream for this piece of output */
  push(piece: string): ForcedDelta {
    if (this.forced.kind === 'generic' && !this.scanner.text) {
      this.held += piece;
      const first = this.held.trimStart()[0];
      if (first === undefined || this.reply || first === '{') {
        this.reply ||= first === '{';
        return { content: this.reply ? this.replyDelta() : '', toolCallDeltas: [] };
      }
      piece = this.held;
      this.held = '';
    }
    this.scanner.push(piece);
    return { content: '', toolCallDeltas: this.deltas(false) };
  }

  /** the reply's text decoded so far, beyond what went out */
  private replyDelta(): string {
    const text = replySoFar(this.held);
    if (text === null || text.length <= this.replySent) return '';
    const out = text.slice(this.replySent);
    this.replySent = text.length;
    return out;
  }

  finish(): ForcedEnd {
    if (this.reply || (this.forced.kind === 'generic' && !this.scanner.text)) {
      // {"response": text}: the text is the content (of a reply cut short, what it wrote)
      const response = replyOf(this.held);
      const content = response === null ? (this.replySent > 0 ? '' : this.held) : response.slice(this.replySent);
      return { content, toolCalls: [], toolCallDeltas: [], complete: false };
    }
    const deltas = this.deltas(true);
    const text = this.scanner.text;
    const calls = this.calls();
    const toolCalls = calls.map(({ name, args }, i): OpenAIToolCall => ({ id: this.sent[i]!.id, type: 'function', function: { name, arguments: args } }));
    const complete = this.forced.kind === 'named' ? isJson(text) : parseRequiredCalls(text) !== null;
    if (toolCalls.length === 0) return { content: text, toolCalls, toolCallDeltas: [], complete: false };
    return { content: '', toolCalls, toolCallDeltas: deltas, complete };
  }

  /** the calls so far: name, arguments text, and how far the arguments may be sent */
  private calls(): { name: string; args: string; upTo: number }[] {
    const text = this.scanner.text;
    if (this.forced.kind === 'named') return [{ name: this.forced.name, args: text, upTo: text.length }];
    return this.scanner.calls
      .filter((c): c is ScannedCall & { name: string; argsStart: number } => c.name !== undefined && c.argsStart !== undefined)
      .map((c) => ({ name: c.name, args: text.slice(c.argsStart, c.argsEnd ?? text.length), upTo: this.scanner.sendable(c)! - c.argsStart }));
  }

  /** what is new since the last deltas; at the end, everything left */
  private deltas(end: boolean): ToolCallDelta[] {
    const out: ToolCallDelta[] = [];
    this.calls().forEach(({ name, args, upTo }, index) => {
      const limit = end ? args.length : upTo;
      let s = this.sent[index];
      if (!s) {
        if (this.forced.kind === 'named' && limit === 0 && !end) return; // open the call with its first piece
        // as vLLM streams a call: its id and name first, then the arguments in fragments
        s = this.sent[index] = { id: toolCallId(), upTo: 0 };
        out.push({ index, id: s.id, type: 'function', function: { name, arguments: '' } });
      }
      if (limit > s.upTo) {
        out.push({ index, function: { arguments: args.slice(s.upTo, limit) } });
        s.upTo = limit;
      }
    });
    return out;
  }
}

/** the text of {"response": text}; of a reply cut short, the text written so far */
function replyOf(text: string): string | null {
  try {
    const value = JSON.parse(text) as { response?: unknown };
    return typeof value.response === 'string' ? value.response : null;
  } catch {
    const open = /^\s*\{\s*"response"\s*:\s*"/.exec(text);
    if (!open) return null;
    // drop an escape cut in the middle, then read the string as far as it goes
    const rest = text.slice(open[0].length).replace(/\\(u[0-9a-fA-F]{0,3})?$/, '');
    try {
      return JSON.parse(`"${rest}"`) as string;
    } catch {
      return null;
    }
  }
}

/**
 * The text of a {"response": "…"} being written: its string up to the closing quote or as
 * far as it goes, without a cut escape or a lone high surrogate (its pair is still to come).
 * Null until the opening `{"response": "` is whole.
 */
function replySoFar(text: string): string | null {
  const open = /^\s*\{\s*"response"\s*:\s*"/.exec(text);
  if (!open) return null;
  let raw = '';
  let closed = false;
  for (let i = open[0].length; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      closed = true;
      break;
    }
    if (c !== '\\') {
      raw += c;
      continue;
    }
    const len = text[i + 1] === 'u' ? 6 : 2;
    if (i + len > text.length) break;
    raw += text.slice(i, i + len);
    i += len - 1;
  }
  let out: string;
  try {
    out = JSON.parse(`"${raw}"`) as string;
  } catch {
    return null;
  }
  const last = out.charCodeAt(out.length - 1);
  return !closed && last >= 0xd800 && last <= 0xdbff ? out.slice(0, -1) : out;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
