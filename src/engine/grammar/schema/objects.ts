// Object grammars: listed properties in the schema's order (required ones always, optional
// ones maybe), then further properties: additionalProperties under keys that are no listed
// name (a trie's complement), patternProperties under keys matching their pattern; the count
// of properties kept in [minProperties, maxProperties] by numbering the states.
import type { SchemaCompiler } from './compile.js';
import { UnsupportedSchemaError } from './leaf-rules.js';
import { isObject } from './merge.js';
import type { Schema } from './merge.js';
import { unanchored } from './shapes.js';

/** the most trie nodes of listed names beside which further properties are written */
const MAX_TRIE = 16;

function trieSize(names: readonly string[]): number {
  const prefixes = new Set<string>();
  for (const n of names) for (let i = 1; i <= n.length; i++) prefixes.add(n.slice(0, i));
  return prefixes.size;
}

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
    const own = name in props ? [props[name]] : [];
    const matched = patterns.filter((_, i) => regexes[i]!.test(name)).map(([, v]) => v);
    if (own.length === 0 && matched.length === 0) return additional ?? true;
    const all = [...own, ...matched];
    return all.length === 1 ? all[0] : { allOf: all };
  };
  const names = [...Object.keys(props), ...[...required].filter((r) => !(r in props))];
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
  // Further keys beside listed ones are a trie's complement, whose every node costs xgrammar
  // a full pass over the vocabulary when it compiles (~0.1 s each): with additionalProperties
  // left out beside "properties" or "patternProperties" (as xgrammar's strict mode, which
  // loom used before), or more than MAX_TRIE nodes, only the listed properties are written
  // (a narrower language, every answer still valid; a small model does not pad with keys)
  let add = additional === undefined ? !isObject(s['properties']) && patterns.length === 0 : additional;
  if (add !== false && listed.length > 0 && trieSize(listed.map((l) => l.name)) > MAX_TRIE) add = false;
  if (add !== false) {
    const nontrivial = patterns.filter(([, v]) => !(v === true || (isObject(v) && Object.keys(v).length === 0)));
    const prefixes: string[] = [];
    for (const [p] of nontrivial) {
      const lit = /^\^((?:[A-Za-z0-9_\-:@.\/ ]|\\[.\-\/$])+)$/.exec(p) ?? /^\^((?:[A-Za-z0-9_\-:@\/ ]|\\[.\-\/$])+)(?:\.\*)?$/.exec(p);
      if (!lit) {
        throw new UnsupportedSchemaError(`"patternProperties" ${JSON.stringify(p)} beside additional properties other than false (at ${at}/patternProperties) is not supported: its complement is no grammar loom writes`, 'patternProperties', at);
      }
      prefixes.push(lit[1]!.replace(/\\(.)/g, '$1'));
    }
    if (s['propertyNames'] !== undefined && listed.length > 0) {
      throw new UnsupportedSchemaError(`"propertyNames" beside "properties" with additional properties allowed (at ${at}/propertyNames) is not supported`, 'propertyNames', at);
    }
    const value = c.value(add, `${at}/additionalProperties`);
    if (value !== undefined) {
      const key = s['propertyNames'] !== undefined ? c.value({ type: 'string', ...(s['propertyNames'] as object) }, `${at}/propertyNames`) : keyExcept(c, listed.map((l) => l.name), prefixes);
      if (key !== undefined) extras.push(`${key} colon ${value}`);
    }
  }
  patterns.forEach(([p, v], i) => {
    if (add === true && (v === true || (isObject(v) && Object.keys(v).length === 0))) return;
    if (s['propertyNames'] !== undefined) throw new UnsupportedSchemaError(`"propertyNames" beside "patternProperties" (at ${at}/propertyNames) is not supported`, 'propertyNames', at);
    const value = c.value(v, `${at}/patternProperties/${i}`);
    if (value === undefined) return;
    const key = c.value({ type: 'string', pattern: p }, `${at}/patternProperties`);
    if (key !== undefined) extras.push(`${key} colon ${value}`);
    // a listed name may also match: its value is then under both schemas (listed first)
    void unanchored;
  });
  const extra = extras.length === 0 ? undefined : extras.length === 1 ? extras[0]! : `(${extras.join(' | ')})`;
  const minP = typeof s['minProperties'] === 'number' ? s['minProperties'] : 0;
  const maxP = typeof s['maxProperties'] === 'number' ? s['maxProperties'] : undefined;
  const cap = maxP ?? Math.max(minP, 1);
  if ((listed.length + 1) * (cap + 1) > MAX_STATES) throw new UnsupportedSchemaError(`"maxProperties"/"minProperties" (at ${at}) with this many properties is too large an automaton`, 'maxProperties', at);
  const base = c.fresh('obj');
  const memo = new Map<string, string | undefined>();
  // state(k, n): listed properties from k on, n written so far (saturating at cap without maxProperties)
  const state = (k: number, n: number): string | undefined => {
    const id = `${k}_${n}`;
    if (memo.has(id)) return memo.get(id);
    memo.set(id, undefined);
    const pre = n > 0 ? 'sep ' : '';
    const alts: string[] = [];
    if (k < listed.length) {
      const l = listed[k]!;
      if (maxP === undefined || n + 1 <= maxP) {
        const next = state(k + 1, maxP === undefined ? Math.min(n + 1, cap) : n + 1);
        if (next !== undefined) alts.push(`${pre}${l.entry} ${next}`);
      }
      if (!l.required) {
        const skip = state(k + 1, n);
        if (skip !== undefined) alts.push(skip);
      }
    } else {
      const lo = Math.max(0, minP - n);
      const hi = maxP === undefined ? undefined : maxP - n;
      if (lo === 0) alts.push('""');
      if (extra !== undefined && (hi === undefined || hi > 0)) {
        if (n === 0) alts.push(`${extra} (sep ${extra}){${Math.max(0, lo - 1)},${hi === undefined ? '' : hi - 1}}`);
        else alts.push(`(sep ${extra}){${Math.max(1, lo)},${hi ?? ''}}`);
      }
    }
    if (alts.length === 0) return undefined;
    const name = `${base}_${id}`;
    c.addRule(name, alts.join(' | '));
    memo.set(id, name);
    return name;
  };
  const body = state(0, 0);
  return body === undefined ? undefined : `"{" ws ${body} ws "}"`;
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

/** a JSON string that is none of `names` and starts with none of `prefixes` (a trie's complement) */
function keyExcept(c: SchemaCompiler, names: readonly string[], prefixes: readonly string[]): string | undefined {
  const safe = (x: string): boolean => !/["\\\u0000-\u001f]/.test(x);
  if (names.length === 0 && prefixes.length === 0) return 'string';
  interface Node { kids: Map<string, Node>; name: boolean; dead: boolean }
  const node = (): Node => ({ kids: new Map(), name: false, dead: false });
  const root = node();
  const insert = (x: string, dead: boolean): void => {
    let n = root;
    for (const ch of x) {
      if (n.dead) return;
      let k = n.kids.get(ch);
      if (!k) n.kids.set(ch, (k = node()));
      n = k;
    }
    if (dead) n.dead = true;
    else n.name = true;
  };
  for (const x of names) if (safe(x)) insert(x, false);
  for (const x of prefixes) if (safe(x)) insert(x, true);
  if (root.dead) return undefined;
  const base = c.fresh('key');
  c.addRule(`${base}_rest`, `("\\"" | [^"\\\\\\0-\\x1f] ${base}_rest | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4}) ${base}_rest) (= ws ":")`);
  let count = 0;
  const emit = (n: Node): string => {
    const name = `${base}_${count++}`;
    const alts: string[] = [];
    if (!n.name) alts.push('"\\""');
    const live = [...n.kids].filter(([, k]) => !k.dead);
    for (const [ch, k] of live) alts.push(`${JSON.stringify(ch)} ${emit(k)}`);
    const excluded = [...n.kids.keys()].map(classChar).join('');
    alts.push(`[^${excluded}"\\\\\\0-\\x1f] ${base}_rest`);
    alts.push(`"\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4}) ${base}_rest`);
    c.addRule(name, alts.join(' | '));
    return name;
  };
  return `"\\"" ${emit(root)}`;
}

function classChar(ch: string): string {
  return /[\]\[\\^\-]/.test(ch) ? `\\${ch}` : ch;
}
