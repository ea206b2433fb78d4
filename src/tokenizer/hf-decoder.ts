// Token bytes from a tokenizer.json `decoder`, for the decoders generative models use:
//   ByteLevel (GPT-2, Llama 3, Qwen): token chars → bytes through GPT-2's table
//   Sequence[Replace ▁→" ", ByteFallback, Fuse, Strip " " start 1] (converted Llama/SPM)
//   Metaspace (▁ → space, the first token's space dropped)
//   WordPiece (BERT: "##" pieces continue a word, others start one after a space; the
//   first token's space dropped; tokenizers' cleanup of spaces before punctuation is not done)
// Anything else is refused by name rather than decoded wrongly.
import { UnsupportedModelError } from '../errors.js';
import { UNICODE_TO_BYTE } from './bpe.js';
import { utf8 } from './tokenizer.js';
import { byteTokenValue } from './vocab-base.js';

export interface PieceDecoder {
  /** the bytes of one token text; `added` = an added token (kept raw by ByteLevel) */
  bytes(text: string, added: boolean): Uint8Array;
  /** the decoded text's first space (the one the normalizer prepended) is dropped */
  readonly stripLeadingSpace: boolean;
}

type Json = Record<string, unknown>;

function flatten(d: unknown): Json[] {
  if (typeof d !== 'object' || d === null) return [];
  const j = d as Json;
  if (j.type === 'Sequence' && Array.isArray(j.decoders)) return j.decoders.flatMap(flatten);
  return [j];
}

export function pieceDecoderFor(file: string, decoder: unknown): PieceDecoder {
  const steps = flatten(decoder);
  if (steps.length === 0) throw new UnsupportedModelError(file, 'tokenizer.json has no decoder');
  if (steps.length === 1 && steps[0]!.type === 'WordPiece') return wordPieceDecoder(typeof steps[0]!.prefix === 'string' ? steps[0]!.prefix : '##');
  let byteLevel = false;
  let byteFallback = false;
  let strip = false;
  const replaces: [string, string][] = [];
  for (const s of steps) {
    switch (s.type) {
      case 'ByteLevel':
        byteLevel = true;
        break;
      case 'ByteFallback':
        byteFallback = true;
        break;
      case 'Fuse':
        break;
      case 'Replace': {
        const pattern = (s.pattern as Json | undefined)?.String;
        if (typeof pattern !== 'string' || typeof s.content !== 'string') throw new UnsupportedModelError(file, 'tokenizer.json decoder Replace with a regex pattern is not supported');
        replaces.push([pattern, s.content]);
        break;
      }
      case 'Strip':
        if (s.content !== ' ' || (s.stop ?? 0) !== 0 || Number(s.start ?? 0) > 1) throw new UnsupportedModelError(file, 'tokenizer.json decoder Strip other than one leading space is not supported');
        strip = Number(s.start ?? 0) === 1;
        break;
      case 'Metaspace': {
        const rep = typeof s.replacement === 'string' ? s.replacement : '\u2581';
        replaces.push([rep, ' ']);
        strip = s.prepend_scheme !== 'never' && s.add_prefix_space !== false;
        break;
      }
      default:
        throw new UnsupportedModelError(file, `tokenizer.json decoder "${String(s.type)}" is not supported`);
    }
  }
  if (byteLevel) {
    return {
      stripLeadingSpace: strip,
      bytes(text, added) {
        if (added) return utf8(text);
        const out = new Uint8Array(text.length);
        let n = 0;
        for (let i = 0; i < text.length; i++) {
          const b = UNICODE_TO_BYTE.get(text.charCodeAt(i));
          if (b === undefined) return utf8(text); // not a byte-level text: keep it as is
          out[n++] = b;
        }
        return out.subarray(0, n);
      },
    };
  }
  return {
    stripLeadingSpace: strip,
    bytes(text) {
      if (byteFallback) {
        const b = byteTokenValue(text);
        if (b !== undefined) return Uint8Array.of(b);
      }
      let t = text;
      for (const [from, to] of replaces) t = t.replaceAll(from, to);
      return utf8(t);
    },
  };
}

function wordPieceDecoder(prefix: string): PieceDecoder {
  return {
    stripLeadingSpace: true,
    bytes(text, added) {
      if (added) return utf8(` ${text}`);
      return utf8(text.startsWith(prefix) ? text.slice(prefix.length) : ` ${text}`);
    },
  };
}
