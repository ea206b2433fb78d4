// Integer and number grammars as EBNF alternatives, written out as finite automata:
// a decimal range [lo, hi] (either end open), a multiple of m (the residue automaton), and
// numbers between integer bounds. JSON integers have no leading zeros; "-0" is refused.

/** EBNF for the decimal digits of every n in [lo, hi] (lo ≥ 0; hi undefined: no upper end). */
export function uintRange(lo: bigint, hi: bigint | undefined, named: Named = (b) => `(${b})`): string {
  if (hi !== undefined && hi < lo) return '';
  const alts: string[] = [];
  const loS = lo.toString();
  const maxLen = hi === undefined ? loS.length : hi.toString().length;
  for (let len = loS.length; len <= maxLen; len++) {
    const a = len === loS.length ? loS : '1' + '0'.repeat(len - 1);
    const b = hi !== undefined && len === maxLen ? hi.toString() : '9'.repeat(len);
    // one rule per length: xgrammar 0.1.27 mismatches inline alternatives of several lengths
    // followed by more grammar ("(… | "6553" [0-4]) "."" took "65535.")
    alts.push(named(sameLength(a, b, len === 1).map((x) => `(${x})`).join(' | ')));
  }
  if (hi === undefined) alts.push(`[1-9] [0-9]{${maxLen},}`);
  return alts.join(' | ');
}

/** strings of equal length between a and b (digit-wise ranges), as EBNF sequences */
function sameLength(a: string, b: string, single: boolean): string[] {
  if (a.length === 0) return ['""'];
  if (a === b) return [JSON.stringify(a)];
  const cls = (x: number, y: number): string => (x === y ? `"${x}"` : `[${x}-${y}]`);
  const rest = (n: number): string => (n === 0 ? '' : ` [0-9]{${n}}`);
  const da = Number(a[0]);
  const db = Number(b[0]);
  const n = a.length - 1;
  if (da === db) return sameLength(a.slice(1), b.slice(1), false).map((s) => `"${da}" ${s}`);
  const out: string[] = [];
  const aLow = /^0*$/.test(a.slice(1));
  const bHigh = /^9*$/.test(b.slice(1));
  const from = aLow ? da : da + 1;
  const to = bHigh ? db : db - 1;
  if (!aLow) out.push(...sameLength(a.slice(1), '9'.repeat(n), false).map((s) => `"${da}" ${s}`));
  if (from <= to) out.push(`${cls(from, to)}${rest(n)}`);
  if (!bHigh) out.push(...sameLength('0'.repeat(n), b.slice(1), false).map((s) => `"${db}" ${s}`));
  void single;
  return out;
}

/** EBNF of the integers in [lo, hi] (bounds optional, inclusive) */
export function integerRange(lo: bigint | undefined, hi: bigint | undefined, named: Named = (b) => `(${b})`): string {
  const alts: string[] = [];
  // non-negative part
  if (hi === undefined || hi >= 0n) {
    const a = lo === undefined || lo < 0n ? 0n : lo;
    const r = uintRange(a, hi, named);
    if (r) alts.push(named(r));
  }
  // negative part: -n for n in [max(1, -hi), -lo]
  if (lo === undefined || lo < 0n) {
    const a = hi === undefined || hi >= 0n ? 1n : -hi;
    const b = lo === undefined ? undefined : -lo;
    const r = uintRange(a, b, named);
    if (r) alts.push(`"-" ${named(r)}`);
  }
  return alts.length === 0 ? '' : alts.map((a) => `(${a})`).join(' | ');
}

/**
 * Rules for the non-negative multiples of m written in decimal (no leading zero): the
 * residue automaton, one rule per residue. Returns [startExpr, rules].
 */
export function multipleOfRules(m: number, name: string): [string, string[]] {
  const rules: string[] = [];
  // r_k: having read digits with value ≡ k (mod m), the rest to reach ≡ 0
  for (let k = 0; k < m; k++) {
    const byNext = new Map<number, number[]>();
    for (let d = 0; d <= 9; d++) {
      const next = (k * 10 + d) % m;
      byNext.set(next, [...(byNext.get(next) ?? []), d]);
    }
    const alts = [...byNext].map(([next, ds]) => `${digitClass(ds)} ${name}_${next}`);
    if (k === 0) alts.unshift('""');
    rules.push(`${name}_${k} ::= ${alts.join(' | ')}`);
  }
  const firsts = new Map<number, number[]>();
  for (let d = 1; d <= 9; d++) firsts.set(d % m, [...(firsts.get(d % m) ?? []), d]);
  const start = ['"0"', ...[...firsts].map(([r, ds]) => `${digitClass(ds)} ${name}_${r}`)].join(' | ');
  return [start, rules];
}

function digitClass(ds: number[]): string {
  return ds.length === 1 ? `"${ds[0]}"` : `[${ds.join('')}]`;
}

/** makes a rule of an EBNF body and returns its name (or the body grouped) */
export type Named = (body: string) => string;

const FRAC = '("." [0-9]+)?';
const EXP = '([eE] [+\\-]? [0-9]+)?';

/**
 * EBNF of JSON numbers x with lo ≤ x ≤ hi (exclusive flags make the bound strict), where the
 * bounds are integers. With a bound, numbers are written without exponent.
 */
export function numberRange(lo: bigint | undefined, hi: bigint | undefined, loExcl: boolean, hiExcl: boolean, digits?: number, named: Named = (b) => `(${b})`): string {
  const frac = digits === undefined ? FRAC : digits === 0 ? '("." "0"+)?' : `("." [0-9]{1,${digits}} "0"*)?`;
  if (lo === undefined && hi === undefined) return `"-"? ("0" | [1-9] [0-9]*) ${frac}${digits === undefined ? ` ${EXP}` : ''}`;
  const alts: string[] = [];
  if (hi === undefined || hi > 0n || (hi === 0n && !hiExcl)) {
    const r = magnitude(lo === undefined || lo < 0n ? 0n : lo, lo !== undefined && lo >= 0n && loExcl, hi, hiExcl, frac, named);
    if (r) alts.push(r);
  }
  if (lo === undefined || lo < 0n) {
    const r = magnitude(hi === undefined || hi >= 0n ? 0n : -hi, hi === undefined || hi >= 0n ? true : hiExcl, lo === undefined ? undefined : -lo, loExcl, frac, named);
    if (r) alts.push(`"-" (${r})`);
  }
  return alts.map((a) => `(${a})`).join(' | ');
}

/** y = N.f (no sign) with a ≤ y ≤ b, each end strict when its flag is set */
function magnitude(a: bigint, aExcl: boolean, b: bigint | undefined, bExcl: boolean, frac: string, named: Named): string {
  const alts: string[] = [];
  // N in [a (+1 if strict), b − 1]: any fraction
  const from = aExcl ? a + 1n : a;
  const to = b === undefined ? undefined : b - 1n;
  // the digit alternatives are a rule of their own: inline, "(0 | [1-9] [0-9]{1} | … | "6553"
  // [0-4]) ("." [0-9]+)?" let 65536 through xgrammar 0.1.27's matcher (docs/benchmarks.md)
  if (to === undefined || to >= from) {
    const r = named(uintRange(from, to, named));
    alts.push(frac.endsWith(')?') ? `${r} | ${r} ${frac.slice(0, -1)}` : `${r} ${frac}`);
  }
  // N = a with a non-zero fraction (a itself excluded)
  const nz = frac === FRAC ? '[0-9]* [1-9] [0-9]*' : nonzeroFrac(frac);
  if (aExcl && (b === undefined || b > a) && nz !== undefined) alts.push(`${JSON.stringify(a.toString())} "." ${nz}`);
  // N = b with a zero fraction
  if (b !== undefined && !bExcl && (b > a || (b === a && !aExcl))) alts.push(`${JSON.stringify(b.toString())} | ${JSON.stringify(b.toString())} "." "0"+`);
  return alts.map((x) => `(${x})`).join(' | ');
}

/** the digits of a non-zero fraction of at most k significant places (k from `frac`), or undefined for none */
function nonzeroFrac(frac: string): string | undefined {
  const m = /\{1,(\d+)\}/.exec(frac);
  if (!m) return undefined;
  const k = Number(m[1]);
  const alts: string[] = [];
  for (let i = 0; i < k; i++) alts.push(`${i > 0 ? `"0"{${i}} ` : ''}[1-9] [0-9]{0,${k - 1 - i}}`);
  return `(${alts.map((a) => `(${a})`).join(' | ')}) "0"*`;
}

/** fraction digits F (one or more) with 0.F ≥ 0.d, or > when strict */
export function fractionAtLeast(d: string, strict: boolean, i = 0): string {
  if (i === d.length) return strict ? '[0-9]* [1-9] [0-9]*' : '[0-9]*';
  const k = Number(d[i]);
  const alts = [`"${k}" ${fractionAtLeast(d, strict, i + 1)}`];
  if (k < 9) alts.push(`[${k + 1}-9] [0-9]*`);
  return `(${alts.join(' | ')})`;
}
