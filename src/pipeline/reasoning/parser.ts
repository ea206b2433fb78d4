// Reasoning parsers (vLLM's --reasoning-parser qwen3 | deepseek_r1, vllm/reasoning/; and
// Gemma 4's thought channel, formats.ts): the text inside the reasoning markers is
// `reasoning_content`, the rest `content`. Where the template may open reasoning in the
// prompt (<think> models), output before the end marker is reasoning even without an opening
// tag; a leading start marker the model writes itself is dropped. With no end marker at all
// the output is reasoning (cut short), except when the request turned thinking off
// (chat_template_kwargs.enable_thinking: false for qwen3) or the prompt already closed the
// reasoning: then it is content. Where the model opens reasoning itself (Gemma 4), output
// that does not begin with the start marker is content. The splitter works on text, so a
// marker split across tokens is held back until it is whole.
// openai_gptoss (vLLM's name) reads gpt-oss's harmony channels instead (harmony.ts).
import { partialTagLength } from '../partial-tag.js';
import { reasoningFormat, thinkingTurnedOff } from './formats.js';
import type { ReasoningFormat } from './formats.js';
import { HarmonySplitter } from './harmony.js';

export const REASONING_PARSERS = ['qwen3', 'deepseek_r1', 'gemma4', 'openai_gptoss'] as const;
export type ReasoningParserName = (typeof REASONING_PARSERS)[number];

export interface ReasoningDelta {
  reasoning: string;
  content: string;
}

export interface SplitterOptions {
  /** the prompt ends with the end marker: reasoning is over before the output starts */
  readonly reasoningEnded?: boolean | undefined;
}

/** One choice's output, split as it streams. */
export class ReasoningSplitter {
  private readonly f: ReasoningFormat;
  /** 'opened': just after a start marker, whose trailing whitespace may still come */
  private state: 'lead' | 'opened' | 'reasoning' | 'content';
  private held = '';
  private readonly harmony: HarmonySplitter | undefined;

  constructor(parser: ReasoningParserName, chatTemplateKwargs: Readonly<Record<string, unknown>> | undefined, opts: SplitterOptions = {}) {
    this.f = reasoningFormat(parser);
    this.state = thinkingTurnedOff(parser, chatTemplateKwargs) || opts.reasoningEnded === true ? 'content' : 'lead';
    this.harmony = parser === 'openai_gptoss' ? new HarmonySplitter() : undefined;
  }

  push(text: string): ReasoningDelta {
    if (this.harmony) return this.harmony.push(text);
    const out: ReasoningDelta = { reasoning: '', content: '' };
    let buf = this.held + text;
    this.held = '';
    const { start, end } = this.f;
    for (;;) {
      if (this.state === 'lead') {
        // whitespace, then perhaps the model's own start marker: wait until that is decided
        const lead = buf.trimStart();
        if (lead.startsWith(start)) {
          buf = lead.slice(start.length);
          this.state = 'opened';
        } else if (start.startsWith(lead)) {
          this.held = buf;
          return out;
        } else {
          this.state = this.f.modelOpens ? 'content' : 'reasoning';
        }
      }
      if (this.state === 'opened') {
        if (this.f.trimAfterStart) {
          buf = buf.trimStart();
          if (buf === '') return out;
        }
        this.state = 'reasoning';
      }
      if (this.state === 'reasoning') {
        const at = buf.indexOf(end);
        if (at < 0) {
          const keep = partialTagLength(buf, [end]);
          out.reasoning += buf.slice(0, buf.length - keep);
          this.held = buf.slice(buf.length - keep);
          return out;
        }
        out.reasoning += buf.slice(0, at);
        buf = buf.slice(at + end.length);
        this.state = 'content';
      }
      // content
      if (!this.f.repeats) {
        out.content += buf;
        return out;
      }
      const s = buf.indexOf(start);
      const e = buf.indexOf(end);
      if (s < 0 && e < 0) {
        const keep = partialTagLength(buf, [start, end]);
        out.content += buf.slice(0, buf.length - keep);
        this.held = buf.slice(buf.length - keep);
        return out;
      }
      if (e >= 0 && (s < 0 || e < s)) {
        // a stray end marker: dropped
        out.content += buf.slice(0, e);
        buf = buf.slice(e + end.length);
      } else {
        out.content += buf.slice(0, s);
        buf = buf.slice(s + start.length);
        this.state = 'opened';
      }
    }
  }

  /** the end of the output: text held back for a marker that never completed */
  finish(): ReasoningDelta {
    if (this.harmony) return this.harmony.finish();
    const held = this.held;
    this.held = '';
    if (this.state === 'content' || (this.state === 'lead' && this.f.modelOpens)) return { reasoning: '', content: held };
    return { reasoning: held, content: '' };
  }
}

/** A whole output split at once (the non-streaming response). */
export function splitReasoning(parser: ReasoningParserName, kwargs: Readonly<Record<string, unknown>> | undefined, text: string, opts: SplitterOptions = {}): ReasoningDelta {
  const s = new ReasoningSplitter(parser, kwargs, opts);
  const a = s.push(text);
  const b = s.finish();
  return { reasoning: a.reasoning + b.reasoning, content: a.content + b.content };
}

/** whether a parser reads markup made of special tokens, which the detokenizer must then keep */
export function parserNeedsSpecialTokens(parser: ReasoningParserName | undefined): boolean {
  return parser === 'openai_gptoss';
}
