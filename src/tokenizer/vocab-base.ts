// What the two GGUF tokenizers (SPM, BPE) share: the vocabulary with llama.cpp token
// types, special ids, special-token splitting and the encode skeleton around the
// per-fragment algorithm, cached token bytes, decode.
import { SpecialSplitter } from './special.js';
import { TokenType, decodeIds } from './tokenizer.js';
import type { DecodeOptions, EncodeOptions, Tokenizer } from './tokenizer.js';

export interface VocabSpec {
  /** [vocabSize] token texts as stored in the file */
  readonly tokens: readonly string[];
  /** [vocabSize] TokenType values; absent = all NORMAL */
  readonly types?: readonly number[];
  readonly bosId?: number | undefined;
  readonly eosId?: number | undefined;
  readonly unkId?: number | undefined;
  readonly addBos: boolean;
  readonly addEos: boolean;
  /** ids ending generation; eos is added if missing */
  readonly stopIds?: Iterable<number>;
  readonly chatTemplate?: string | undefined;
  /** special tokens that drop the whitespace after them (llama.cpp's Phi-3 attribute) */
  readonly rstripIds?: ReadonlySet<number>;
}

export abstract class VocabTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosId: number | undefined;
  readonly eosId: number | undefined;
  readonly unkId: number | undefined;
  readonly stopIds: ReadonlySet<number>;
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly chatTemplate: string | undefined;
  abstract readonly stripLeadingSpace: boolean;
  protected readonly tokens: readonly string[];
  protected readonly types: Uint8Array;
  protected readonly ids: ReadonlyMap<string, number>;
  /** control, unknown and user-defined texts (parseSpecial = true) */
  private readonly splitAll: SpecialSplitter;
  /** user-defined texts only: llama.cpp splits these out even when parseSpecial = false */
  private readonly splitUser: SpecialSplitter;
  private readonly bytesCache: (Uint8Array | undefined)[];

  constructor(spec: VocabSpec) {
    this.tokens = spec.tokens;
    this.vocabSize = spec.tokens.length;
    this.types = new Uint8Array(this.vocabSize).fill(TokenType.NORMAL);
    if (spec.types) for (let i = 0; i < this.vocabSize; i++) this.types[i] = spec.types[i] ?? TokenType.NORMAL;
    const ids = new Map<string, number>();
    // first occurrence wins on duplicate texts
    spec.tokens.forEach((t, i) => {
      if (!ids.has(t)) ids.set(t, i);
    });
    this.ids = ids;
    const inRange = (id: number | undefined): number | undefined => (id !== undefined && id >= 0 && id < this.vocabSize ? id : undefined);
    this.bosId = inRange(spec.bosId);
    this.eosId = inRange(spec.eosId);
    this.unkId = inRange(spec.unkId);
    this.addBos = spec.addBos && this.bosId !== undefined;
    this.addEos = spec.addEos && this.eosId !== undefined;
    const stops = new Set<number>();
    for (const id of spec.stopIds ?? []) if (inRange(id) !== undefined) stops.add(id);
    if (this.eosId !== undefined) stops.add(this.eosId);
    this.stopIds = stops;
    this.chatTemplate = spec.chatTemplate;
    const all = [];
    const user = [];
    for (let id = 0; id < this.vocabSize; id++) {
      const t = this.types[id];
      const tok = { text: this.tokens[id]!, id, rstrip: spec.rstripIds?.has(id) ?? false };
      if (t === TokenType.CONTROL || t === TokenType.UNKNOWN || t === TokenType.USER_DEFINED) all.push(tok);
      if (t === TokenType.USER_DEFINED) user.push(tok);
    }
    this.splitAll = new SpecialSplitter(all);
    this.splitUser = new SpecialSplitter(user);
    this.bytesCache = new Array<Uint8Array | undefined>(this.vocabSize);
  }

  get bosToken(): string | undefined {
    return this.bosId === undefined ? undefined : this.tokens[this.bosId];
  }

  get eosToken(): string | undefined {
    return this.eosId === undefined ? undefined : this.tokens[this.eosId];
  }

  /** tokenize one raw-text fragment; `afterSpecial` = first fragment or right after a special token */
  protected abstract encodeFragment(text: string, afterSpecial: boolean, out: number[]): void;

  /** bytes of a token's piece, computed once per id */
  protected abstract pieceBytes(id: number, type: number, text: string): Uint8Array;

  encode(text: string, opts?: EncodeOptions): number[] {
    const addSpecial = opts?.addSpecial ?? true;
    const splitter = (opts?.parseSpecial ?? true) ? this.splitAll : this.splitUser;
    const out: number[] = [];
    if (addSpecial && this.addBos) out.push(this.bosId!);
    let afterSpecial = true;
    for (const frag of splitter.split(text)) {
      if ('id' in frag) {
        out.push(frag.id);
        afterSpecial = true;
      } else {
        this.encodeFragment(frag.text, afterSpecial, out);
        afterSpecial = false;
      }
    }
    if (addSpecial && this.addEos) out.push(this.eosId!);
    return out;
  }

  decode(ids: readonly number[], opts?: DecodeOptions): string {
    return decodeIds(this, ids, opts);
  }

  isSpecial(id: number): boolean {
    const t = this.types[id];
    return t === TokenType.CONTROL || t === TokenType.UNKNOWN;
  }

  tokenType(id: number): number | undefined {
    return this.types[id];
  }

  tokenText(id: number): string | undefined {
    return this.tokens[id];
  }

  tokenBytes(id: number): Uint8Array {
    if (!(id >= 0 && id < this.vocabSize)) return new Uint8Array(0);
    let b = this.bytesCache[id];
    if (b === undefined) {
      b = this.pieceBytes(id, this.types[id]!, this.tokens[id]!);
      this.bytesCache[id] = b;
    }
    return b;
  }

  /** id of an exact token text, if any */
  idOf(text: string): number | undefined {
    return this.ids.get(text);
  }
}

/** the byte of a `<0xXX>` token, or undefined */
export function byteTokenValue(text: string): number | undefined {
  const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(text);
  return m ? parseInt(m[1]!, 16) : undefined;
}
