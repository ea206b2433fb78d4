// GGUF `tokenizer.ggml.model = "llama"`: SentencePiece BPE as llama.cpp implements it.
// Per raw-text fragment: a space prefix (first fragment / after a special token, when
// add_space_prefix), spaces → ▁, then adjacent symbols (initially single characters)
// merge greedily: the pair whose concatenation is a vocab token with the highest score
// first, ties to the leftmost. Symbols that are not tokens fall back to <0xXX> byte tokens.
import { Heap } from './heap.js';
import { TokenType, utf8 } from './tokenizer.js';
import { VocabTokenizer, byteTokenValue } from './vocab-base.js';
import type { VocabSpec } from './vocab-base.js';

export interface SpmSpec extends VocabSpec {
  /** [vocabSize] merge scores; higher merges first; absent = 0 */
  readonly scores?: readonly number[];
  /** prepend a space to the first fragment and after special tokens; default true */
  readonly addSpacePrefix?: boolean;
}

interface Bigram {
  readonly left: number;
  readonly right: number;
  readonly score: number;
  /** length of the merged text in UTF-16 units; stale when the symbols changed */
  readonly size: number;
}

const higherScoreFirst = (a: Bigram, b: Bigram): boolean => a.score > b.score || (a.score === b.score && a.left < b.left);

export class SpmTokenizer extends VocabTokenizer {
  readonly addSpacePrefix: boolean;
  readonly stripLeadingSpace: boolean;
  private readonly scores: Float64Array;
  /** [256] id of <0xXX> (or the one-byte token), -1 when absent */
  private readonly byteIds: Int32Array;

  constructor(spec: SpmSpec) {
    super(spec);
    this.addSpacePrefix = spec.addSpacePrefix ?? true;
    this.stripLeadingSpace = this.addSpacePrefix;
    this.scores = new Float64Array(this.vocabSize);
    if (spec.scores) for (let i = 0; i < this.vocabSize; i++) this.scores[i] = spec.scores[i] ?? 0;
    this.byteIds = new Int32Array(256).fill(-1);
    for (let b = 0; b < 256; b++) {
      const hex = b.toString(16).toUpperCase().padStart(2, '0');
      const id = this.idOf(`<0x${hex}>`) ?? (b < 0x80 ? this.idOf(String.fromCharCode(b)) : undefined);
      if (id !== undefined) this.byteIds[b] = id;
    }
  }

  protected encodeFragment(raw: string, afterSpecial: boolean, out: number[]): void {
    const text = ((this.addSpacePrefix && afterSpecial ? ' ' : '') + raw).replaceAll(' ', '\u2581');
    if (text.length === 0) return;
    // symbols: [n] start offset / length (UTF-16 units; 0 = merged away) / prev / next
    const start: number[] = [];
    for (let i = 0; i < text.length; ) {
      start.push(i);
      i += text.codePointAt(i)! > 0xffff ? 2 : 1;
    }
    const n = start.length;
    const len = start.map((s, i) => (i + 1 < n ? start[i + 1]! : text.length) - s);
    const prev = start.map((_, i) => i - 1);
    const next = start.map((_, i) => (i + 1 < n ? i + 1 : -1));
    const queue = new Heap<Bigram>(higherScoreFirst);
    const tryAdd = (left: number, right: number): void => {
      if (left < 0 || right < 0) return;
      const size = len[left]! + len[right]!;
      const id = this.idOf(text.slice(start[left]!, start[left]! + size));
      if (id === undefined) return;
      queue.push({ left, right, score: this.scores[id]!, size });
    };
    for (let i = 1; i < n; i++) tryAdd(i - 1, i);
    for (let bg = queue.pop(); bg !== undefined; bg = queue.pop()) {
      const { left, right } = bg;
      if (len[left] === 0 || len[right] === 0 || len[left]! + len[right]! !== bg.size) continue;
      len[left] = bg.size;
      len[right] = 0;
      next[left] = next[right]!;
      if (next[right]! >= 0) prev[next[right]!] = left;
      tryAdd(prev[left]!, left);
      tryAdd(left, next[left]!);
    }
    for (let i = 0; i !== -1; i = next[i]!) {
      const piece = text.slice(start[i]!, start[i]! + len[i]!);
      const id = this.idOf(piece);
      if (id !== undefined) {
        out.push(id);
        continue;
      }
      for (const b of utf8(piece)) {
        const bid = this.byteIds[b]!;
        if (bid >= 0) out.push(bid);
        else if (this.unkId !== undefined) out.push(this.unkId);
      }
    }
  }

  protected pieceBytes(_id: number, type: number, text: string): Uint8Array {
    switch (type) {
      case TokenType.NORMAL:
        return utf8(text.replaceAll('\u2581', ' '));
      case TokenType.BYTE: {
        const b = byteTokenValue(text);
        return b === undefined ? new Uint8Array(0) : Uint8Array.of(b);
      }
      case TokenType.CONTROL:
      case TokenType.UNKNOWN:
      case TokenType.USER_DEFINED:
        return utf8(text);
      default:
        // unused / undefined types decode to nothing, as in llama.cpp
        return new Uint8Array(0);
    }
  }
}
