// The grammar of a single string leaf (a `pattern`, or a format loom does not write itself)
// taken from xgrammar's own converter: xgrammar compiles `{"type": "string", pattern}` and
// prints its EBNF; loom keeps the rules the string needs, renamed under a prefix, and makes
// every character class JSON-safe (no raw quote, backslash or control character).
import type { XGrammarBinding } from '../xgrammar-binding.js';
import { callXGrammar } from '../xgrammar-binding.js';

export class UnsupportedSchemaError extends Error {
  override readonly name = 'UnsupportedSchemaError';
  /** the keyword refused, and where (a JSON pointer) */
  constructor(message: string, readonly keyword: string, readonly at: string) {
    super(message);
  }
}

/** Rules for a quoted string under `leaf`; the returned name is the rule of the whole string (quotes included). */
export function leafRules(xg: XGrammarBinding, leaf: object, prefix: string): { name: string; rules: string[] } {
  const text = callXGrammar('the string rule could not be compiled', () => {
    const g = xg.Grammar.FromJSONSchema(JSON.stringify({ type: 'string', ...leaf }), false, undefined, undefined, true, undefined, false);
    try {
      return g.ToString();
    } finally {
      g.delete();
    }
  });
  const rules = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z0-9_]+) ::= (.*)$/.exec(line);
    if (m) rules.set(m[1]!, m[2]!);
  }
  // keep what `string` reaches
  const keep = new Set<string>();
  const visit = (name: string): void => {
    if (keep.has(name) || !rules.has(name)) return;
    keep.add(name);
    for (const ref of identifiers(rules.get(name)!)) visit(ref);
  };
  visit('string');
  if (!keep.has('string')) throw new Error(`xgrammar wrote no string rule for ${JSON.stringify(leaf)}`);
  const out: string[] = [];
  for (const name of keep) out.push(`${prefix}${name} ::= ${rewrite(rules.get(name)!, (id) => (keep.has(id) ? prefix + id : id))}`);
  return { name: `${prefix}string`, rules: out };
}

/** identifiers referenced in a rule body (outside literals and classes) */
function identifiers(body: string): string[] {
  const ids: string[] = [];
  rewrite(body, (id) => (ids.push(id), id));
  return ids;
}

/** Renames identifiers and makes classes JSON-safe, skipping string literals. */
function rewrite(body: string, rename: (id: string) => string): string {
  let out = '';
  let i = 0;
  while (i < body.length) {
    const c = body[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < body.length && body[j] !== '"') j += body[j] === '\\' ? 2 : 1;
      out += body.slice(i, j + 1);
      i = j + 1;
    } else if (c === '[') {
      let j = i + 1;
      if (body[j] === '^') j++;
      if (body[j] === ']') j++;
      while (j < body.length && body[j] !== ']') j += body[j] === '\\' ? 2 : 1;
      out += safeClass(body.slice(i, j + 1));
      i = j + 1;
    } else if (/[A-Za-z_]/.test(c)) {
      let j = i;
      while (j < body.length && /[A-Za-z0-9_]/.test(body[j]!)) j++;
      out += rename(body.slice(i, j));
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** a class without raw `"`, `\` or control characters (they are not JSON string text) */
function safeClass(cls: string): string {
  if (cls.startsWith('[^')) return `[^${cls.slice(2, -1)}\\"\\\\\\0-\\x1f]`;
  const ranges = parseClass(cls.slice(1, -1));
  const out: [number, number][] = [];
  for (const [a, b] of ranges) {
    for (const [x, y] of subtract(a, b)) out.push([x, y]);
  }
  if (out.length === 0) return '[^\\0-\\U0010ffff]';
  return `[${out.map(([a, b]) => (a === b ? esc(a) : `${esc(a)}-${esc(b)}`)).join('')}]`;
}

/** [a, b] minus 0x00-0x1f, 0x22 and 0x5c */
function subtract(a: number, b: number): [number, number][] {
  const cuts: [number, number][] = [[0, 0x1f], [0x22, 0x22], [0x5c, 0x5c]];
  let pieces: [number, number][] = [[a, b]];
  for (const [x, y] of cuts) {
    pieces = pieces.flatMap(([p, q]): [number, number][] => {
      if (q < x || p > y) return [[p, q]];
      const r: [number, number][] = [];
      if (p < x) r.push([p, x - 1]);
      if (q > y) r.push([y + 1, q]);
      return r;
    });
  }
  return pieces;
}

function esc(cp: number): string {
  if (cp === 0x5d || cp === 0x2d || cp === 0x5e || cp === 0x5b) return `\\${String.fromCodePoint(cp)}`;
  if (cp < 0x20 || cp === 0x7f) return `\\x${cp.toString(16).padStart(2, '0')}`;
  if (cp > 0xffff) return `\\U${cp.toString(16).padStart(8, '0')}`;
  return String.fromCodePoint(cp);
}

/** xgrammar's printed class body → code point ranges */
function parseClass(body: string): [number, number][] {
  const cps: number[] = [];
  const ranges: [number, number][] = [];
  let i = 0;
  const one = (): number => {
    const c = body[i]!;
    if (c !== '\\') {
      const cp = body.codePointAt(i)!;
      i += cp > 0xffff ? 2 : 1;
      return cp;
    }
    const e = body[i + 1]!;
    i += 2;
    const hex = (n: number): number => {
      const v = parseInt(body.slice(i, i + n), 16);
      i += n;
      return v;
    };
    switch (e) {
      case 'x': return hex(2);
      case 'u': return hex(4);
      case 'U': return hex(8);
      case 'n': return 10;
      case 'r': return 13;
      case 't': return 9;
      case '0': return 0;
      default: return e.codePointAt(0)!;
    }
  };
  while (i < body.length) {
    const a = one();
    if (body[i] === '-' && i + 1 < body.length) {
      i++;
      ranges.push([a, one()]);
    } else cps.push(a);
  }
  return [...ranges, ...cps.map((c): [number, number] => [c, c])];
}
