// Facts about schemas the compiler needs: whether oneOf's branches are disjoint (then oneOf
// is anyOf), and an ECMAScript `pattern` (unanchored, as JSON Schema says) as an anchored one.
import { UnsupportedSchemaError } from './leaf-rules.js';
import { isObject } from './merge.js';
import type { Schema } from './merge.js';

/** the JSON types a branch allows (integer counted as number), or undefined (any) */
function branchTypes(s: Schema): Set<string> | undefined {
  if ('const' in s) return new Set([typeOf(s['const'])]);
  if (Array.isArray(s['enum'])) return new Set(s['enum'].map(typeOf));
  const t = s['type'];
  if (typeof t === 'string') return new Set([t === 'integer' ? 'number' : t]);
  if (Array.isArray(t)) return new Set(t.map((x) => (x === 'integer' ? 'number' : String(x))));
  if (isObject(s['properties']) || Array.isArray(s['required'])) return undefined;
  return undefined;
}

function typeOf(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'number' ? 'number' : typeof v;
}

/** values a branch may take at a required property, or undefined (any) */
function tagValues(s: Schema, name: string, resolve: (ref: string) => Schema | boolean): Set<string> | undefined {
  if (!Array.isArray(s['required']) || !s['required'].includes(name) || !isObject(s['properties'])) return undefined;
  let p = s['properties'][name];
  while (isObject(p) && typeof p['$ref'] === 'string') p = resolve(p['$ref']);
  if (!isObject(p)) return undefined;
  if ('const' in p) return new Set([JSON.stringify(p['const'])]);
  if (Array.isArray(p['enum'])) return new Set(p['enum'].map((v) => JSON.stringify(v)));
  return undefined;
}

/**
 * Branches no value can match twice: pairwise, their JSON types are apart, or their const /
 * enum values are, or both are objects requiring one property whose constant values differ.
 */
export function disjointBranches(branches: unknown[], resolve: (ref: string) => Schema | boolean): boolean {
  const bs: Schema[] = [];
  for (let b of branches) {
    while (isObject(b) && typeof b['$ref'] === 'string' && Object.keys(b).length === 1) b = resolve(b['$ref']);
    if (!isObject(b)) return false;
    bs.push(b);
  }
  for (let i = 0; i < bs.length; i++) {
    for (let j = i + 1; j < bs.length; j++) if (!apart(bs[i]!, bs[j]!, resolve)) return false;
  }
  return true;
}

function apart(a: Schema, b: Schema, resolve: (ref: string) => Schema | boolean): boolean {
  const consts = (s: Schema): Set<string> | undefined => ('const' in s ? new Set([JSON.stringify(s['const'])]) : Array.isArray(s['enum']) ? new Set(s['enum'].map((v) => JSON.stringify(v))) : undefined);
  const ca = consts(a);
  const cb = consts(b);
  if (ca && cb) return ![...ca].some((x) => cb.has(x));
  const ta = branchTypes(a);
  const tb = branchTypes(b);
  if (ta && tb && ![...ta].some((x) => tb.has(x))) return true;
  // integer vs non-integer numbers are not apart; objects told apart by a constant tag
  const names = Array.isArray(a['required']) ? (a['required'] as unknown[]).filter((x): x is string => typeof x === 'string') : [];
  for (const name of names) {
    const va = tagValues(a, name, resolve);
    const vb = tagValues(b, name, resolve);
    if (va && vb && ![...va].some((x) => vb.has(x))) return true;
  }
  return false;
}

/** a regex source split at its depth-0 `|` (outside groups and classes) */
function topLevelBranches(p: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let inClass = false;
  let from = 0;
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    if (c === '\\') i++;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) {
      out.push(p.slice(from, i));
      from = i + 1;
    }
  }
  out.push(p.slice(from));
  return out;
}

/** JSON Schema's pattern matches anywhere in the string: the anchored regex of the same strings */
export function unanchored(raw: string, at: string): string {
  // raw control characters (a NUL in a class) as escapes: xgrammar's regex parser stops at them
  const p = raw.replace(/[\u0000-\u001f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  if (/\(\?[=!<]|\\[1-9]|\\[bB]|\\k</.test(p)) throw new UnsupportedSchemaError(`the pattern ${JSON.stringify(p)} (at ${at}/pattern) uses lookaround, backreferences or word boundaries, which no grammar engine here enforces`, 'pattern', at);
  const branches = topLevelBranches(p).map((b) => {
    const start = b.startsWith('^');
    const end = /(^|[^\\])(\\\\)*\$$/.test(b);
    const core = b.slice(start ? 1 : 0, end ? -1 : undefined);
    if (/(^|[^\\])(\\\\)*[\^$]/.test(core.replace(/\[(?:\\.|[^\]\\])*\]/g, ''))) {
      throw new UnsupportedSchemaError(`the pattern ${JSON.stringify(p)} (at ${at}/pattern) anchors inside, which is not supported`, 'pattern', at);
    }
    return `${start ? '' : '.*'}${core}${end ? '' : '.*'}`;
  });
  return branches.length === 1 ? `^${branches[0]}$` : `^(${branches.join('|')})$`;
}

/**
 * A pattern that is one character class (or `.`, `\\d`, `\\w`) repeated, anchored at both ends,
 * with the length bounds [min, max] folded into its repetition; null when no length fits,
 * undefined for any other pattern.
 */
export function classRun(pattern: string, min: number, max: number | undefined): string | null | undefined {
  const m = /^\^(\[(?:\\.|[^\]\\])+\]|\\[dw]|[A-Za-z0-9])(\*|\+|\{(\d+)(?:(,)(\d*))?\})\$$/.exec(pattern);
  if (!m) return undefined;
  const [, cls, q, a, comma, b] = m;
  let lo = q === '+' ? 1 : 0;
  let hi: number | undefined;
  if (a !== undefined) {
    lo = Number(a);
    hi = comma === undefined ? lo : b === '' ? undefined : Number(b);
  }
  lo = Math.max(lo, min);
  if (max !== undefined) hi = hi === undefined ? max : Math.min(hi, max);
  if (hi !== undefined && hi < lo) return null;
  return `^${cls!}{${lo},${hi ?? ''}}$`;
}
