// Incremental detokenizer: token ids in, newly completed text out, O(new tokens) per push.
// Invariant: the concatenation of every push() and the final flush() equals
// decode(prefix + all) minus decode(prefix) (for a prefix ending on a character boundary).
// Text is released only at complete UTF-8 characters: bytes of a character split over
// byte-fallback / byte-level tokens are held by a streaming UTF-8 decoder until complete;
// flush() turns whatever is still incomplete into U+FFFD.
import { visibleBytes } from './tokenizer.js';
import type { Tokenizer } from './tokenizer.js';

export interface DetokenizerOptions {
  /** hide special tokens (default true, as decode) */
  skipSpecial?: boolean;
  /** ids the output continues (the prompt): after them a leading SPM ▁ is a real space */
  prefixIds?: readonly number[];
}

export class IncrementalDetokenizer {
  private readonly skipSpecial: boolean;
  // ignoreBOM: a U+FEFF the model writes is text, as in decode
  private readonly utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
  /** no token has produced bytes yet: SPM drops the space it prefixed to the text */
  private atStart = true;

  constructor(
    private readonly tokenizer: Tokenizer,
    opts: DetokenizerOptions = {},
  ) {
    this.skipSpecial = opts.skipSpecial ?? true;
    // the prefix's text is not ours to emit, but its state is: the start flag and any
    // bytes of a character the output completes
    if (opts.prefixIds && opts.prefixIds.length > 0) this.feed(opts.prefixIds);
  }

  /** the text these ids complete */
  push(ids: readonly number[]): string {
    return this.feed(ids);
  }

  /** whatever is held back (an incomplete character becomes U+FFFD); the detokenizer stays usable */
  flush(): string {
    return this.utf8.decode();
  }

  private feed(ids: readonly number[]): string {
    const parts: Uint8Array[] = [];
    let total = 0;
    for (const id of ids) {
      const b = visibleBytes(this.tokenizer, id, this.skipSpecial, this.atStart);
      if (b === undefined) continue;
      this.atStart = false;
      parts.push(b);
      total += b.length;
    }
    if (total === 0) return '';
    if (parts.length === 1) return this.utf8.decode(parts[0], { stream: true });
    const all = new Uint8Array(total);
    let off = 0;
    for (const p of parts) {
      all.set(p, off);
      off += p.length;
    }
    return this.utf8.decode(all, { stream: true });
  }
}
