// A text prompt whose bytes alone prove it longer than the context is refused before it is
// tokenized (tokenizing megabytes blocks the serving thread for seconds): no token covers
// more bytes than the vocabulary's longest, so a prompt has at least bytes / longest tokens.
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { ContextLengthExceededError } from '../errors.js';

const longest = new WeakMap<Tokenizer, number>();

/** bytes of the vocabulary's longest token (special tokens included), computed once per tokenizer */
export function maxTokenBytes(tokenizer: Tokenizer): number {
  let max = longest.get(tokenizer);
  if (max === undefined) {
    max = 1;
    for (let id = 0; id < tokenizer.vocabSize; id++) max = Math.max(max, tokenizer.tokenBytes(id).length, Buffer.byteLength(tokenizer.tokenText(id) ?? ''));
    longest.set(tokenizer, max);
  }
  return max;
}

/** Throws context_length_exceeded when `text` must have at least `limit` tokens. */
export function checkPromptBytes(tokenizer: Tokenizer, text: string, limit: number, param: string): void {
  // a UTF-16 unit is at most 3 UTF-8 bytes: skip the byte count while that bound cannot trip
  if (text.length * 3 < limit * maxTokenBytes(tokenizer)) return;
  const bytes = Buffer.byteLength(text, 'utf8');
  const atLeast = Math.ceil(bytes / maxTokenBytes(tokenizer));
  if (atLeast >= limit) {
    throw new ContextLengthExceededError(
      `This model's maximum context length is ${limit} tokens. However, your request has at least ${atLeast} input tokens (${bytes} bytes). Please reduce the length of the input.`,
      param,
    );
  }
}
