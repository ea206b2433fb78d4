// Deciding a schema on one JSON value: where a schema lists its values (enum, const), every
// other keyword, those no grammar can enforce too (not, if/then/else, uniqueItems,
// dependencies, overlapping oneOf), is decided value by value, and the grammar is the
// values that pass. Exact or nothing: a keyword this validator does not know how to check
// makes the answer `undefined`, and the compiler refuses it by name.
import { ENFORCED_FORMATS } from './formats.js';
import { isObject } from './merge.js';
import type { Schema } from './merge.js';

/** a local $ref's target */
export type Resolve = (ref: string) => Schema | boolean;

/** what makes a decision impossible: the keyword and the reason */
export class Undecided extends Error {
  constructor(readonly keyword: string) {
    super(`"${keyword}" cannot be decided`);
  }
}

/** keywords that never assert */
const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$comment', '$schema', '$id', 'id', 'deprecated', 'readOnly', 'writeOnly', '$defs', 'definitions', '$anchor', 'contentMediaType', 'contentEncoding', 'contentSchema']);
/** assertions this validator does not check */
const UNKNOWN = new Set(['$dynamicRef', '$recursiveRef', 'unevaluatedProperties', 'unevaluatedItems', '$data']);

/** JSON equality (numbers by value, objects by their entries) */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

function undecided(keyword: string): never {
  throw new Undecided(keyword);
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'number' ? 'number' : typeof v;
}

function hasType(v: unknown, t: string): boolean {
  if (t === 'integer') return typeof v === 'number' && Number.isInteger(v);
  return typeOf(v) === t;
}

function regex(p: string, keyword: string): RegExp {
  try {
    return new RegExp(p, 'u');
  } catch {
    throw new Undecided(keyword);
  }
}

/** Whether `v` is valid under `s`; throws Undecided naming a keyword it cannot check. */
export function validates(s: unknown, v: unknown, resolve: Resolve, depth = 0): boolean {
  if (s === true) return true;
  if (s === false) return false;
  if (!isObject(s)) throw new Undecided('schema');
  if (depth > 64) throw new Undecided('$ref');
  const sub = (x: unknown, y: unknown): boolean => validates(x, y, resolve, depth + 1);
  for (const [k, x] of Object.entries(s)) {
    if (ANNOTATIONS.has(k)) continue;
    if (UNKNOWN.has(k)) throw new Undecided(k);
    let ok: boolean;
    try {
      ok = check(k, x, s, v, sub, resolve);
    } catch (err) {
      // a malformed keyword value (allOf that is no list, …) is not decided
      if (err instanceof Undecided) throw err;
      throw new Undecided(k);
    }
    if (!ok) return false;
  }
  return true;
}

function check(k: string, x: unknown, s: Schema, v: unknown, sub: (x: unknown, y: unknown) => boolean, resolve: Resolve): boolean {
  const num = typeof v === 'number';
  const str = typeof v === 'string';
  const arr = Array.isArray(v);
  const obj = isObject(v);
  switch (k) {
    case '$ref':
      return typeof x === 'string' ? sub(resolve(x), v) : false;
    case 'type':
      return (Array.isArray(x) ? x : [x]).some((t) => typeof t === 'string' && hasType(v, t));
    case 'enum':
      return Array.isArray(x) && x.some((e) => jsonEqual(e, v));
    case 'const':
      return jsonEqual(x, v);
    case 'not':
      return !sub(x, v);
    case 'allOf':
      return (x as unknown[]).every((b) => sub(b, v));
    case 'anyOf':
      return (x as unknown[]).some((b) => sub(b, v));
    case 'oneOf':
      return (x as unknown[]).filter((b) => sub(b, v)).length === 1;
    case 'if':
      return sub(x, v) ? (Object.hasOwn(s, 'then') ? sub(s['then'], v) : true) : Object.hasOwn(s, 'else') ? sub(s['else'], v) : true;
    case 'then':
    case 'else':
      return true;
    case 'minimum':
      return !num || v >= (x as number);
    case 'maximum':
      return !num || v <= (x as number);
    case 'exclusiveMinimum':
      if (typeof x === 'boolean') return !num || !x || v !== s['minimum'];
      return !num || v > (x as number);
    case 'exclusiveMaximum':
      if (typeof x === 'boolean') return !num || !x || v !== s['maximum'];
      return !num || v < (x as number);
    case 'multipleOf': {
      if (!num) return true;
      const q = v / (x as number);
      if (Number.isInteger(q)) return true;
      // 0.3 / 0.1 is 2.9999999999999996: validators disagree on such values, so they are not decided
      return Math.abs(q - Math.round(q)) < 1e-9 ? undecided('multipleOf') : false;
    }
    case 'minLength':
      return !str || [...v].length >= (x as number);
    case 'maxLength':
      return !str || [...v].length <= (x as number);
    case 'pattern':
      return !str || regex(x as string, 'pattern').test(v);
    case 'items':
      if (!arr) return true;
      if (Array.isArray(x)) return x.every((b, i) => i >= v.length || sub(b, v[i])) && (!Object.hasOwn(s, 'additionalItems') || v.slice(x.length).every((e) => sub(s['additionalItems'], e)));
      return v.slice(Array.isArray(s['prefixItems']) ? s['prefixItems'].length : 0).every((e) => sub(x, e));
    case 'prefixItems':
      return !arr || (x as unknown[]).every((b, i) => i >= v.length || sub(b, v[i]));
    case 'additionalItems':
      return true;
    case 'minItems':
      return !arr || v.length >= (x as number);
    case 'maxItems':
      return !arr || v.length <= (x as number);
    case 'uniqueItems':
      return !arr || x !== true || v.every((a, i) => v.slice(i + 1).every((b) => !jsonEqual(a, b)));
    case 'contains': {
      if (!arr) return true;
      const n = v.filter((e) => sub(x, e)).length;
      const lo = typeof s['minContains'] === 'number' ? s['minContains'] : 1;
      const hi = typeof s['maxContains'] === 'number' ? s['maxContains'] : Infinity;
      return n >= lo && n <= hi;
    }
    case 'minContains':
    case 'maxContains':
      return true;
    case 'required':
      return !obj || (x as unknown[]).every((n) => typeof n === 'string' && Object.hasOwn(v, n));
    case 'minProperties':
      return !obj || Object.keys(v).length >= (x as number);
    case 'maxProperties':
      return !obj || Object.keys(v).length <= (x as number);
    case 'propertyNames':
      return !obj || Object.keys(v).every((n) => sub(x, n));
    case 'properties':
      return !obj || Object.entries(x as Schema).every(([n, b]) => !Object.hasOwn(v, n) || sub(b, v[n]));
    case 'patternProperties':
      return !obj || Object.entries(x as Schema).every(([p, b]) => Object.keys(v).every((n) => !regex(p, 'patternProperties').test(n) || sub(b, v[n])));
    case 'additionalProperties': {
      if (!obj) return true;
      const props = isObject(s['properties']) ? s['properties'] : {};
      const pats = isObject(s['patternProperties']) ? Object.keys(s['patternProperties']).map((p) => regex(p, 'patternProperties')) : [];
      return Object.keys(v).every((n) => Object.hasOwn(props, n) || pats.some((r) => r.test(n)) || sub(x, v[n]));
    }
    case 'format':
      // loom enforces some formats on strings: those are not decided here; the rest annotate
      return typeof v !== 'string' || !ENFORCED_FORMATS.has(x as string) ? true : undecided('format');
    case 'dependentRequired':
      return !obj || Object.entries(x as Schema).every(([n, req]) => !Object.hasOwn(v, n) || (req as unknown[]).every((r) => typeof r === 'string' && Object.hasOwn(v, r)));
    case 'dependentSchemas':
      return !obj || Object.entries(x as Schema).every(([n, b]) => !Object.hasOwn(v, n) || sub(b, v));
    case 'dependencies':
      return !obj || Object.entries(x as Schema).every(([n, d]) => !Object.hasOwn(v, n) || (Array.isArray(d) ? d.every((r) => typeof r === 'string' && Object.hasOwn(v, r)) : sub(d, v)));
    default:
      // a keyword JSON Schema does not define asserts nothing
      return true;
  }
}
