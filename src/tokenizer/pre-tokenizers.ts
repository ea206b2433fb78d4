// Pre-tokenizers per GGUF `tokenizer.ggml.pre`, as llama.cpp selects them (llama_vocab::load
// maps the name to a pre type; llm_tokenizer_bpe gives each type its regexes and flags).
// The regexes are llama.cpp's strings; regex-split.ts runs them the way llama.cpp does.
import { compileRegexSplit } from './regex-split.js';

const GPT2 = String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`;
const LLAMA3 = String.raw`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
// o200k (GPT-4o, Phi-4-mini, Llama 4): case-aware words; llama.cpp's rewrite of (?i:…) contractions
const GPT4O = [
  String.raw`[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?`,
  String.raw`[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?`,
  String.raw`\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
].join('|');
const QWEN2 = String.raw`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const QWEN35 = String.raw`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const DIGIT = String.raw`\p{N}`;
const CJK = '[一-龥ࠀ-一가-퟿]+';

const DEFAULT = [String.raw`[\p{P}\$\+<=>\^~\|]+`, GPT2, String.raw`\p{N}+`, '[0-9][0-9][0-9]'];
const FALCON = [String.raw`[\p{P}\$\+<=>\^~\|` + '`' + ']+', GPT2, '[0-9][0-9][0-9]'];
const DEEPSEEK_LLM = [
  '[\r\n]',
  String.raw`\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+`,
  String.raw`\s?[!-/:-~！-／：-～‘-‟　-。]+`,
  String.raw`\s+$`,
  CJK,
  String.raw`\p{N}+`,
];
const DEEPSEEK_CODER = ['[\r\n]', String.raw`\s?\p{L}+`, String.raw`\s?\p{P}+`, CJK, DIGIT];

export interface PreTokenizerSpec {
  /** llama.cpp's regexes, applied in order */
  readonly regexes: readonly string[];
  /** a whole pre-token that is a vocab entry is taken as is (llama.cpp ignore_merges) */
  readonly ignoreMerges: boolean;
  /** llama.cpp's add_bos default for this pre type (the file's add_bos_token overrides) */
  readonly addBosDefault: boolean;
  /**
   * SentencePiece-style BPE (Gemma 4): spaces become ▁ before splitting, symbols are raw
   * UTF-8 (no GPT-2 byte mapping), unknown bytes fall back to <0xXX>, and a run of newlines
   * that is a token is taken whole. false = GPT-2 byte-level BPE.
   */
  readonly spmStyle: boolean;
}

const spec = (regexes: string[], flags: Partial<Omit<PreTokenizerSpec, 'regexes'>> = {}): PreTokenizerSpec => ({
  regexes,
  ignoreMerges: flags.ignoreMerges ?? false,
  addBosDefault: flags.addBosDefault ?? false,
  spmStyle: flags.spmStyle ?? false,
});
const llama3 = spec([LLAMA3], { ignoreMerges: true, addBosDefault: true });

const SPECS: Readonly<Record<string, PreTokenizerSpec>> = {
  default: spec(DEFAULT),
  'gpt-2': spec([GPT2]),
  gpt2: spec([GPT2]),
  'phi-2': spec([GPT2]),
  'roberta-bpe': spec([GPT2]),
  mpt: spec([GPT2]),
  olmo: spec([GPT2]),
  'jina-es': spec([GPT2]),
  'jina-de': spec([GPT2]),
  gigachat: spec([GPT2]),
  'a.x-4.0': spec([GPT2]),
  mellum: spec([GPT2]),
  exaone4: spec([GPT2]),
  'llama-bpe': llama3,
  llama3,
  'llama-v3': llama3,
  falcon3: llama3,
  'falcon-h1': llama3,
  pixtral: llama3,
  'midm-2.0': llama3,
  lfm2: llama3,
  'jina-v5-nano': llama3,
  dbrx: spec([LLAMA3]),
  'smaug-bpe': spec([LLAMA3]),
  qwen2: spec([QWEN2]),
  'deepseek-r1-qwen': spec([QWEN2]),
  kormo: spec([QWEN2]),
  f2llmv2: spec([QWEN2]),
  'gpt-4o': spec([GPT4O]),
  llama4: spec([GPT4O]),
  megrez: spec([QWEN2]),
  stablelm2: spec([QWEN2]),
  qwen35: spec([QWEN35]),
  smollm: spec([DIGIT, GPT2]),
  starcoder: spec([DIGIT, GPT2]),
  refact: spec([DIGIT, GPT2]),
  'command-r': spec([DIGIT, GPT2]),
  codeshell: spec([DIGIT, GPT2]),
  exaone: spec([DIGIT, GPT2]),
  'minerva-7b': spec([DIGIT, GPT2]),
  mellum2: spec([DIGIT, GPT2]),
  falcon: spec(FALCON),
  'deepseek-llm': spec(DEEPSEEK_LLM),
  'deepseek-coder': spec(DEEPSEEK_CODER),
  gemma4: spec([String.raw`[^\n]+|[\n]+`], { spmStyle: true, addBosDefault: true }),
};

/** the spec for a `tokenizer.ggml.pre` value, undefined when loom does not know it */
export function preTokenizerSpec(pre: string): PreTokenizerSpec | undefined {
  return Object.hasOwn(SPECS, pre) ? SPECS[pre] : undefined;
}

export const knownPreTokenizers = (): string[] => Object.keys(SPECS);

/** split text into pre-tokens (concatenation = text) */
export function compilePreTokenizer(spec: PreTokenizerSpec): (text: string) => string[] {
  return compileRegexSplit(spec.regexes);
}
