// Schemas rewritten into forms the compiler writes: dependencies split by which named
// properties are present, a oneOf of required-only branches as an anyOf whose branches
// exclude each other, and a schema's memo key without its annotations.
import { UnsupportedSchemaError } from './leaf-rules.js';
import { isObject } from './merge.js';
import type { Schema } from './merge.js';

/** keywords that annotate, and $defs (which assert nothing where they are) */
export const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$comment', '$schema', '$id', 'id', 'deprecated', 'readOnly', 'writeOnly', '$defs', 'definitions']);

/** keywords that only annotate: left out of the memo key */
const ANNOTATION_ONLY = new Set(['title', 'description', 'default', 'examples', '$comment', 'deprecated', 'readOnly', 'writeOnly']);
/** keywords holding one subschema, a list of them, or a map of them */
const SUB_ONE = new Set(['items', 'additionalItems', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedItems', 'unevaluatedProperties']);
const SUB_LIST = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items']);
const SUB_MAP = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);

/** a schema with its annotations left out, keyword by keyword (values such as enum's stay whole) */
export function withoutAnnotations(node: unknown): unknown {
  if (!isObject(node)) return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (ANNOTATION_ONLY.has(k)) continue;
    if (SUB_LIST.has(k) && Array.isArray(v)) out[k] = v.map(withoutAnnotations);
    else if (SUB_ONE.has(k)) out[k] = withoutAnnotations(v);
    else if (SUB_MAP.has(k) && isObject(v)) out[k] = Object.fromEntries(Object.entries(v).map(([n, x]) => [n, withoutAnnotations(x)]));
    else out[k] = v;
  }
  return out;
}

/**
 * oneOf of branches that only require names, as anyOf: branch i's names present and, from
 * every other branch, one of its names absent (its schema false). undefined: other branches,
 * or too many cases.
 */
export function exactlyOneRequired(branches: unknown[]): Schema[] | undefined {
  const sets: string[][] = [];
  for (const b of branches) {
    if (!isObject(b) || !Array.isArray(b['required']) || Object.keys(b).some((k) => k !== 'required' && !ANNOTATIONS.has(k))) return undefined;
    const names = b['required'].filter((x): x is string => typeof x === 'string');
    if (names.length === 0) return undefined;
    sets.push(names);
  }
  const out: Schema[] = [];
  for (let i = 0; i < sets.length; i++) {
    // one absent name from each other branch: their product
    let combos: string[][] = [[]];
    for (let j = 0; j < sets.length; j++) {
      if (j === i) continue;
      combos = combos.flatMap((c) => sets[j]!.filter((n) => !sets[i]!.includes(n)).map((n) => [...c, n]));
      if (combos.length > 64) return undefined;
    }
    for (const absent of combos) out.push({ required: sets[i], properties: Object.fromEntries(absent.map((n) => [n, false])) });
  }
  return out;
}

/** the most dependencies split into cases (2^n branches) */
const MAX_DEPENDENCIES = 4;

/**
 * dependencies / dependentRequired / dependentSchemas as anyOf over which of the named
 * properties are present: absent ones cannot appear (their schema false), present ones are
 * required with what they need. The branches are disjoint. undefined: none in `node`.
 */
export function splitDependencies(node: Schema, at: string): Schema | undefined {
  const deps: [string, unknown][] = [];
  for (const k of ['dependencies', 'dependentRequired', 'dependentSchemas']) {
    if (isObject(node[k])) deps.push(...Object.entries(node[k]));
  }
  if (deps.length === 0) return undefined;
  if (deps.length > MAX_DEPENDENCIES) throw new UnsupportedSchemaError(`more than ${MAX_DEPENDENCIES} dependencies (at ${at}) are not supported`, 'dependencies', at);
  const { dependencies: _d, dependentRequired: _r, dependentSchemas: _s, ...base } = node;
  const branches: unknown[] = [];
  for (let present = 0; present < 1 << deps.length; present++) {
    const parts: unknown[] = [base];
    deps.forEach(([name, need], i) => {
      if ((present & (1 << i)) === 0) parts.push({ properties: { [name]: false } });
      else if (Array.isArray(need)) parts.push({ required: [name, ...need.filter((x): x is string => typeof x === 'string')] });
      else parts.push({ required: [name] }, need);
    });
    branches.push({ allOf: parts });
  }
  return { anyOf: branches };
}
