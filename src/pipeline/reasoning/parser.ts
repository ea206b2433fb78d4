// Reasoning parsers (vLLM's --reasoning-parser qwen3 | deepseek_r1, vllm/reasoning/): the
// text inside <think>…</think> is `reasoning_content`, the rest `content`. Both models'
// templates may open <think> in the prompt, so output before </think> is reasoning even
// without an opening tag; a leading <think> the model writes itself is dropped. With no
// </think> at all the output is reasoning (cut short), except for qwen3 when the request
// turned thinking off (chat_template_kwargs.enable_thinking: false): then it is content.
// The splitter works on text, so a tag split across tokens is held back until it is whole.
// openai_gptoss (vLLM's name) reads gpt-oss's harmony channels instead (harmony.ts).
import { partialTagLength } from '../partial-tag.js';
import { HarmonySplitter, isHarmonyTemplate } from './harmony.js';

export const REASONING_PARSERS = ['qwen3', 'deepseek_r1', 'openai_gptoss'] as const;
export type ReasoningParserName = (typeof REASONING_PARSERS)[number];

const START = '<think>';
const END = '</think>';

export interface ReasoningDelta {
  reasoning: string;
  content: string;
}

/** One choice's output, split as it streams. */
export class ReasoningSplitter {
  private state: 'lead' | 'reasoning' | 'content';
  private held = '';
  private readonly harmony: HarmonySplitter | undefined;

  constructor(parser: ReasoningParserName, chatTemplateKwargs: Readonly<Record<string, unknown>> | undefined) {
    const thinkingOff = parser === 'qwen3' && chatTemplateKwargs?.enable_thinking === false;
    this.state = thinkingOff ? 'content' : 'lead';
    this.harmony = parser === 'openai_gptoss' ? new HarmonySplitter() : undefined;
  }

  push(text: string): ReasoningDelta {
    if (this.harmony) return this.harmony.push(text);
    const out: ReasoningDelta = { reasoning: '', content: '' };
    let buf = this.held + text;
    this.held = '';
    if (this.state === 'lead') {
      // whitespace, then perhaps the model's own <think>: wait until that is decided
      const lead = buf.trimStart();
      if (lead.startsWith(START)) {
        buf = lead.slice(START.length);
        this.state = 'reasoning';
      } else if (START.startsWith(lead)) {
        this.held = buf;
        return out;
      } else {
        this.state = 'reasoning';
      }
    }
    if (this.state === 'reasoning') {
      const end = buf.indexOf(END);
      if (end < 0) {
        const keep = partialTagLength(buf, [END]);
        out.reasoning = buf.slice(0, buf.length - keep);
        this.held = buf.slice(buf.length - keep);
        return out;
      }
      out.reasoning = buf.slice(0, end);
      buf = buf.slice(end + END.length);
      this.state = 'content';
    }
    out.content = buf;
    return out;
  }

  /** the end of the output: text held back for a tag that never completed */
  finish(): ReasoningDelta {
    if (this.harmony) return this.harmony.finish();
    const held = this.held;
    this.held = '';
    if (this.state === 'content') return { reasoning: '', content: held };
    return { reasoning: held, content: '' };
  }
}

/** A whole output split at once (the non-streaming response). */
export function splitReasoning(parser: ReasoningParserName, kwargs: Readonly<Record<string, unknown>> | undefined, text: string): ReasoningDelta {
  const s = new ReasoningSplitter(parser, kwargs);
  const a = s.push(text);
  const b = s.finish();
  return { reasoning: a.reasoning + b.reasoning, content: a.content + b.content };
}

/** The parser a chat template implies when none is named: gpt-oss's harmony channels are always
 *  split (as vLLM and llama-server do for gpt-oss); <think> templates only on --reasoning-parser. */
export function reasoningParserForTemplate(template: string | undefined): ReasoningParserName | undefined {
  return isHarmonyTemplate(template) ? 'openai_gptoss' : undefined;
}

/** whether a parser reads markup made of special tokens, which the detokenizer must then keep */
export function parserNeedsSpecialTokens(parser: ReasoningParserName | undefined): boolean {
  return parser === 'openai_gptoss';
}
