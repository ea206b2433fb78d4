// End-of-generation tokens as llama.cpp finds them in a GGUF vocabulary (llama_vocab::load):
// tokens whose text is on its list end generation whatever their type and become control
// tokens (not split out of text unless special tokens are parsed, hidden when decoding
// without them), with its two exceptions: gpt-oss / Solar Open's <|end|> and Gemma 4's </s>;
// and harmony's markup tokens (<|channel|>, <|message|>, <|start|>, <|constrain|>) are rendered.
import { TokenType } from './tokenizer.js';

const EOG_TEXTS = new Set([
  '<|eot_id|>',
  '<|im_end|>',
  '<|end|>',
  '<|return|>', // o200k_harmony
  '<|call|>', // o200k_harmony
  '<|flush|>', // solar-open
  '<|calls|>', // solar-open
  '<end_of_turn>',
  '<|endoftext|>',
  '</s>',
  '<|eom_id|>',
  '<EOT>',
  '_<EOT>',
  '[EOT]', // Kimi-K2
  '[EOS]', // Kimi-K2
  '<|end_of_text|>',
  '<end_of_utterance>', // smoldocling
  '<eos>', // gemma4
  '<turn|>', // gemma4
  '<|tool_response>', // gemma4
  '<｜end▁of▁sentence｜>', // deepseek
  '[e~[', // minimax
]);

/** o200k_harmony's markup, which llama_vocab::load makes user-defined whatever the file says */
const HARMONY_MARKUP = ['<|channel|>', '<|message|>', '<|start|>', '<|constrain|>'];

/**
 * The stop ids (`declared`: eos / eot / eom ids, plus the listed texts) and the token types
 * with llama.cpp's overrides; `types` is returned as is when nothing changes.
 */
export function endOfGeneration(
  tokens: readonly string[],
  types: readonly number[] | undefined,
  declared: Iterable<number>,
): { stopIds: Set<number>; types: readonly number[] | undefined } {
  const stopIds = new Set(declared);
  let out: number[] | undefined;
  const setType = (i: number, t: number): void => {
    if ((out?.[i] ?? types?.[i] ?? TokenType.NORMAL) === t) return;
    out ??= types ? [...types] : new Array<number>(tokens.length).fill(TokenType.NORMAL);
    out[i] = t;
  };
  tokens.forEach((t, i) => {
    if (!EOG_TEXTS.has(t)) return;
    stopIds.add(i);
    setType(i, TokenType.CONTROL);
  });
  const stopOf = (text: string): number | undefined => [...stopIds].find((i) => tokens[i] === text);
  // gpt-oss and Solar Open: <|end|> ends a message, not the generation
  const end = stopOf('<|end|>');
  const call = stopOf('<|call|>') ?? stopOf('<|calls|>');
  if (end !== undefined && call !== undefined && (stopOf('<|return|>') !== undefined || stopOf('<|flush|>') !== undefined)) {
    stopIds.delete(end);
    setType(end, TokenType.USER_DEFINED);
  }
  // llama.cpp's "quick hack for gpt-oss": harmony's markup tokens are always rendered (user-defined)
  for (const text of HARMONY_MARKUP) {
    const i = tokens.indexOf(text);
    if (i >= 0) setType(i, TokenType.USER_DEFINED);
  }
  // Gemma 4: </s> is text
  const s = stopOf('</s>');
  if (s !== undefined && stopOf('<|tool_response>') !== undefined) {
    stopIds.delete(s);
    setType(s, TokenType.NORMAL);
  }
  return { stopIds, types: out ?? types };
}
