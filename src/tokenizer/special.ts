// Splitting text on special / user-defined token texts before normal tokenization, as
// llama.cpp's tokenizer_st_partition does: tokens are tried longest text first, each
// splitting every remaining text fragment at all of its occurrences.

/** a fragment of input: raw text still to tokenize, or a token id already decided */
export type Fragment = { readonly text: string } | { readonly id: number };

export interface SpecialToken {
  readonly text: string;
  readonly id: number;
  /** whitespace right after the token is dropped (llama.cpp's LLAMA_TOKEN_ATTR_RSTRIP) */
  readonly rstrip?: boolean;
}

/** C isspace */
const isSpace = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\v' || c === '\f' || c === '\r';

const byteLength = (s: string): number => Buffer.byteLength(s, 'utf8');

export class SpecialSplitter {
  /** longest (UTF-8 bytes) first, as llama.cpp sorts its special-token cache */
  private readonly tokens: readonly SpecialToken[];

  constructor(tokens: readonly SpecialToken[]) {
    this.tokens = tokens.filter((t) => t.text.length > 0).sort((a, b) => byteLength(b.text) - byteLength(a.text) || a.id - b.id);
  }

  get isEmpty(): boolean {
    return this.tokens.length === 0;
  }

  split(text: string): Fragment[] {
    let frags: Fragment[] = text.length > 0 ? [{ text }] : [];
    for (const tok of this.tokens) {
      if (!text.includes(tok.text)) continue;
      const next: Fragment[] = [];
      for (const f of frags) {
        if (!('text' in f)) {
          next.push(f);
          continue;
        }
        let from = 0;
        for (;;) {
          const at = f.text.indexOf(tok.text, from);
          if (at < 0) break;
          if (at > from) next.push({ text: f.text.slice(from, at) });
          next.push({ id: tok.id });
          from = at + tok.text.length;
          if (tok.rstrip) while (from < f.text.length && isSpace(f.text[from])) from++;
        }
        if (from < f.text.length) next.push(from === 0 ? f : { text: f.text.slice(from) });
      }
      frags = next;
    }
    return frags;
  }
}
