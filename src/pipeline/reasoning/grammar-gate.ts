// A chat's reasoning as the request's grammar must respect it: has the prompt already
// closed the reasoning (the template's thinking-off form, e.g. Qwen3's "<think>\n\n</think>"
// or Gemma 4's empty thought channel), and, when it has not, the token ids at which the
// engine starts the grammar (engine/grammar/gate.ts): vLLM's rule, structured output only
// after the reasoning parser's end token. The splitter starts from the same answer.
import type { GrammarGate } from '../../engine/grammar/gate.js';
import type { Tokenizer } from '../../tokenizer/tokenizer.js';
import { reasoningFormat, thinkingTurnedOff } from './formats.js';
import type { ReasoningParserName } from './parser.js';

export interface ReasoningPlan {
  readonly parser: ReasoningParserName;
  /** reasoning is over before the output starts: the output is content (and the grammar applies at once) */
  readonly ended: boolean;
  /** where a grammar waits for the reasoning to end; undefined: it applies from the first token */
  readonly gate: GrammarGate | undefined;
}

type MarkerTokenizer = Pick<Tokenizer, 'encode' | 'decode'>;

function idsOf(tokenizer: MarkerTokenizer, text: string): number[] {
  return tokenizer.encode(text, { addSpecial: false, parseSpecial: true });
}

/** whether the prompt ends with `marker`'s ids, after any whitespace-only tokens */
function endsWithMarker(tokenizer: MarkerTokenizer, promptIds: readonly number[], marker: readonly number[]): boolean {
  let end = promptIds.length;
  while (end > 0 && tokenizer.decode([promptIds[end - 1]!], { skipSpecial: false }).trim() === '' && !marker.includes(promptIds[end - 1]!)) end--;
  if (end < marker.length) return false;
  return marker.every((id, i) => promptIds[end - marker.length + i] === id);
}

export function planReasoning(tokenizer: MarkerTokenizer, parser: ReasoningParserName, kwargs: Readonly<Record<string, unknown>> | undefined, promptIds: readonly number[]): ReasoningPlan {
  const f = reasoningFormat(parser);
  const endIds = idsOf(tokenizer, f.end);
  const ended = thinkingTurnedOff(parser, kwargs) || endsWithMarker(tokenizer, promptIds, endIds);
  if (ended) return { parser, ended, gate: undefined };
  if (!f.modelOpens) return { parser, ended, gate: { reasoningEnd: endIds } };
  // the model may open reasoning or not: the gate lets its start token through at the first position
  const start = f.startToken !== undefined ? idsOf(tokenizer, f.startToken) : [];
  return { parser, ended, gate: start.length === 1 ? { reasoningEnd: endIds, reasoningStart: start[0]! } : undefined };
}
