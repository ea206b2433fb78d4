// GGUF `tokenizer.ggml.model = "bert"`: WordPiece as llama.cpp implements it (llm_tokenizer_wpm).
// The converter stored word-initial pieces with a ▁ prefix and continuation pieces bare
// (BERT's "##" dropped). Per raw-text fragment: BERT's normalization (optionally lowercase
// and strip accents: each code point to the first of its NFD form, marks dropped; control
// characters dropped), split at whitespace, every punctuation character, ASCII symbol and
// CJK ideograph its own word; then each word, ▁-prefixed, is covered greedily by the
// longest vocabulary entries from the left. A word that cannot be covered is [UNK].
// With special tokens: [CLS] first and [SEP] last.
import { TokenType, utf8 } from './tokenizer.js';
import { Cpt, cptFlags, nfdFirst, simpleLowercase } from './unicode-flags.js';
import { VocabTokenizer } from './vocab-base.js';
import type { VocabSpec } from './vocab-base.js';
import type { EncodeOptions } from './tokenizer.js';

export interface WpmSpec extends VocabSpec {
  /** BertNormalizer lowercase (default true in llama.cpp: tokenizer.ggml.normalizer.lowercase) */
  readonly lowercase: boolean;
  readonly stripAccents: boolean;
  /** appended after the text with special tokens ([SEP]) */
  readonly sepId: number | undefined;
}

/** the ideograph ranges BERT splits out (with the range HF's Rust code has for Ext. E) */
function isChineseChar(cp: number): boolean {
  return (
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) ||
    (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) ||
    (cp >= 0x2b920 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x2f800 && cp <= 0x2fa1f)
  );
}

const PHANTOM_SPACE = '\u2581';

export class WpmTokenizer extends VocabTokenizer {
  readonly stripLeadingSpace = false;
  private readonly lowercase: boolean;
  private readonly stripAccents: boolean;
  private readonly sepId: number | undefined;
  /** longest token text in UTF-8 bytes: no match is longer */
  private readonly maxTokenBytes: number;

  constructor(spec: WpmSpec) {
    super(spec);
    this.lowercase = spec.lowercase;
    this.stripAccents = spec.stripAccents;
    this.sepId = spec.sepId !== undefined && spec.sepId >= 0 && spec.sepId < this.vocabSize ? spec.sepId : undefined;
    let max = 0;
    for (const t of this.tokens) max = Math.max(max, Buffer.byteLength(t, 'utf8'));
    this.maxTokenBytes = max;
  }

  /** llama.cpp's WPM always brackets with [CLS] … [SEP] when adding special tokens */
  override encode(text: string, opts?: EncodeOptions): number[] {
    const inner = super.encode(text, { ...opts, addSpecial: false });
    if (!(opts?.addSpecial ?? true)) return inner;
    const out = this.bosId !== undefined ? [this.bosId, ...inner] : inner;
    if (this.sepId !== undefined) out.push(this.sepId);
    return out;
  }

  /** normalized words: BERT's BasicTokenizer as llama.cpp has it */
  words(text: string): string[] {
    const words: string[] = [];
    let word = '';
    const finish = (): void => {
      if (word.length > 0) words.push(word);
      word = '';
    };
    for (const ch of text) {
      let cp = ch.codePointAt(0)!;
      if (this.stripAccents) cp = nfdFirst(cp);
      const flags = cptFlags(cp);
      if (flags & Cpt.WHITESPACE) {
        finish();
        continue;
      }
      if (cp === 0 || cp === 0xfffd || flags & Cpt.CONTROL) continue;
      if (this.stripAccents && flags & Cpt.MARK) continue;
      const s = String.fromCodePoint(this.lowercase ? simpleLowercase(cp) : cp);
      if (flags & Cpt.PUNCTUATION || (cp < 0x7f && flags & Cpt.SYMBOL) || isChineseChar(cp)) {
        finish();
        words.push(s);
      } else word += s;
    }
    finish();
    return words;
  }

  protected encodeFragment(text: string, _afterSpecial: boolean, out: number[]): void {
    for (const w of this.words(text)) {
      const chars = Array.from(PHANTOM_SPACE + w);
      // UTF-8 offset of each character boundary
      const at = [0];
      for (const c of chars) at.push(at[at.length - 1]! + utf8(c).length);
      const start = out.length;
      for (let i = 0; i < chars.length; ) {
        let j = chars.length;
        while (j > i && at[j]! - at[i]! > this.maxTokenBytes) j--;
        let id: number | undefined;
        for (; j > i; j--) {
          id = this.idOf(chars.slice(i, j).join(''));
          if (id !== undefined) break;
        }
        if (id === undefined) {
          // one unmatched position discards the whole word
          out.length = start;
          break;
        }
        out.push(id);
        i = j;
      }
      if (out.length === start && this.unkId !== undefined) out.push(this.unkId);
    }
  }

  protected pieceBytes(_id: number, type: number, text: string): Uint8Array {
    switch (type) {
      case TokenType.NORMAL:
        return utf8(text.replaceAll(PHANTOM_SPACE, ' '));
      case TokenType.CONTROL:
      case TokenType.UNKNOWN:
      case TokenType.USER_DEFINED:
        return utf8(text);
      default:
        return new Uint8Array(0);
    }
  }
}
