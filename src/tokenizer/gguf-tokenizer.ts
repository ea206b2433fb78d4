// The tokenizer stored in a GGUF file's metadata: dispatch on tokenizer.ggml.model ("llama"
// SentencePiece BPE, "gpt2" byte-level BPE, "gemma4" SentencePiece-style BPE, "bert"
// WordPiece), with llama.cpp's defaults where keys are absent (llama_vocab::load).
import { ModelFormatError, UnsupportedModelError } from '../errors.js';
import { MetadataReader } from '../model/gguf-metadata.js';
import type { GGUFMetadata } from '../model/gguf-metadata.js';
import { BpeTokenizer } from './bpe.js';
import { endOfGeneration } from './eog.js';
import { knownPreTokenizers, preTokenizerSpec } from './pre-tokenizers.js';
import { SpmTokenizer } from './spm.js';
import { TokenType } from './tokenizer.js';
import type { Tokenizer } from './tokenizer.js';
import type { VocabSpec } from './vocab-base.js';
import { WpmTokenizer } from './wpm.js';

const MODELS = ['llama', 'gpt2', 'gemma4', 'bert'];

export function tokenizerFromGGUF(file: string, metadata: GGUFMetadata): Tokenizer {
  const md = new MetadataReader(file, metadata);
  const model = md.optionalString('tokenizer.ggml.model');
  if (model === undefined) throw new ModelFormatError(file, 'has no tokenizer (tokenizer.ggml.model missing)');
  if (!MODELS.includes(model)) {
    throw new UnsupportedModelError(file, `tokenizer model "${model}" is not supported (loom reads ${MODELS.map((m) => `"${m}"`).join(', ')})`);
  }
  const tokens = md.strings('tokenizer.ggml.tokens');
  if (tokens === undefined || tokens.length === 0) throw new ModelFormatError(file, 'tokenizer.ggml.tokens is missing or empty');
  const types = md.numbers('tokenizer.ggml.token_type');
  if (types !== undefined && types.length !== tokens.length) {
    throw new ModelFormatError(file, `tokenizer.ggml.token_type has ${types.length} entries for ${tokens.length} tokens`);
  }
  const spm = model === 'llama';
  const bert = model === 'bert';
  // gemma4 names its pre-tokenizer by its model; SPM and WordPiece have none
  const pre = spm || bert ? undefined : model === 'gemma4' ? 'gemma4' : md.string('tokenizer.ggml.pre', 'default');
  const preSpec = pre === undefined ? undefined : preTokenizerSpec(pre);
  if (pre !== undefined && preSpec === undefined) {
    throw new UnsupportedModelError(file, `unknown pre-tokenizer "${pre}" (tokenizer.ggml.pre); known: ${knownPreTokenizers().join(', ')}`);
  }
  const id = (key: string, fallback: number | undefined): number | undefined => md.optionalNumber(key) ?? fallback;
  // llama.cpp defaults: SPM bos 1 / eos 2 / unk 0, add_bos; GPT-2 BPE bos = eos = 11, add_bos
  // per pre type; gemma4 none; BERT [CLS] 101 as bos, [UNK] 100, [SEP] 102
  const defaults = spm ? [1, 2, 0] : bert ? [101, undefined, 100] : model === 'gemma4' ? [undefined, undefined, undefined] : [11, 11, undefined];
  const bosId = id('tokenizer.ggml.bos_token_id', defaults[0]);
  const eosId = id('tokenizer.ggml.eos_token_id', defaults[1]);
  const eotId = id('tokenizer.ggml.eot_token_id', undefined);
  const eomId = id('tokenizer.ggml.eom_token_id', undefined);
  const eog = endOfGeneration(tokens, types, [eosId, eotId, eomId].filter((i) => i !== undefined));
  const base: VocabSpec = {
    tokens,
    types: eog.types,
    bosId,
    eosId,
    unkId: id('tokenizer.ggml.unknown_token_id', defaults[2]),
    // Gemma 4 always adds BOS (llama.cpp overrides a false add_bos_token); WordPiece always adds [CLS]
    addBos: model === 'gemma4' || bert || md.bool('tokenizer.ggml.add_bos_token', spm ? true : (preSpec?.addBosDefault ?? false)),
    addEos: md.bool('tokenizer.ggml.add_eos_token', false),
    stopIds: eog.stopIds,
    chatTemplate: md.optionalString('tokenizer.chat_template'),
    rstripIds: phi3Rstrip(md.optionalString('general.name'), tokens, eog.types),
  };
  if (spm) {
    const scores = md.numbers('tokenizer.ggml.scores');
    if (scores !== undefined && scores.length !== tokens.length) {
      throw new ModelFormatError(file, `tokenizer.ggml.scores has ${scores.length} entries for ${tokens.length} tokens`);
    }
    return new SpmTokenizer({ ...base, scores, addSpacePrefix: md.bool('tokenizer.ggml.add_space_prefix', true) });
  }
  if (bert) {
    const lowercase = md.bool('tokenizer.ggml.normalizer.lowercase', true);
    return new WpmTokenizer({
      ...base,
      lowercase,
      stripAccents: md.bool('tokenizer.ggml.normalizer.strip_accents', lowercase),
      sepId: id('tokenizer.ggml.seperator_token_id', 102),
    });
  }
  const merges = md.strings('tokenizer.ggml.merges');
  if (merges === undefined) throw new ModelFormatError(file, `tokenizer.ggml.merges is missing (needed by a ${model} tokenizer)`);
  return new BpeTokenizer({ ...base, merges, preTokenizer: preSpec! });
}

/**
 * llama.cpp gives every special token of a model whose general.name says Phi-3 the RSTRIP
 * attribute (whitespace after it is dropped when tokenizing), except <unk>, <s> and
 * <|endoftext|>; </s> gets it too (llama_vocab::impl::load, "set attributes by model name").
 */
function phi3Rstrip(name: string | undefined, tokens: readonly string[], types: readonly number[] | undefined): ReadonlySet<number> | undefined {
  const lower = name?.toLowerCase() ?? '';
  if (!lower.includes('phi-3') && !lower.includes('phi3')) return undefined;
  const out = new Set<number>();
  tokens.forEach((t, i) => {
    const ty = types?.[i] ?? TokenType.NORMAL;
    if (ty === TokenType.CONTROL || ty === TokenType.USER_DEFINED || ty === TokenType.UNKNOWN || t === '</s>') out.add(i);
  });
  for (const keep of ['<unk>', '<s>', '<|endoftext|>']) {
    const at = tokens.indexOf(keep);
    if (at >= 0) out.delete(at);
  }
  return out;
}
