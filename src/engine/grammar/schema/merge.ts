// allOf as one schema: the keywords of every member merged (bounds tightened, required
// united, properties merged name by name, types intersected, anyOf distributed). A pair
// that cannot be merged exactly (two different patterns, …) is refused.
import { UnsupportedSchemaError } from './leaf-rules.js';

export type Schema = Record<string, unknown>;

const MIN_KEYS = ['minimum', 'minLength', 'minItems', 'minProperties'];
const MAX_KEYS = ['maximum', 'maxLength', 'maxItems', 'maxProperties'];
const NUMERIC_TYPES = new Set(['integer', 'number']);

export function isObject(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** the types a `type` keyword allows, or undefined (all) */
function typeList(t: unknown): string[] | undefined {
  if (typeof t === 'string') return [t];
  if (Array.isArray(t)) return t.filter((x): x is string => typeof x === 'string');
  return undefined;
}

function intersectTypes(a: string[], b: string[]): string[] {
  const out = new Set<string>();
  for (const x of a) {
    for (const y of b) {
      if (x === y) out.add(x);
      else if (NUMERIC_TYPES.has(x) && NUMERIC_TYPES.has(y)) out.add('integer');
    }
  }
  return [...out];
}

const OBJECT_KEYS = ['properties', 'patternProperties', 'additionalProperties'];

const trivial = (v: unknown): boolean => v === undefined || v === true || (isObject(v) && Object.keys(v).length === 0);

/**
 * properties, patternProperties and additionalProperties of a ∧ b, exactly: a name one side
 * lists is, on the other side, under that side's matching patterns or else its
 * additionalProperties. A pattern only one side has, beside additionalProperties on the
 * other side, is refused (its keys would be under both). undefined: only one side has any.
 */
function mergeObjectKeywords(a: Schema, b: Schema, at: string): Schema | undefined {
  const has = (s: Schema): boolean => OBJECT_KEYS.some((k) => k in s);
  if (!has(a) || !has(b)) return undefined;
  const props = (s: Schema): Schema => (isObject(s['properties']) ? s['properties'] : {});
  const pats = (s: Schema): Schema => (isObject(s['patternProperties']) ? s['patternProperties'] : {});
  const onOther = (s: Schema, name: string): unknown => {
    const matched = Object.entries(pats(s))
      .filter(([p]) => {
        try {
          return new RegExp(p, 'u').test(name);
        } catch {
          throw new UnsupportedSchemaError(`the pattern ${JSON.stringify(p)} (at ${at}) is not a valid ECMAScript regular expression`, 'patternProperties', at);
        }
      })
      .map(([, v]) => v);
    if (matched.length > 0) return matched.length === 1 ? matched[0] : { allOf: matched };
    return s['additionalProperties'] ?? true;
  };
  const out: Schema = {};
  const names = new Set([...Object.keys(props(a)), ...Object.keys(props(b))]);
  if (names.size > 0) {
    const merged: Schema = {};
    for (const n of names) {
      const parts = [Object.hasOwn(props(a), n) ? props(a)[n] : onOther(a, n), Object.hasOwn(props(b), n) ? props(b)[n] : onOther(b, n)].filter((x) => !trivial(x));
      merged[n] = parts.length === 0 ? {} : parts.length === 1 ? parts[0] : { allOf: parts };
    }
    out['properties'] = merged;
  }
  const pa = pats(a);
  const pb = pats(b);
  for (const [mine, other, theirs] of [[pa, b, pb], [pb, a, pa]] as const) {
    if (Object.keys(mine).some((p) => !Object.hasOwn(theirs, p)) && !trivial(other['additionalProperties'])) {
      throw new UnsupportedSchemaError(`"allOf" where one member's "patternProperties" meets another's "additionalProperties" (at ${at}) is not supported`, 'patternProperties', at);
    }
  }
  if (Object.keys(pa).length + Object.keys(pb).length > 0) {
    const merged: Schema = { ...pa };
    for (const [p, v] of Object.entries(pb)) merged[p] = Object.hasOwn(merged, p) ? { allOf: [merged[p], v] } : v;
    out['patternProperties'] = merged;
  }
  const adds = [a['additionalProperties'], b['additionalProperties']].filter((x) => x !== undefined);
  if (adds.length > 0) out['additionalProperties'] = adds.length === 1 ? adds[0] : { allOf: adds };
  return out;
}

/** a ∧ b as one schema (both already free of $ref and allOf) */
export function mergeSchemas(a: Schema | boolean, b: Schema | boolean, at: string): Schema | boolean {
  if (a === false || b === false) return false;
  if (a === true) return b;
  if (b === true) return a;
  const out: Schema = { ...a };
  const objects = mergeObjectKeywords(a, b, at);
  if (objects !== undefined) {
    for (const k of OBJECT_KEYS) delete out[k];
    Object.assign(out, objects);
  }
  for (const [k, v] of Object.entries(b)) {
    if (objects !== undefined && OBJECT_KEYS.includes(k)) continue;
    if (!Object.hasOwn(out, k)) {
      out[k] = v;
      continue;
    }
    const u = out[k];
    if (JSON.stringify(u) === JSON.stringify(v)) continue;
    if (k === 'type') {
      const t = intersectTypes(typeList(u) ?? [], typeList(v) ?? []);
      out[k] = t;
    } else if (MIN_KEYS.includes(k) && typeof u === 'number' && typeof v === 'number') out[k] = Math.max(u, v);
    else if (MAX_KEYS.includes(k) && typeof u === 'number' && typeof v === 'number') out[k] = Math.min(u, v);
    else if ((k === 'exclusiveMinimum' || k === 'exclusiveMaximum') && typeof u === 'number' && typeof v === 'number') out[k] = k === 'exclusiveMinimum' ? Math.max(u, v) : Math.min(u, v);
    else if (k === 'required' && Array.isArray(u) && Array.isArray(v)) out[k] = [...new Set([...u, ...v])];
    else if (k === 'properties' && isObject(u) && isObject(v)) {
      const props: Schema = { ...u };
      for (const [name, s] of Object.entries(v)) props[name] = Object.hasOwn(props, name) ? { allOf: [props[name], s] } : s;
      out[k] = props;
    } else if ((k === 'items' || k === 'additionalProperties' || k === 'propertyNames' || k === 'contains') && !Array.isArray(u) && !Array.isArray(v)) {
      out[k] = { allOf: [u, v] };
    } else if (k === 'enum' && Array.isArray(u) && Array.isArray(v)) {
      const keys = new Set(v.map((x) => JSON.stringify(x)));
      out[k] = u.filter((x) => keys.has(JSON.stringify(x)));
    } else if (k === 'anyOf' || k === 'oneOf') {
      // (a1 | a2) ∧ (b1 | b2) = (a1 ∧ b1) | (a1 ∧ b2) | …
      const xs = u as unknown[];
      const ys = v as unknown[];
      if (xs.length * ys.length > 64) throw new UnsupportedSchemaError(`"allOf" of two "${k}" lists (at ${at}) is too large to merge`, k, at);
      out['anyOf'] = xs.flatMap((x) => ys.map((y) => ({ allOf: [x, y] })));
      if (k === 'oneOf') delete out['oneOf'];
    } else if (k === 'title' || k === 'description' || k === 'default' || k === 'examples' || k === '$comment' || k === 'format') {
      if (k === 'format') throw new UnsupportedSchemaError(`"allOf" with two different formats (at ${at}) cannot be merged`, k, at);
    } else {
      throw new UnsupportedSchemaError(`"allOf" whose members both set "${k}" differently (at ${at}) is not supported`, k, at);
    }
  }
  return out;
}
