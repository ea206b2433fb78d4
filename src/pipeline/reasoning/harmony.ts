// OpenAI's harmony format (gpt-oss), read from the output text with its special tokens kept, as
// vLLM's openai_gptoss reasoning parser and openai tool parser split it. The output is a run of
// messages, each a header then <|message|> then a body closed by <|end|>, <|call|> or <|return|>
// (or by the end of the output); messages after the first open with <|start|> and a role. The
// header names the channel (<|channel|>analysis | commentary | final) and perhaps a recipient
// (to=functions.NAME, before or after the channel) and a content type (<|constrain|>json).
// analysis bodies are reasoning; final bodies, and commentary bodies with no recipient (a
// preamble to the user), are content; a body addressed to functions.NAME is a tool call, passed
// on whole, once its message ends, as `to=functions.NAME<|message|>ARGS<|call|>` for the
// openai tool parser (tools/harmony-calls.ts). Text before any header (a template that opened
// the final channel itself) is content.
import { partialTagLength } from '../partial-tag.js';
import type { ReasoningDelta } from './parser.js';

const MESSAGE = '<|message|>';
const ENDS = ['<|end|>', '<|call|>', '<|return|>'];
const START = '<|start|>';
const CHANNEL = '<|channel|>';

/** whether a chat template speaks harmony (gpt-oss's) */
export function isHarmonyTemplate(template: string | undefined): boolean {
  return template !== undefined && template.includes(CHANNEL) && template.includes(MESSAGE) && template.includes('<|call|>');
}

type Route = 'reasoning' | 'content' | 'call';

export class HarmonySplitter {
  /** 'lead': nothing decided yet; 'header': reading a header; 'body': streaming a message body */
  private state: 'lead' | 'header' | 'body' = 'lead';
  private held = '';
  private route: Route = 'content';
  private recipient = '';
  /** a tool call's body, passed on when its message ends */
  private call = '';

  push(text: string): ReasoningDelta {
    const out: ReasoningDelta = { reasoning: '', content: '' };
    let buf = this.held + text;
    this.held = '';
    for (;;) {
      if (this.state === 'lead') {
        const lead = buf.trimStart();
        if (lead.startsWith(CHANNEL) || lead.startsWith(START) || lead.startsWith(' to=') || lead.startsWith('to=')) {
          this.state = 'header';
        } else if (lead === '' || [CHANNEL, START].some((m) => m.startsWith(lead))) {
          this.held = buf;
          return out;
        } else {
          this.openBody('');
        }
      }
      if (this.state === 'header') {
        const at = buf.indexOf(MESSAGE);
        if (at < 0) {
          this.held = buf;
          return out;
        }
        this.openBody(buf.slice(0, at));
        buf = buf.slice(at + MESSAGE.length);
      }
      // body
      let end = -1, tag = '';
      for (const t of ENDS) {
        const i = buf.indexOf(t);
        if (i >= 0 && (end < 0 || i < end)) (end = i), (tag = t);
      }
      if (end < 0) {
        const keep = partialTagLength(buf, ENDS);
        this.emit(buf.slice(0, buf.length - keep), out);
        this.held = buf.slice(buf.length - keep);
        return out;
      }
      this.emit(buf.slice(0, end), out);
      this.closeBody(out);
      buf = buf.slice(end + tag.length);
      this.state = 'header';
      if (buf === '') return out;
    }
  }

  /** the end of the output: a header never completed is dropped; a body in progress ends here */
  finish(): ReasoningDelta {
    const out: ReasoningDelta = { reasoning: '', content: '' };
    const held = this.held;
    this.held = '';
    if (this.state === 'lead') out.content = held;
    if (this.state === 'body') {
      this.emit(held, out);
      this.closeBody(out);
    }
    return out;
  }

  private openBody(header: string): void {
    const channel = /<\|channel\|>\s*([A-Za-z_]+)/.exec(header)?.[1];
    const recipient = /(?:^|\s)to=([^\s<]+)/.exec(header)?.[1] ?? '';
    this.recipient = recipient;
    this.call = '';
    this.route = recipient.startsWith('functions.') ? 'call' : channel === 'analysis' ? 'reasoning' : 'content';
    this.state = 'body';
  }

  private emit(text: string, out: ReasoningDelta): void {
    if (this.route === 'call') this.call += text;
    else if (this.route === 'reasoning') out.reasoning += text;
    else out.content += text;
  }

  private closeBody(out: ReasoningDelta): void {
    if (this.route === 'call') out.content += `to=${this.recipient}${MESSAGE}${this.call.trim()}<|call|>`;
    this.call = '';
  }
}
