// How each reasoning parser's model marks its reasoning (vLLM's --reasoning-parser names):
// the markers around it, whether the prompt may already have opened it, and the markers the
// engine's grammar gate watches by token id (engine/grammar/gate.ts).
import type { ReasoningParserName } from './parser.js';
import { isHarmonyTemplate } from './harmony.js';

export interface ReasoningFormat {
  /** the text that opens reasoning */
  readonly start: string;
  /** the text that ends it */
  readonly end: string;
  /** whitespace after the start marker is dropped (Gemma 4 writes "thought\n") */
  readonly trimAfterStart: boolean;
  /**
   * the model opens reasoning itself, so output that does not begin with `start` is content;
   * false: the template may open it in the prompt, so output before `end` is reasoning
   */
  readonly modelOpens: boolean;
  /** later blocks in the content are reasoning too, a stray `end` is dropped (Gemma 4 may append an empty thought) */
  readonly repeats: boolean;
  /** the one token that opens reasoning, as the grammar gate watches for it (modelOpens formats) */
  readonly startToken?: string;
}

const THINK = { start: '<think>', end: '</think>', trimAfterStart: false, modelOpens: false, repeats: false };

/**
 * Gemma 4 (its chat template; llama.cpp's common/parsers/gemma4.cpp): the model opens
 * `<|channel>thought\n…<channel|>` itself when the template's system turn asks it to think
 * (<|think|>); with thinking off, the generation prompt already holds the empty channel.
 */
const GEMMA4: ReasoningFormat = { start: '<|channel>thought', end: '<channel|>', trimAfterStart: true, modelOpens: true, repeats: true, startToken: '<|channel>' };

/**
 * gpt-oss's harmony channels (split by harmony.ts, not by these markers): the grammar gate waits
 * for the final channel's header, so a structured answer follows the analysis message.
 */
const HARMONY: ReasoningFormat = {
  start: '<|channel|>analysis<|message|>',
  end: '<|start|>assistant<|channel|>final<|message|>',
  trimAfterStart: false,
  modelOpens: true,
  repeats: false,
  startToken: '<|channel|>',
};

const FORMATS: Record<ReasoningParserName, ReasoningFormat> = { qwen3: THINK, deepseek_r1: THINK, gemma4: GEMMA4, openai_gptoss: HARMONY };

export function reasoningFormat(name: ReasoningParserName): ReasoningFormat {
  return FORMATS[name];
}

/**
 * The reasoning parser a chat template's own markers imply, when --reasoning-parser is not
 * given: Gemma 4's and gpt-oss's harmony (as vLLM and llama-server split gpt-oss always), whose
 * channel markers would otherwise reach the content (a <think> template still needs the flag,
 * as in vLLM).
 */
export function reasoningParserForTemplate(template: string | undefined): ReasoningParserName | undefined {
  if (template === undefined) return undefined;
  if (isHarmonyTemplate(template)) return 'openai_gptoss';
  if (template.includes('<|channel>thought') && template.includes('<|tool_call>')) return 'gemma4';
  return undefined;
}

/** Whether the request turned thinking off where the parser reads the switch (Qwen3's enable_thinking). */
export function thinkingTurnedOff(name: ReasoningParserName, kwargs: Readonly<Record<string, unknown>> | undefined): boolean {
  return name === 'qwen3' && kwargs?.enable_thinking === false;
}
