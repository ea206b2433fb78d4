// Pre-tokenizer regexes per GGUF `tokenizer.ggml.pre`, as llama.cpp selects them
// (llm_tokenizer_bpe). Regexes apply in sequence; each splits every current piece into
// its matches and the gaps between them (gaps are kept as pieces, as llama.cpp does).

const GPT2 = String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`;
const LLAMA3 = String.raw`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
// o200k (GPT-4o, Phi-4-mini, Llama 4): case-aware words; llama.cpp's rewrite of (?i:…) contractions
const GPT4O = [
  String.raw`[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?`,
  String.raw`[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?`,
  String.raw`\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
].join('|');
const QWEN2 = String.raw`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;

export interface PreTokenizerSpec {
  /** applied in order */
  readonly regexes: readonly string[];
  /** a whole pre-token that is a vocab entry is taken as is (llama.cpp ignore_merges) */
  readonly ignoreMerges: boolean;
  /** llama.cpp's add_bos default for this pre type (the file's add_bos_token overrides) */
  readonly addBosDefault: boolean;
}

const spec = (regexes: string[], ignoreMerges = false, addBosDefault = false): PreTokenizerSpec => ({ regexes, ignoreMerges, addBosDefault });

const SPECS: Readonly<Record<string, PreTokenizerSpec>> = {
  default: spec([String.raw`[\p{P}\$\+<=>\^~\|]+`, GPT2, String.raw`\p{N}+`, '[0-9][0-9][0-9]']),
  'gpt-2': spec([GPT2]),
  gpt2: spec([GPT2]),
  'phi-2': spec([GPT2]),
  'roberta-bpe': spec([GPT2]),
  mpt: spec([GPT2]),
  olmo: spec([GPT2]),
  'llama-bpe': spec([LLAMA3], true, true),
  llama3: spec([LLAMA3], true, true),
  'llama-v3': spec([LLAMA3], true, true),
  falcon3: spec([LLAMA3], true, true),
  dbrx: spec([LLAMA3]),
  'smaug-bpe': spec([LLAMA3]),
  qwen2: spec([QWEN2]),
  'gpt-4o': spec([GPT4O]),
  llama4: spec([GPT4O]),
  megrez: spec([QWEN2]),
  stablelm2: spec([QWEN2]),
  smollm: spec([String.raw`\p{N}`, GPT2]),
  starcoder: spec([String.raw`\p{N}`, GPT2]),
  refact: spec([String.raw`\p{N}`, GPT2]),
  'command-r': spec([String.raw`\p{N}`, GPT2]),
  codeshell: spec([String.raw`\p{N}`, GPT2]),
};

/** the spec for a `tokenizer.ggml.pre` value, undefined when loom does not know it */
export function preTokenizerSpec(pre: string): PreTokenizerSpec | undefined {
  return Object.hasOwn(SPECS, pre) ? SPECS[pre] : undefined;
}

export const knownPreTokenizers = (): string[] => Object.keys(SPECS);

/** split text into pre-tokens (concatenation = text) */
export function compilePreTokenizer(spec: PreTokenizerSpec): (text: string) => string[] {
  const regexes = spec.regexes.map((r) => new RegExp(r, 'gu'));
  return (text) => {
    let pieces = text.length > 0 ? [text] : [];
    for (const re of regexes) {
      const next: string[] = [];
      for (const piece of pieces) {
        let last = 0;
        re.lastIndex = 0;
        for (let m = re.exec(piece); m !== null; m = re.exec(piece)) {
          if (m[0].length === 0) {
            re.lastIndex++;
            continue;
          }
          if (m.index > last) next.push(piece.slice(last, m.index));
          next.push(m[0]);
          last = m.index + m[0].length;
        }
        if (last < piece.length) next.push(piece.slice(last));
      }
      pieces = next;
    }
    return pieces;
  };
}
