// Code point classes as llama.cpp's unicode.cpp sees them: one general category per code
// point (Unicode's, here from the JS engine's tables), its own whitespace set (White_Space,
// which JS's \s is not: JS adds U+FEFF and drops U+0085), the simple (one code point)
// lowercase mapping and the first code point of the NFD decomposition.

/** category bits, as unicode_cpt_flags */
export const Cpt = {
  UNDEFINED: 0x01,
  NUMBER: 0x02,
  LETTER: 0x04,
  SEPARATOR: 0x08,
  MARK: 0x10,
  PUNCTUATION: 0x20,
  SYMBOL: 0x40,
  CONTROL: 0x80,
  WHITESPACE: 0x100,
} as const;

/** llama.cpp's whitespace code points (Unicode White_Space) */
export const WHITESPACE_CLASS = String.raw`\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000`;
const WHITESPACE = new RegExp(`^[${WHITESPACE_CLASS}]$`, 'u');

const CATEGORIES: readonly [RegExp, number][] = [
  [/^\p{L}$/u, Cpt.LETTER],
  [/^\p{N}$/u, Cpt.NUMBER],
  [/^\p{P}$/u, Cpt.PUNCTUATION],
  [/^\p{M}$/u, Cpt.MARK],
  [/^\p{S}$/u, Cpt.SYMBOL],
  [/^\p{Z}$/u, Cpt.SEPARATOR],
  [/^[\p{Cc}\p{Cf}\p{Co}\p{Cs}]$/u, Cpt.CONTROL],
];

const MAX_CODEPOINT = 0x10ffff;
/** flags + 0x8000 once computed; filled lazily (most text touches few code points) */
let table: Uint16Array | undefined;
const COMPUTED = 0x8000;

/** the class bits of a code point (0 beyond U+10FFFF, as llama.cpp) */
export function cptFlags(cp: number): number {
  if (cp < 0 || cp > MAX_CODEPOINT) return 0;
  table ??= new Uint16Array(MAX_CODEPOINT + 1);
  const cached = table[cp]!;
  if (cached !== 0) return cached & ~COMPUTED;
  const ch = String.fromCodePoint(cp);
  let flags: number = Cpt.UNDEFINED;
  for (const [re, bit] of CATEGORIES) {
    if (re.test(ch)) {
      flags = bit;
      break;
    }
  }
  if (WHITESPACE.test(ch)) flags |= Cpt.WHITESPACE;
  table[cp] = flags | COMPUTED;
  return flags;
}

export const isWhitespace = (cp: number): boolean => (cptFlags(cp) & Cpt.WHITESPACE) !== 0;

/** UnicodeData's simple lowercase mapping (JS's toLowerCase is the full one: İ → i̇) */
export function simpleLowercase(cp: number): number {
  if (cp === 0x130) return 0x69;
  const lower = String.fromCodePoint(cp).toLowerCase();
  const first = lower.codePointAt(0)!;
  return lower.length === String.fromCodePoint(first).length ? first : cp;
}

/** the first code point of the canonical decomposition: llama.cpp's one-to-one "NFD" */
export function nfdFirst(cp: number): number {
  if (cp < 0xc0) return cp;
  return String.fromCodePoint(cp).normalize('NFD').codePointAt(0)!;
}
