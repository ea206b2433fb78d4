// The tokenizer of a Hugging Face model folder: tokenizer.json encoded by
// @huggingface/tokenizers; tokenizer_config.json (bos/eos, add_bos_token, chat_template);
// generation_config.json eos ids as extra stop ids. Decoding is ours (token bytes from the
// tokenizer.json decoder, see hf-decoder.ts) so the incremental detokenizer agrees with it.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer as HFLibTokenizer } from '@huggingface/tokenizers';
import { ModelFormatError } from '../errors.js';
import { pieceDecoderFor } from './hf-decoder.js';
import type { PieceDecoder } from './hf-decoder.js';
import { decodeIds } from './tokenizer.js';
import type { DecodeOptions, EncodeOptions, Tokenizer } from './tokenizer.js';

type Json = Record<string, unknown>;

function readJson(file: string): Json {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ModelFormatError(file, `cannot read JSON: ${(e as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ModelFormatError(file, 'is not a JSON object');
  return value as Json;
}

const optionalJson = (file: string): Json | undefined => (existsSync(file) ? readJson(file) : undefined);

/** "<s>" or {content: "<s>", ...} (AddedToken form) */
function tokenString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && v !== null && typeof (v as Json).content === 'string') return (v as Json).content as string;
  return undefined;
}

function chatTemplateOf(dir: string, config: Json): string | undefined {
  const file = join(dir, 'chat_template.jinja');
  if (existsSync(file)) return readFileSync(file, 'utf8');
  const t = config.chat_template;
  if (typeof t === 'string') return t;
  // named templates: [{name, template}], "default" preferred
  if (Array.isArray(t)) {
    const named = t.filter((x): x is { name: string; template: string } => typeof x?.name === 'string' && typeof x?.template === 'string');
    return (named.find((x) => x.name === 'default') ?? named[0])?.template;
  }
  return undefined;
}

interface AddedTokenJson {
  id: number;
  content: string;
  special: boolean;
}

function addedTokens(file: string, tj: Json): AddedTokenJson[] {
  const raw = tj.added_tokens ?? [];
  if (!Array.isArray(raw)) throw new ModelFormatError(file, 'added_tokens is not an array');
  return raw.map((t: Json) => {
    if (typeof t?.id !== 'number' || typeof t?.content !== 'string') throw new ModelFormatError(file, 'an added token lacks id or content');
    return { id: t.id, content: t.content, special: t.special === true };
  });
}

export function tokenizerFromHFFolder(dir: string): Tokenizer {
  const file = join(dir, 'tokenizer.json');
  if (!existsSync(file)) throw new ModelFormatError(dir, 'no tokenizer.json');
  const tj = readJson(file);
  if (typeof tj.model !== 'object' || tj.model === null) throw new ModelFormatError(file, 'has no model');
  const config = optionalJson(join(dir, 'tokenizer_config.json')) ?? {};
  const gen = optionalJson(join(dir, 'generation_config.json'));
  return new HFTokenizer(file, tj, config, gen, chatTemplateOf(dir, config));
}

class HFTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosId: number | undefined;
  readonly eosId: number | undefined;
  readonly bosToken: string | undefined;
  readonly eosToken: string | undefined;
  readonly stopIds: ReadonlySet<number>;
  readonly addBos: boolean;
  readonly stripLeadingSpace: boolean;
  private readonly lib: HFLibTokenizer;
  /** lazily built: the same tokenizer without its special added tokens (parseSpecial = false) */
  private libPlain: HFLibTokenizer | undefined;
  /** add_bos_token / add_eos_token given explicitly: we add them, not the post-processor */
  private readonly explicit: { bos: boolean; eos: boolean } | undefined;
  private readonly texts: (string | undefined)[];
  private readonly added: ReadonlyMap<number, AddedTokenJson>;
  private readonly pieces: PieceDecoder;
  private readonly bytesCache: (Uint8Array | undefined)[];

  constructor(
    file: string,
    private readonly tj: Json,
    private readonly config: Json,
    gen: Json | undefined,
    readonly chatTemplate: string | undefined,
  ) {
    try {
      this.lib = new HFLibTokenizer(tj, config);
    } catch (e) {
      throw new ModelFormatError(file, `cannot build tokenizer: ${(e as Error).message}`);
    }
    const added = addedTokens(file, tj);
    this.added = new Map(added.map((t) => [t.id, t]));
    const vocab = this.lib.get_vocab(true);
    let size = 0;
    for (const id of vocab.values()) size = Math.max(size, id + 1);
    this.vocabSize = size;
    this.texts = new Array<string | undefined>(size);
    for (const [text, id] of vocab) this.texts[id] = text;
    this.bosToken = tokenString(config.bos_token);
    this.eosToken = tokenString(config.eos_token);
    this.bosId = this.bosToken === undefined ? undefined : this.lib.token_to_id(this.bosToken);
    this.eosId = this.eosToken === undefined ? undefined : this.lib.token_to_id(this.eosToken);
    const stops = new Set<number>();
    if (this.eosId !== undefined) stops.add(this.eosId);
    const genEos = gen?.eos_token_id;
    for (const id of Array.isArray(genEos) ? genEos : [genEos]) if (typeof id === 'number') stops.add(id);
    this.stopIds = stops;
    if (typeof config.add_bos_token === 'boolean' || typeof config.add_eos_token === 'boolean') {
      this.explicit = { bos: config.add_bos_token === true && this.bosId !== undefined, eos: config.add_eos_token === true && this.eosId !== undefined };
      this.addBos = this.explicit.bos;
    } else {
      // what the post-processor does: probe it
      const withSpecial = this.lib.encode('a', { add_special_tokens: true }).ids;
      this.addBos = this.bosId !== undefined && withSpecial[0] === this.bosId;
    }
    this.pieces = pieceDecoderFor(file, tj.decoder);
    this.stripLeadingSpace = this.pieces.stripLeadingSpace;
    this.bytesCache = new Array<Uint8Array | undefined>(size);
  }

  encode(text: string, opts?: EncodeOptions): number[] {
    const addSpecial = opts?.addSpecial ?? true;
    const lib = (opts?.parseSpecial ?? true) ? this.lib : this.plain();
    const ids = lib.encode(text, { add_special_tokens: this.explicit ? false : addSpecial }).ids.filter((id: unknown): id is number => typeof id === 'number');
    if (this.explicit && addSpecial) {
      if (this.explicit.bos) ids.unshift(this.bosId!);
      if (this.explicit.eos) ids.push(this.eosId!);
    }
    return ids;
  }

  decode(ids: readonly number[], opts?: DecodeOptions): string {
    return decodeIds(this, ids, opts);
  }

  isSpecial(id: number): boolean {
    return this.added.get(id)?.special === true;
  }

  tokenText(id: number): string | undefined {
    return this.texts[id];
  }

  tokenBytes(id: number): Uint8Array {
    const text = this.texts[id];
    if (text === undefined) return new Uint8Array(0);
    let b = this.bytesCache[id];
    if (b === undefined) {
      b = this.pieces.bytes(text, this.added.has(id));
      this.bytesCache[id] = b;
    }
    return b;
  }

  private plain(): HFLibTokenizer {
    if (this.libPlain === undefined) {
      const keep = (Array.isArray(this.tj.added_tokens) ? this.tj.added_tokens : []).filter((t: Json) => t?.special !== true);
      this.libPlain = new HFLibTokenizer({ ...this.tj, added_tokens: keep }, this.config);
    }
    return this.libPlain;
  }
}
