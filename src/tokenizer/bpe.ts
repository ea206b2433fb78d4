// GGUF `tokenizer.ggml.model = "gpt2"` (and "gemma4"): BPE as llama.cpp implements it.
// Per raw-text fragment: pre-tokenize (regexes per `tokenizer.ggml.pre`), map each
// pre-token's UTF-8 bytes through GPT-2's byte→unicode table (or, SentencePiece-style as
// Gemma 4: spaces as ▁ and raw UTF-8), then merge adjacent symbols by merge rank (lowest
// first, ties to the leftmost). A symbol left that is not a token falls back to tokens of
// its single bytes (GPT-2: one-char texts; SentencePiece-style: <0xXX>), or to nothing.
import { Heap } from './heap.js';
import { compilePreTokenizer } from './pre-tokenizers.js';
import type { PreTokenizerSpec } from './pre-tokenizers.js';
import { TokenType, utf8 } from './tokenizer.js';
import { VocabTokenizer, byteTokenValue } from './vocab-base.js';
import type { VocabSpec } from './vocab-base.js';

/** GPT-2's table: [256] byte → the printable character standing for it in token texts */
export const BYTE_TO_UNICODE: readonly string[] = (() => {
  const table = new Array<string>(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    table[b] = String.fromCharCode(printable ? b : 256 + extra++);
  }
  return table;
})();

/** inverse of BYTE_TO_UNICODE: char code → byte */
export const UNICODE_TO_BYTE: ReadonlyMap<number, number> = new Map(BYTE_TO_UNICODE.map((c, b) => [c.charCodeAt(0), b]));

/** the token-text form of a string: its UTF-8 bytes through BYTE_TO_UNICODE */
export function byteEncode(text: string): string {
  let s = '';
  for (const b of utf8(text)) s += BYTE_TO_UNICODE[b]!;
  return s;
}

export interface BpeSpec extends VocabSpec {
  /** merges by rank, "left right" (split at the first space after the first character) */
  readonly merges: readonly string[];
  readonly preTokenizer: PreTokenizerSpec;
}

interface Bigram {
  readonly left: number;
  readonly right: number;
  readonly rank: number;
  readonly text: string;
}

const lowerRankFirst = (a: Bigram, b: Bigram): boolean => a.rank < b.rank || (a.rank === b.rank && a.left < b.left);
const SEP = '\u0000';
const CACHE_LIMIT = 50_000;

export class BpeTokenizer extends VocabTokenizer {
  readonly stripLeadingSpace = false;
  private readonly ranks = new Map<string, number>();
  private readonly ignoreMerges: boolean;
  private readonly spmStyle: boolean;
  /** [256] id of the <0xXX> token (SentencePiece-style byte fallback), -1 when absent */
  private readonly byteIds = new Int32Array(256).fill(-1);
  private readonly preTokenize: (text: string) => string[];
  /** byte-encoded pre-token → ids */
  private readonly cache = new Map<string, readonly number[]>();

  constructor(spec: BpeSpec) {
    super(spec);
    spec.merges.forEach((m, rank) => {
      const at = m.indexOf(' ', 1);
      if (at < 0) return;
      const key = m.slice(0, at) + SEP + m.slice(at + 1);
      if (!this.ranks.has(key)) this.ranks.set(key, rank);
    });
    this.ignoreMerges = spec.preTokenizer.ignoreMerges;
    this.spmStyle = spec.preTokenizer.spmStyle;
    for (let b = 0; b < 256; b++) this.byteIds[b] = this.idOf(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`) ?? -1;
    this.preTokenize = compilePreTokenizer(spec.preTokenizer);
  }

  protected encodeFragment(text: string, _afterSpecial: boolean, out: number[]): void {
    const input = this.spmStyle ? text.replaceAll(' ', '\u2581') : text;
    for (const word of this.preTokenize(input)) {
      const encoded = this.spmStyle ? word : byteEncode(word);
      let ids = this.cache.get(encoded);
      if (ids === undefined) {
        ids = this.encodeWord(encoded);
        if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
        this.cache.set(encoded, ids);
      }
      for (const id of ids) out.push(id);
    }
  }

  /** merge one (byte-encoded) pre-token; symbols start as its code points */
  private encodeWord(word: string): number[] {
    // Gemma 4 takes a newline run whole when it is a token (its merges do not build them all)
    if (this.ignoreMerges || (this.spmStyle && /^\n+$/.test(word))) {
      const whole = this.idOf(word);
      if (whole !== undefined) return [whole];
    }
    const sym = Array.from(word);
    const n = sym.length;
    const prev = sym.map((_, i) => i - 1);
    const next = sym.map((_, i) => (i + 1 < n ? i + 1 : -1));
    const queue = new Heap<Bigram>(lowerRankFirst);
    const add = (left: number, right: number): void => {
      if (left < 0 || right < 0) return;
      const rank = this.ranks.get(sym[left]! + SEP + sym[right]!);
      if (rank !== undefined) queue.push({ left, right, rank, text: sym[left]! + sym[right]! });
    };
    for (let i = 1; i < n; i++) add(i - 1, i);
    for (let bg = queue.pop(); bg !== undefined; bg = queue.pop()) {
      const { left, right } = bg;
      // stale: either side merged away or grown since the bigram was queued
      if (sym[left] === '' || sym[right] === '' || sym[left]! + sym[right]! !== bg.text) continue;
      sym[left] = bg.text;
      sym[right] = '';
      next[left] = next[right]!;
      if (next[right]! >= 0) prev[next[right]!] = left;
      add(prev[left]!, left);
      add(left, next[left]!);
    }
    const ids: number[] = [];
    for (let i = n > 0 ? 0 : -1; i !== -1; i = next[i]!) {
      const id = this.idOf(sym[i]!);
      if (id !== undefined) {
        ids.push(id);
        continue;
      }
      // llama.cpp looks each UTF-8 byte up and drops the bytes that are no token
      for (const b of utf8(sym[i]!)) {
        const bid = this.spmStyle ? this.byteIds[b]! : b < 0x80 ? (this.idOf(String.fromCharCode(b)) ?? -1) : -1;
        if (bid >= 0) ids.push(bid);
      }
    }
    return ids;
  }

  protected pieceBytes(_id: number, type: number, text: string): Uint8Array {
    switch (type) {
      case TokenType.NORMAL: {
        if (this.spmStyle) return utf8(text.replaceAll('\u2581', ' '));
        const out: number[] = [];
        for (const ch of text) {
          const b = UNICODE_TO_BYTE.get(ch.charCodeAt(0));
          if (b !== undefined && ch.length === 1) out.push(b);
          else out.push(...utf8(ch));
        }
        return Uint8Array.from(out);
      }
      case TokenType.BYTE: {
        const b = byteTokenValue(text);
        return b === undefined ? new Uint8Array(0) : Uint8Array.of(b);
      }
      case TokenType.CONTROL:
      case TokenType.UNKNOWN:
      case TokenType.USER_DEFINED:
        return utf8(text);
      default:
        return new Uint8Array(0);
    }
  }
}
