// The one tokenizer interface (SPM and BPE from GGUF, HF tokenizer.json) and the decode
// every implementation shares: decoded text = UTF-8 decode of the concatenated token bytes.

/** llama.cpp token types as stored in `tokenizer.ggml.token_type`. */
export const TokenType = {
  UNDEFINED: 0,
  NORMAL: 1,
  UNKNOWN: 2,
  CONTROL: 3,
  USER_DEFINED: 4,
  UNUSED: 5,
  BYTE: 6,
} as const;

export interface EncodeOptions {
  /** add BOS (and EOS) where the model says so; default true */
  addSpecial?: boolean;
  /** special-token text like "<|im_start|>" becomes its id; default true */
  parseSpecial?: boolean;
}

export interface DecodeOptions {
  /** drop special (control/unknown) tokens from the text; default true */
  skipSpecial?: boolean;
}

export interface Tokenizer {
  readonly vocabSize: number;
  readonly bosId: number | undefined;
  readonly eosId: number | undefined;
  /** every id that ends generation (eos, eot, eom, generation_config eos ids) */
  readonly stopIds: ReadonlySet<number>;
  readonly addBos: boolean;
  readonly chatTemplate: string | undefined;
  /** text of BOS / EOS, as chat templates want them */
  readonly bosToken: string | undefined;
  readonly eosToken: string | undefined;
  /** the first text-producing token of a decode loses one leading space (SPM's added prefix) */
  readonly stripLeadingSpace: boolean;
  encode(text: string, opts?: EncodeOptions): number[];
  decode(ids: readonly number[], opts?: DecodeOptions): string;
  /** control/unknown (GGUF) or special added token (HF): hidden when skipSpecial */
  isSpecial(id: number): boolean;
  /** the bytes a token contributes to decoded text (special tokens: their text); empty when out of range */
  tokenBytes(id: number): Uint8Array;
  /** the vocabulary string of a token (e.g. "▁the", "Ġthe"), undefined when out of range */
  tokenText(id: number): string | undefined;
}

const SPACE = 0x20;

/**
 * Bytes of one token as it appears in decoded text, given `atStart` (no token produced
 * bytes before it). undefined = the token produces nothing (skipped special, unused), so
 * the start has not passed; otherwise the start has passed, even if stripping emptied it.
 * Shared by decode and the incremental detokenizer so both agree byte for byte.
 */
export function visibleBytes(tok: Tokenizer, id: number, skipSpecial: boolean, atStart: boolean): Uint8Array | undefined {
  if (skipSpecial && tok.isSpecial(id)) return undefined;
  const bytes = tok.tokenBytes(id);
  if (bytes.length === 0) return undefined;
  if (atStart && tok.stripLeadingSpace && bytes[0] === SPACE) return bytes.subarray(1);
  return bytes;
}

/** decode shared by every tokenizer: concatenate visible bytes, UTF-8 decode with U+FFFD for invalid bytes */
export function decodeIds(tok: Tokenizer, ids: readonly number[], opts?: DecodeOptions): string {
  const skipSpecial = opts?.skipSpecial ?? true;
  const parts: Uint8Array[] = [];
  let total = 0;
  let atStart = true;
  for (const id of ids) {
    const b = visibleBytes(tok, id, skipSpecial, atStart);
    if (b === undefined) continue;
    atStart = false;
    parts.push(b);
    total += b.length;
  }
  const all = new Uint8Array(total);
  let off = 0;
  for (const p of parts) {
    all.set(p, off);
    off += p.length;
  }
  return new TextDecoder('utf-8', { ignoreBOM: true }).decode(all);
}

const encoder = new TextEncoder();
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}
