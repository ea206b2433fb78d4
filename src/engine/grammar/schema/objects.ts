// Object grammars: listed properties in the schema's order (required ones always, optional
// ones maybe) with further properties before, between and after them: additionalProperties
// (JSON Schema's default: any value) under keys that are no listed name (a trie's
// complement, keys.ts), patternProperties under keys matching their pattern; the count of
// properties kept in [minProperties, maxProperties] by numbering the states.
import type { SchemaCompiler } from './compile.js';
import { keyExcept, keyTrieSize } from './keys.js';
import { UnsupportedSchemaError } from './leaf-rules.js';
import { isObject } from './merge.js';
import type { Schema } from './merge.js';

/**
 * The most trie nodes of listed names beside which further keys are written, per object and
 * per schema (each costs xgrammar a pass over the vocabulary); past them an object takes
 * only its listed properties (a narrower language: every answer still valid).
 */
const MAX_TRIE = 192;
const MAX_TRIE_PER_SCHEMA = 640;

/** the largest (listed properties × counted states) written out */
const MAX_STATES = 4096;

interface Listed {
  readonly name: string;
  readonly required: boolean;
  /** `"key" colon value` */
  readonly entry: string;
}

export function objectRule(c: SchemaCompiler, s: Schema, at: string): string | undefined {
  const props = isObject(s['properties']) ? s['properties'] : {};
  const required = new Set(Array.isArray(s['required']) ? s['required'].filter((x): x is string => typeof x === 'string') : []);
  const patterns = isObject(s['patternProperties']) ? Object.entries(s['patternProperties']) : [];
  const additional = s['additionalProperties'];
  const regexes = patterns.map(([p]) => {
    try {
      return new RegExp(p, 'u');
    } catch {
      throw new UnsupportedSchemaError(`the pattern ${JSON.stringify(p)} (at ${at}/patternProperties) is not a valid ECMAScript regular expression`, 'patternProperties', at);
    }
  });
  // the schema of a named property: its own, and every pattern it matches; else additional
  const schemaOf = (name: string): unknown => {
    const own = Object.hasOwn(props, name) ? [props[name]] : [];
    const matched = patterns.filter((_, i) => regexes[i]!.test(name)).map(([, v]) => v);
    if (own.length === 0 && matched.length === 0) return additional ?? true;
    const all = [...own, ...matched];
    return all.length === 1 ? all[0] : { allOf: all };
  };
  const names = [...Object.keys(props), ...[...required].filter((r) => !Object.hasOwn(props, r))];
  if (isObject(s['propertyNames']) || s['propertyNames'] === false) {
    // a listed name the names' schema refuses cannot appear
    for (const n of [...names]) {
      if (matchesNames(s['propertyNames'], n)) continue;
      if (required.has(n)) return undefined;
      names.splice(names.indexOf(n), 1);
    }
  }
  const listed: Listed[] = [];
  for (const name of names) {
    const v = c.value(schemaOf(name), `${at}/properties/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`);
    if (v === undefined) {
      if (required.has(name)) return undefined;
      continue;
    }
    listed.push({ name, required: required.has(name), entry: `${JSON.stringify(JSON.stringify(name))} colon ${v}` });
  }
  // further properties
  const extras: string[] = [];
  const explicit = additional !== undefined;
  let add: unknown = additional ?? !(c.closed && (isObject(s['properties']) || patterns.length > 0));
  if (add !== false) {
    const nontrivial = patterns.filter(([, v]) => !(v === true || (isObject(v) && Object.keys(v).length === 0)));
    const prefixes: string[] = [];
    for (const [p] of nontrivial) {
      const lit = /^\^((?:[A-Za-z0-9_\-:@.\/ ]|\\[.\-\/$])+)$/.exec(p) ?? /^\^((?:[A-Za-z0-9_\-:@\/ ]|\\[.\-\/$])+)(?:\.\*)?$/.exec(p);
      if (lit) prefixes.push(lit[1]!.replace(/\\(.)/g, '$1'));
      else if (explicit) throw new UnsupportedSchemaError(`"patternProperties" ${JSON.stringify(p)} beside additional properties other than false (at ${at}/patternProperties) is not supported: its complement is no grammar loom writes`, 'patternProperties', at);
      // additionalProperties left out: only the listed and pattern properties (narrower)
      else add = false;
    }
    if (add !== false && s['propertyNames'] !== undefined && names.length > 0) {
      if (explicit) throw new UnsupportedSchemaError(`"propertyNames" beside "properties" with additional properties allowed (at ${at}/propertyNames) is not supported`, 'propertyNames', at);
      add = false;
    }
    // every name is excluded, those that cannot appear too (they are no further key either)
    const nodes = s['propertyNames'] !== undefined ? 0 : keyTrieSize(names, prefixes);
    if (nodes > MAX_TRIE || !c.spendTrieBudget(nodes, MAX_TRIE_PER_SCHEMA)) add = false;
    const value = add === false ? undefined : c.value(add, `${at}/additionalProperties`);
    if (value !== undefined) {
      const key = s['propertyNames'] !== undefined ? c.value({ type: 'string', ...(s['propertyNames'] as object) }, `${at}/propertyNames`) : keyExcept(c, names, prefixes);
      if (key !== undefined) extras.push(`${key} colon ${value}`);
    }
  }
  // a key may match several patterns and is then under each one's schema: patterns that may
  // meet (unless literal prefixes that differ) with different schemas are refused
  const prefixOf = (p: string): string | undefined => /^\^([A-Za-z0-9_\-:@\/ ]+)/.exec(p)?.[1];
  const mayOverlap = (p: string, q: string): boolean => {
    const [x, y] = [prefixOf(p), prefixOf(q)];
    return x === undefined || y === undefined || x.startsWith(y) || y.startsWith(x);
  };
  patterns.forEach(([p, v], i) => {
    if (add === true && (v === true || (isObject(v) && Object.keys(v).length === 0))) return;
    if (s['propertyNames'] !== undefined) throw new UnsupportedSchemaError(`"propertyNames" beside "patternProperties" (at ${at}/propertyNames) is not supported`, 'propertyNames', at);
    // and a listed name the pattern matches keeps its own schema if written under the pattern
    const overlapping = patterns.filter(([q, w], j) => j !== i && mayOverlap(p, q) && JSON.stringify(w) !== JSON.stringify(v));
    if (overlapping.length > 0) throw new UnsupportedSchemaError(`"patternProperties" ${JSON.stringify(p)} and ${JSON.stringify(overlapping[0]![0])} (at ${at}/patternProperties) may match one key with different schemas, which is not supported`, 'patternProperties', at);
    const also = Object.keys(props).filter((n) => regexes[i]!.test(n)).map((n) => props[n]);
    const value = c.value(also.length === 0 ? v : { allOf: [v, ...also] }, `${at}/patternProperties/${i}`);
    if (value === undefined) return;
    const key = c.value({ type: 'string', pattern: p }, `${at}/patternProperties`);
    if (key !== undefined) extras.push(`${key} colon ${value}`);
  });
  const extra = extras.length === 0 ? undefined : extras.length === 1 ? extras[0]! : `(${extras.join(' | ')})`;
  const minP = typeof s['minProperties'] === 'number' ? s['minProperties'] : 0;
  const maxP = typeof s['maxProperties'] === 'number' ? s['maxProperties'] : undefined;
  const cap = maxP ?? Math.max(minP, 1);
  if ((listed.length + 1) * (cap + 1) > MAX_STATES) throw new UnsupportedSchemaError(`"maxProperties"/"minProperties" (at ${at}) with this many properties is too large an automaton`, 'maxProperties', at);
  // closed (forced tool calls): the schema's order too, as vLLM and llama.cpp write them (a
  // tool-call parser may stream the name before the arguments)
  if (minP === 0 && maxP === undefined && !c.closed) return unorderedObject(c, listed, extra);
  const base = c.fresh('obj');
  const memo = new Map<string, string | undefined>();
  const next = (n: number): number => (maxP === undefined ? Math.min(n + 1, cap) : n + 1);
  // n: properties written so far (saturating at cap without maxProperties).
  // free(k, n): further properties may come before listed property k; then fixed(k, n):
  // listed property k is written or skipped next (each object has one parse)
  const rule = (id: string, make: () => string[]): string | undefined => {
    if (memo.has(id)) return memo.get(id);
    const name = `${base}_${id}`;
    memo.set(id, name); // a self-reference (free → free) is fine
    const alts = make();
    if (alts.length === 0) {
      memo.set(id, undefined);
      return undefined;
    }
    c.addRule(name, alts.join(' | '));
    return name;
  };
  const free = (k: number, n: number): string | undefined =>
    rule(`f${k}_${n}`, () => {
      const alts: string[] = [];
      const pre = n > 0 ? 'sep ' : '';
      if (extra !== undefined && (maxP === undefined || n < maxP)) {
        const after = free(k, next(n));
        if (after !== undefined) alts.push(`${pre}${extra} ${after}`);
      }
      const f = fixed(k, n);
      if (f !== undefined) alts.push(f);
      return alts;
    });
  const fixed = (k: number, n: number): string | undefined =>
    rule(`x${k}_${n}`, () => {
      const alts: string[] = [];
      if (k === listed.length) {
        if (n >= minP) alts.push('""');
        return alts;
      }
      const l = listed[k]!;
      if (maxP === undefined || n < maxP) {
        const after = free(k + 1, next(n));
        if (after !== undefined) alts.push(`${n > 0 ? 'sep ' : ''}${l.entry} ${after}`);
      }
      if (!l.required) {
        const skip = fixed(k + 1, n);
        if (skip !== undefined) alts.push(skip);
      }
      return alts;
    });
  const body = free(0, 0);
  return body === undefined ? undefined : `"{" ws ${body} ws "}"`;
}

/** required properties tracked as a set (2^n states) up to this many; past it, in the schema's order */
const MAX_TRACKED = 8;

/**
 * An object without a property count: its properties in any order. Listed ones are tracked
 * as the set written so far (each at most once; the object ends when every required one is
 * in it) when there are at most MAX_TRACKED of them; past that, only the required ones are
 * (as a set, or past MAX_TRACKED in the schema's order) and an optional one may come twice:
 * JSON parsers keep the last, and each value is valid under its schema. Further properties
 * may come anywhere. Every entry is a rule of its own, so the state rules hold only
 * references and cost xgrammar nothing to compile.
 */
function unorderedObject(c: SchemaCompiler, listed: readonly Listed[], extra: string | undefined): string {
  const trackAll = listed.length <= MAX_TRACKED;
  const tracked = listed.filter((l) => trackAll || l.required);
  const entries = tracked.map((l) => c.named(l.entry));
  const free = [...listed.filter((l) => !tracked.includes(l)).map((l) => c.named(l.entry)), ...(extra === undefined ? [] : [c.named(extra)])];
  const item = free.length === 0 ? undefined : free.length === 1 ? free[0]! : c.named(free.join(' | '));
  const base = c.fresh('obj');
  const bySet = tracked.length <= MAX_TRACKED;
  // state(w, started): w = the tracked written (a bit set), or the count of required written in order
  const needed = bySet ? tracked.reduce((m, l, j) => (l.required ? m | (1 << j) : m), 0) : tracked.length;
  const memo = new Set<string>();
  const state = (w: number, started: boolean): string => {
    const name = `${base}_${w}${started ? 's' : ''}`;
    if (memo.has(name)) return name;
    memo.add(name);
    const pre = started ? 'sep ' : '';
    const alts: string[] = [];
    if (bySet ? (w & needed) === needed : w === needed) alts.push('""');
    if (item !== undefined) alts.push(`${pre}${item} ${state(w, true)}`);
    if (bySet) {
      entries.forEach((e, j) => {
        if ((w & (1 << j)) === 0) alts.push(`${pre}${e} ${state(w | (1 << j), true)}`);
      });
    } else if (w < needed) alts.push(`${pre}${entries[w]!} ${state(w + 1, true)}`);
    c.addRule(name, alts.join(' | '));
    return name;
  };
  return `"{" ws ${state(0, false)} ws "}"`;
}

function matchesNames(names: unknown, n: string): boolean {
  if (names === false) return false;
  if (!isObject(names)) return true;
  if (typeof names['pattern'] === 'string' && !new RegExp(names['pattern'], 'u').test(n)) return false;
  if (typeof names['maxLength'] === 'number' && [...n].length > names['maxLength']) return false;
  if (typeof names['minLength'] === 'number' && [...n].length < names['minLength']) return false;
  if (Array.isArray(names['enum']) && !names['enum'].includes(n)) return false;
  return true;
}
