// A draft model proposes token ids the target verifies: both must mean the same text by the
// same id. Checked once at start, before anything runs.
import { InvalidArgumentError } from '../../errors.js';
import type { ModelConfig } from '../../model/weights.js';
import type { Tokenizer } from '../../tokenizer/tokenizer.js';

export interface VocabularyOwner {
  readonly path: string;
  readonly config: ModelConfig;
  readonly tokenizer: Pick<Tokenizer, 'vocabSize' | 'tokenText'>;
}

/**
 * Refuses a draft model whose vocabulary differs from the target's: the logits width, the
 * tokenizer's size, and every token's vocabulary string must agree. The error names both
 * files and the first token that differs.
 */
export function checkDraftVocabulary(target: VocabularyOwner, draft: VocabularyOwner): void {
  const refuse = (why: string): never => {
    throw new InvalidArgumentError(`--speculative-config: the draft model ${draft.path} does not share the vocabulary of ${target.path}: ${why}`);
  };
  if (draft.config.vocabSize !== target.config.vocabSize) refuse(`${draft.config.vocabSize} logits against ${target.config.vocabSize}`);
  if (draft.tokenizer.vocabSize !== target.tokenizer.vocabSize) refuse(`${draft.tokenizer.vocabSize} tokens against ${target.tokenizer.vocabSize}`);
  for (let id = 0; id < target.tokenizer.vocabSize; id++) {
    const a = target.tokenizer.tokenText(id);
    const b = draft.tokenizer.tokenText(id);
    if (a !== b) refuse(`token ${id} is ${JSON.stringify(b)} in the draft, ${JSON.stringify(a)} in the target`);
  }
}
