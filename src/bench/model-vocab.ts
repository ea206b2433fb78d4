// The byte-level BPE vocabulary of a generated benchmark model, valid for loom and llama.cpp
// (tokenizer.ggml.model = gpt2). Layout: the 256 byte characters (GPT-2 byte order), merges
// learned over BENCH_CORPUS, then merge-built padding tokens until the model's vocab size is
// reached, and the three ChatML specials (first, as in SmolLM2, or last, as in Qwen2.5).
// Every token is decodable. Every padding token is a letters-only word (optionally with a
// leading space), which the pre-tokenizers of both shapes keep whole, made by a merge of two
// earlier tokens and kept only if BPE over the merges before it splits its text into exactly
// those two: BPE reaches it from its own text. (Some trained tokens and the bytes that only
// occur inside multi-byte characters are not reachable alone; they still decode.)
import { Rng } from '../engine/rng.js';
import { BYTE_TO_UNICODE, byteEncode } from '../tokenizer/bpe.js';
import { TokenType } from '../tokenizer/tokenizer.js';
import { countWords, trainMerges } from './bpe-train.js';
import { BENCH_CORPUS } from './corpus.js';

export interface ModelVocab {
  /** [vocabSize] token texts as GGUF stores them */
  readonly tokens: string[];
  /** [vocabSize] llama.cpp TokenType values */
  readonly tokenTypes: number[];
  /** "left right" by rank */
  readonly merges: string[];
  readonly bosId: number;
  readonly eosId: number;
  readonly chatTemplate: string;
}

export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const SPECIALS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;
const GPT2_SPLIT = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
const SPACE = BYTE_TO_UNICODE[0x20]!; // 'Ġ'
const LETTERS = /^\p{L}+$/u;
const MAX_PADDING_CHARS = 14;
const SEP = '\u0000';

/** Does BPE (lowest-rank adjacent pair first, leftmost on ties) turn the characters of l + r into [l, r]? */
function splitsInto(ranks: ReadonlyMap<string, number>, l: string, r: string): boolean {
  const syms = Array.from(l + r);
  for (;;) {
    let best = -1;
    let bestRank = Infinity;
    for (let i = 0; i + 1 < syms.length; i++) {
      const rank = ranks.get(syms[i] + SEP + syms[i + 1]);
      if (rank !== undefined && rank < bestRank) [best, bestRank] = [i, rank];
    }
    if (best < 0) break;
    syms.splice(best, 2, syms[best]! + syms[best + 1]!);
  }
  return syms.length === 2 && syms[0] === l && syms[1] === r;
}

/** A vocabulary of exactly `vocabSize` tokens; specials at ids 0..2 or at the last three ids. */
export function modelVocab(vocabSize: number, specialsFirst: boolean): ModelVocab {
  const body = vocabSize - SPECIALS.length;
  if (body < 256 + 64) throw new RangeError(`vocab size ${vocabSize} is too small for a byte-level BPE vocabulary`);
  const tokens: string[] = [...BYTE_TO_UNICODE];
  const seen = new Set(tokens);
  const merges: string[] = [];
  const ranks = new Map<string, number>();
  const add = (l: string, r: string): boolean => {
    const t = l + r;
    if (seen.has(t)) return false;
    seen.add(t);
    tokens.push(t);
    ranks.set(l + SEP + r, merges.length);
    merges.push(`${l} ${r}`);
    return true;
  };
  const words = (BENCH_CORPUS.match(GPT2_SPLIT) ?? []).map(byteEncode);
  for (const [l, r] of trainMerges(countWords(words), (w) => Array.from(w), Math.min(600, body - 256))) {
    if (tokens.length >= body) break;
    add(l, r);
  }
  // padding: word-initial pieces ("Ġ" + letters, or letters) joined with letter continuations
  const heads: string[] = [];
  const tails: string[] = [];
  for (const t of tokens) {
    const letters = t.startsWith(SPACE) ? t.slice(1) : t;
    if (!LETTERS.test(letters) || /[^\x21-\x7e]/.test(letters)) continue;
    heads.push(t);
    if (letters === t) tails.push(t);
  }
  const rng = new Rng(0x10c0ab);
  const pick = (xs: readonly string[]): string => xs[Math.floor(rng.next() * xs.length)]!;
  while (tokens.length < body) {
    const l = pick(heads);
    const r = pick(tails);
    if (l.length + r.length > MAX_PADDING_CHARS || seen.has(l + r) || !splitsInto(ranks, l, r) || !add(l, r)) continue;
    heads.push(l + r);
    if (!l.startsWith(SPACE)) tails.push(l + r);
  }
  const tokenTypes = tokens.map(() => TokenType.NORMAL as number);
  const at = specialsFirst ? 0 : tokens.length;
  tokens.splice(at, 0, ...SPECIALS);
  tokenTypes.splice(at, 0, ...SPECIALS.map(() => TokenType.CONTROL as number));
  const id = (s: (typeof SPECIALS)[number]): number => at + SPECIALS.indexOf(s);
  return {
    tokens,
    tokenTypes,
    merges,
    bosId: id(specialsFirst ? '<|im_start|>' : '<|endoftext|>'),
    eosId: id('<|im_end|>'),
    chatTemplate: CHATML_TEMPLATE,
  };
}
