// Pre-tokenizer splitting as llama.cpp's unicode_regex_split does it. The regexes are
// llama.cpp's own strings; each splits every current piece into its matches and the gaps
// between them. How a regex runs decides its edge cases, so we run it the way llama.cpp does:
// - the hand-written splitters llama.cpp has for a few exact regexes (GPT-2, Llama 3,
//   Qwen2, Qwen3.5, newline runs) behave as the regex over code points with llama.cpp's
//   classes: a JS regex with \s spelled as llama.cpp's whitespace set;
// - a regex naming \p{..} classes runs (std::regex) over a "collapsed" text, one byte per
//   code point: ASCII as is, other whitespace as \v, every other code point as a byte
//   standing for its category (letter 0xD2, number 0xD1, ...), with each \p{..} rewritten
//   to that byte plus the category's ASCII members;
// - any other regex runs (std::wregex) over the code points, other whitespace as \v, where
//   \s is ASCII whitespace only.
import { Cpt, WHITESPACE_CLASS, cptFlags } from './unicode-flags.js';

/** the regexes llama.cpp runs with hand-written code (unicode_regex_split_custom) */
export const CUSTOM_REGEXES: ReadonlySet<string> = new Set([
  String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`,
  String.raw`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
  String.raw`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
  String.raw`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
  String.raw`[^\n]+|[\n]+`,
]);

/** \p{..} classes llama.cpp collapses: the byte standing for the category, its ASCII members */
const CATEGORY_CLASSES: Readonly<Record<string, { byte: string; ascii: string }>> = (() => {
  const N = { byte: '\xD1', ascii: '0-9' };
  const L = { byte: '\xD2', ascii: 'A-Za-z' };
  const P = { byte: '\xD3', ascii: String.raw`!-#%-*,-/:-;?-@\[-\]_\{\}` };
  const M = { byte: '\xD4', ascii: '' };
  const S = { byte: '\xD5', ascii: String.raw`\$\+<->^` + '`' + String.raw`\|\~` };
  return { '\\p{N}': N, '\\p{L}': L, '\\p{P}': P, '\\p{M}': M, '\\p{S}': S, '\\p{Lu}': L, '\\p{Ll}': L, '\\p{Lt}': L, '\\p{Lm}': L, '\\p{Lo}': L };
})();

const CATEGORY_BYTES: readonly [number, string][] = [
  [Cpt.NUMBER, '\xD1'],
  [Cpt.LETTER, '\xD2'],
  [Cpt.PUNCTUATION, '\xD3'],
  [Cpt.MARK, '\xD4'],
  [Cpt.SYMBOL, '\xD5'],
];

const usesCategories = (regex: string): boolean => Object.keys(CATEGORY_CLASSES).some((c) => regex.includes(c));

/** \s / \S as llama.cpp's whitespace set (outside and inside a character class) */
function withWhitespaceClass(regex: string, ws: string): string {
  let out = '';
  let inside = false;
  for (let i = 0; i < regex.length; i++) {
    const c = regex[i]!;
    if (c === '\\' && i + 1 < regex.length) {
      const e = regex[i + 1]!;
      i++;
      if (e === 's') out += inside ? ws : `[${ws}]`;
      else if (e === 'S') {
        if (inside) throw new Error(`regex ${regex}: \\S inside a class is not supported`);
        out += `[^${ws}]`;
      } else out += c + e;
      continue;
    }
    if (c === '[' && !inside) inside = true;
    else if (c === ']' && inside) inside = false;
    out += c;
  }
  return out;
}

/** llama.cpp's rewrite of a category regex for the collapsed text */
function collapseRegex(regex: string): string {
  if (/[^\x00-\x7f]/.test(regex)) throw new Error(`regex ${regex} mixes unicode categories and non-ASCII characters`);
  let out = '';
  let inside = false;
  for (let i = 0; i < regex.length; i++) {
    const c = regex[i]!;
    if (c === '[' && (i === 0 || regex[i - 1] !== '\\')) {
      out += '[';
      inside = true;
      continue;
    }
    if (inside && c === ']' && regex[i - 1] !== '\\') {
      out += ']';
      inside = false;
      continue;
    }
    if (c === '\\' && regex[i + 1] === 'p' && regex[i + 2] === '{') {
      const close = regex.indexOf('}', i + 3);
      const cls = close >= 0 ? CATEGORY_CLASSES[regex.slice(i, close + 1)] : undefined;
      if (cls !== undefined) {
        out += inside ? cls.byte + cls.ascii : `[${cls.byte}${cls.ascii}]`;
        i = close;
        continue;
      }
    }
    out += c;
  }
  return out;
}

/** one char per code point: ASCII kept, whitespace → \v, others → their category byte (0xD0 = none) */
function collapseText(text: string): string {
  let out = '';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x80) {
      out += ch;
      continue;
    }
    const flags = cptFlags(cp);
    if (flags & Cpt.WHITESPACE) {
      out += '\v';
      continue;
    }
    let b = '\xD0';
    for (const [bit, byte] of CATEGORY_BYTES) if (flags & bit) b = byte;
    out += b;
  }
  return out;
}

/** the text with non-ASCII whitespace as \v (same UTF-16 length: all of it is in the BMP) */
function asciiWhitespaceText(text: string): string {
  return text.replace(/[^\x00-\x7f]/g, (ch) => (cptFlags(ch.charCodeAt(0)) & Cpt.WHITESPACE ? '\v' : ch));
}

type PieceSplit = (piece: string) => string[];

/** split `target` by `re`'s matches; pieces are cut from `source` at the same positions */
function splitBy(re: RegExp, target: string, source: string, toSource: (i: number) => number): string[] {
  const out: string[] = [];
  let last = 0;
  re.lastIndex = 0;
  for (let m = re.exec(target); m !== null; m = re.exec(target)) {
    if (m[0].length === 0) {
      re.lastIndex++;
      continue;
    }
    const start = toSource(m.index);
    const end = toSource(m.index + m[0].length);
    if (start > last) out.push(source.slice(last, start));
    out.push(source.slice(start, end));
    last = end;
  }
  if (last < source.length) out.push(source.slice(last));
  return out;
}

function compileOne(regex: string): PieceSplit {
  if (CUSTOM_REGEXES.has(regex)) {
    const re = new RegExp(withWhitespaceClass(regex, WHITESPACE_CLASS), 'gu');
    return (piece) => splitBy(re, piece, piece, (i) => i);
  }
  if (usesCategories(regex)) {
    const re = new RegExp(collapseRegex(regex), 'g');
    return (piece) => {
      // collapsed index (code points) → UTF-16 offset in the piece
      const offsets: number[] = [];
      let at = 0;
      for (const ch of piece) {
        offsets.push(at);
        at += ch.length;
      }
      offsets.push(at);
      return splitBy(re, collapseText(piece), piece, (i) => offsets[i]!);
    };
  }
  const re = new RegExp(withWhitespaceClass(regex, String.raw`\t-\r `), 'gu');
  return (piece) => splitBy(re, asciiWhitespaceText(piece), piece, (i) => i);
}

/** text → pieces (their concatenation is the text), the regexes applied in order */
export function compileRegexSplit(regexes: readonly string[]): (text: string) => string[] {
  const steps = regexes.map(compileOne);
  return (text) => {
    let pieces = text.length > 0 ? [text] : [];
    for (const step of steps) pieces = pieces.flatMap(step);
    return pieces;
  };
}
