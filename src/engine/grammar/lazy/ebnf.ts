// The EBNF loom's schema compiler writes (xgrammar's notation: `name ::= ...`, "strings",
// [classes], ( ), | , ? * + {m,n}) parsed into expressions over code points. Lookahead
// assertions `(= ...)` are hints for xgrammar's precomputation; what they assert the
// grammar's context already enforces, so they parse to nothing.
import { complementRanges, encodeUtf8, normalizeRanges } from './utf8-ranges.js';

export type Expr =
  /** a literal, as UTF-8 bytes */
  | { readonly kind: 'bytes'; readonly bytes: readonly number[] }
  /** one code point in these (normalized) ranges */
  | { readonly kind: 'class'; readonly ranges: ReadonlyArray<readonly [number, number]> }
  | { readonly kind: 'ref'; readonly name: string }
  | { readonly kind: 'seq'; readonly items: readonly Expr[] }
  | { readonly kind: 'alt'; readonly items: readonly Expr[] }
  /** item repeated min..max times (max may be Infinity) */
  | { readonly kind: 'repeat'; readonly item: Expr; readonly min: number; readonly max: number };

export type Rules = ReadonlyMap<string, Expr>;

export class EbnfSyntaxError extends Error {}

const NAME_START = /[A-Za-z_]/;
const NAME_CHAR = /[A-Za-z0-9_.-]/;
const SIMPLE_ESCAPES: Record<string, number> = { n: 10, t: 9, r: 13, b: 8, f: 12, v: 11, '0': 0, a: 7, e: 27 };

/** Parses every rule; throws EbnfSyntaxError on what this notation does not have. */
export function parseEbnf(text: string): Map<string, Expr> {
  return new Parser(text).rules();
}

class Parser {
  private pos = 0;

  constructor(private readonly src: string) {}

  rules(): Map<string, Expr> {
    const rules = new Map<string, Expr>();
    this.skipSpace();
    while (this.pos < this.src.length) {
      const name = this.name();
      this.skipSpace();
      if (!this.src.startsWith('::=', this.pos)) this.fail('expected ::=');
      this.pos += 3;
      if (rules.has(name)) this.fail(`rule ${name} is defined twice`);
      rules.set(name, this.alternatives());
      this.skipSpace();
    }
    for (const expr of rules.values()) this.checkRefs(expr, rules);
    return rules;
  }

  private checkRefs(e: Expr, rules: ReadonlyMap<string, Expr>): void {
    if (e.kind === 'ref' && !rules.has(e.name)) throw new EbnfSyntaxError(`rule ${e.name} is not defined`);
    if (e.kind === 'seq' || e.kind === 'alt') for (const i of e.items) this.checkRefs(i, rules);
    if (e.kind === 'repeat') this.checkRefs(e.item, rules);
  }

  private alternatives(): Expr {
    const items = [this.sequence()];
    for (;;) {
      this.skipSpace();
      if (this.src[this.pos] !== '|') break;
      this.pos++;
      items.push(this.sequence());
    }
    return items.length === 1 ? items[0]! : { kind: 'alt', items };
  }

  private sequence(): Expr {
    const items: Expr[] = [];
    for (;;) {
      this.skipSpace();
      const c = this.src[this.pos];
      if (c === undefined || c === '|' || c === ')' || this.atRuleStart()) break;
      items.push(this.suffixed(this.atom()));
    }
    return items.length === 1 ? items[0]! : { kind: 'seq', items };
  }

  private atom(): Expr {
    const c = this.src[this.pos]!;
    if (c === '"') return this.literal();
    if (c === '[') return this.charClass();
    if (c === '(') {
      this.pos++;
      const lookahead = this.src[this.pos] === '=';
      if (lookahead) this.pos++;
      const inner = this.alternatives();
      this.skipSpace();
      if (this.src[this.pos] !== ')') this.fail('expected )');
      this.pos++;
      return lookahead ? { kind: 'seq', items: [] } : inner;
    }
    if (NAME_START.test(c)) return { kind: 'ref', name: this.name() };
    return this.fail(`unexpected ${JSON.stringify(c)}`);
  }

  private suffixed(e: Expr): Expr {
    for (;;) {
      const c = this.src[this.pos];
      if (c === '?') e = { kind: 'repeat', item: e, min: 0, max: 1 };
      else if (c === '*') e = { kind: 'repeat', item: e, min: 0, max: Infinity };
      else if (c === '+') e = { kind: 'repeat', item: e, min: 1, max: Infinity };
      else if (c === '{') {
        const m = /^\{\s*(\d+)\s*(,\s*(\d*)\s*)?\}/.exec(this.src.slice(this.pos, this.pos + 40));
        if (!m) this.fail('bad repetition');
        const min = Number(m![1]);
        const max = m![2] === undefined ? min : m![3] === '' ? Infinity : Number(m![3]);
        if (max < min) this.fail('repetition max below min');
        e = { kind: 'repeat', item: e, min, max };
        this.pos += m![0].length - 1;
      } else return e;
      this.pos++;
    }
  }

  private literal(): Expr {
    this.pos++;
    const bytes: number[] = [];
    for (;;) {
      const c = this.src[this.pos];
      if (c === undefined) this.fail('unterminated string');
      if (c === '"') break;
      bytes.push(...encodeUtf8(this.char()));
    }
    this.pos++;
    return { kind: 'bytes', bytes };
  }

  private charClass(): Expr {
    this.pos++;
    const negated = this.src[this.pos] === '^';
    if (negated) this.pos++;
    const ranges: Array<[number, number]> = [];
    while (this.src[this.pos] !== ']') {
      if (this.pos >= this.src.length) this.fail('unterminated character class');
      const lo = this.char();
      if (this.src[this.pos] === '-' && this.src[this.pos + 1] !== ']') {
        this.pos++;
        const hi = this.char();
        if (hi < lo) this.fail('character range out of order');
        ranges.push([lo, hi]);
      } else ranges.push([lo, lo]);
    }
    this.pos++;
    return { kind: 'class', ranges: negated ? complementRanges(ranges) : normalizeRanges(ranges) };
  }

  /** one (possibly escaped) code point */
  private char(): number {
    const c = this.src.codePointAt(this.pos)!;
    if (c !== 0x5c) {
      this.pos += c > 0xffff ? 2 : 1;
      return c;
    }
    const e = this.src[this.pos + 1];
    if (e === undefined) this.fail('escape at the end');
    this.pos += 2;
    const hexLength = e === 'x' ? 2 : e === 'u' ? 4 : e === 'U' ? 8 : 0;
    if (hexLength > 0) {
      const hex = this.src.slice(this.pos, this.pos + hexLength);
      if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== hexLength) this.fail(`bad \\${e} escape`);
      this.pos += hexLength;
      return parseInt(hex, 16);
    }
    return SIMPLE_ESCAPES[e!] ?? e!.codePointAt(0)!;
  }

  private name(): string {
    const start = this.pos;
    if (!NAME_START.test(this.src[this.pos] ?? '')) this.fail('expected a rule name');
    while (NAME_CHAR.test(this.src[this.pos] ?? '')) this.pos++;
    return this.src.slice(start, this.pos);
  }

  private atRuleStart(): boolean {
    if (!NAME_START.test(this.src[this.pos] ?? '')) return false;
    let p = this.pos;
    while (NAME_CHAR.test(this.src[p] ?? '')) p++;
    while (this.src[p] === ' ' || this.src[p] === '\t') p++;
    return this.src.startsWith('::=', p);
  }

  private skipSpace(): void {
    for (;;) {
      const c = this.src[this.pos];
      if (c === ' ' || c === '\t' || c === '\n' || c === '\r') this.pos++;
      else if (c === '#') while (this.pos < this.src.length && this.src[this.pos] !== '\n') this.pos++;
      else return;
    }
  }

  private fail(msg: string): never {
    throw new EbnfSyntaxError(`${msg} at offset ${this.pos}`);
  }
}
