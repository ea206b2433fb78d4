// loom's JSON Schema → grammar compiler: a schema becomes EBNF in xgrammar's notation, which
// xgrammar then executes. loom decides what is enforced: every keyword either becomes part
// of the grammar exactly, or the schema is refused naming it (UnsupportedSchemaError); in
// lenient mode (llguidance's) the keywords no grammar can enforce are dropped with a warning.
// Between tokens a bounded run of whitespace is allowed (MAX_WS), never an endless one.
import type { XGrammarBinding } from '../xgrammar-binding.js';
import { Undecided, validates } from './decide.js';
import { dateTimeRules, ENFORCED_FORMATS } from './formats.js';
import { leafRules, UnsupportedSchemaError } from './leaf-rules.js';
import { isObject, mergeSchemas } from './merge.js';
import type { Schema } from './merge.js';
import { jsonLiteral } from './literal.js';
import { numericRule } from './numeric.js';
import { KEY_REST_RULE, KEY_TAIL_RULE, KEY_WIDE_RULE } from './keys.js';
import { arrayRule } from './arrays.js';
import { objectRule } from './objects.js';
import { ANNOTATIONS, exactlyOneRequired, splitDependencies, withoutAnnotations } from './rewrites.js';
import { classRun, disjointBranches, unanchored } from './shapes.js';

export { UnsupportedSchemaError };

/**
 * the longest string length bound written out: the lazy automaton writes a bounded string
 * out copy by copy (~20 states a character) and computes masks once for the copies in the
 * middle, so the bound costs compile time, not mask time
 */
const MAX_LENGTH = 4096;

/** whitespace allowed between two JSON tokens */
export const MAX_WS = 2;

export interface SchemaCompileOptions {
  /** drop what no grammar can enforce (uniqueItems, not, overlapping oneOf → anyOf, if/then/else) with a warning */
  readonly lenient?: boolean;
  /**
   * additionalProperties left out beside properties or patternProperties means no further
   * property (XGrammar's strict mode, llama.cpp's converter) instead of any (JSON Schema),
   * and properties come in the schema's order: for forced tool calls, which vLLM compiles so
   */
  readonly closed?: boolean;
}

export interface CompiledSchema {
  readonly ebnf: string;
  /** what lenient mode dropped */
  readonly warnings: readonly string[];
}

/** keywords that assert and that loom does not enforce */
const REFUSED: Record<string, string> = {
  not: 'no grammar can enforce it',
  uniqueItems: 'no grammar can enforce it',
  if: 'loom does not compile if/then/else',
  unevaluatedProperties: 'loom does not compile it',
  unevaluatedItems: 'loom does not compile it',
  $dynamicRef: 'loom does not compile it',
  $recursiveRef: 'loom does not compile it',
  $data: 'loom does not compile it',
};
/** of those, what lenient mode may drop */
const DROPPABLE = new Set(['not', 'uniqueItems', 'if', 'dependentRequired', 'dependentSchemas', 'dependencies', 'maxLength']);

const BASE_RULES = [
  `ws ::= [ \\n\\t]{0,${MAX_WS}}`,
  'sep ::= ws "," ws',
  'colon ::= ws ":" ws',
  'char ::= [^"\\\\\\0-\\x1f] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
  // a closing quote with what may follow it (xgrammar's lookahead: tokens running past the
  // quote are then decided when the grammar compiles, not at every mask)
  'qend ::= "\\"" (= ws [,:}\\]])',
  'string ::= "\\"" strsub',
  'strsub ::= ("\\"" | [^"\\\\\\0-\\x1f] strsub | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4}) strsub) (= ws [,:}\\]])',
  'number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+\\-]? [0-9]+)?',
  'integer ::= "-"? ("0" | [1-9] [0-9]*)',
  KEY_TAIL_RULE,
  KEY_REST_RULE,
  KEY_WIDE_RULE,
  'any ::= "null" | "true" | "false" | number | string | "[" ws (any (sep any)*)? ws "]" | "{" ws (string colon any (sep string colon any)*)? ws "}"',
];

export class SchemaCompiler {
  readonly warnings: string[] = [];
  private readonly rules: string[] = [...BASE_RULES];
  private readonly refs = new Map<string, string>();
  private readonly memo = new Map<string, string>();
  private readonly leaves = new Map<string, string>();
  /** rule body → its rule (shared) */
  private readonly bodies = new Map<string, string>();
  private n = 0;
  private dates = false;
  /** see SchemaCompileOptions.closed */
  get closed(): boolean {
    return this.opts.closed === true;
  }

  /** trie nodes of further keys written so far (each costs a compile pass, objects.ts) */
  private trieNodes = 0;

  constructor(
    private readonly root: unknown,
    private readonly xg: XGrammarBinding,
    private readonly opts: SchemaCompileOptions = {},
  ) {}

  compile(): CompiledSchema {
    const top = this.value(this.root, '#');
    if (top === undefined) throw new UnsupportedSchemaError('the schema (at #) accepts nothing', 'false', '#');
    this.rules.push(`root ::= ${top}`);
    return { ebnf: this.rules.join('\n'), warnings: this.warnings };
  }

  /** a fresh rule name */
  fresh(hint: string): string {
    return `${hint}_${this.n++}`;
  }

  /** a rule of its own for `body` (xgrammar misreads some inline alternatives, see numbers.ts) */
  readonly named = (body: string): string => {
    const name = this.fresh('d');
    this.addRule(name, body);
    return name;
  };

  /** the rule whose body is `body`, written once per schema */
  shared(body: string, hint: string): string {
    let name = this.bodies.get(body);
    if (name === undefined) {
      name = this.fresh(hint);
      this.bodies.set(body, name);
      this.addRule(name, body);
    }
    return name;
  }

  /** rules written elsewhere (an automaton's), added as they are */
  addRules(rules: readonly string[]): void {
    this.rules.push(...rules);
  }

  addRule(name: string, body: string): void {
    this.rules.push(`${name} ::= ${body}`);
  }

  /** takes `nodes` from the schema's budget of further-key trie nodes; false when it is spent */
  spendTrieBudget(nodes: number, budget: number): boolean {
    if (this.trieNodes + nodes > budget) return false;
    this.trieNodes += nodes;
    return true;
  }

  /** `message` names the keyword and where it is */
  refuse(keyword: string, at: string, message: string): void {
    if (this.opts.lenient && DROPPABLE.has(keyword)) {
      this.warnings.push(`${message}; dropped, not enforced`);
      return;
    }
    throw new UnsupportedSchemaError(message, keyword, at);
  }

  /** a rule name or expression for the values `node` accepts; undefined: none */
  value(node: unknown, at: string): string | undefined {
    if (node === true || (isObject(node) && Object.keys(node).length === 0)) return 'any';
    if (node === false) return undefined;
    if (!isObject(node)) throw new UnsupportedSchemaError(`${at} is not a schema (an object or a boolean)`, 'schema', at);
    // annotations do not change what a schema accepts: equal schemas share one rule
    const key = JSON.stringify(withoutAnnotations(node));
    const hit = this.memo.get(key);
    if (hit !== undefined) return hit;
    const name = this.fresh('v');
    this.memo.set(key, name);
    const body = this.body(node, at);
    if (body === undefined) {
      this.memo.delete(key);
      return undefined;
    }
    this.addRule(name, body);
    return name;
  }

  /** `node` with $ref and allOf resolved into one schema */
  flatten(node: Schema | boolean, at: string, depth = 0): Schema | boolean {
    if (typeof node === 'boolean') return node;
    if (depth > 16) throw new UnsupportedSchemaError(`references nest too deep to merge (at ${at})`, '$ref', at);
    let out: Schema | boolean = node;
    if (typeof node['$ref'] === 'string') {
      const { $ref, ...rest } = node;
      out = mergeSchemas(this.flatten(this.resolve($ref as string, at), `${at}/$ref`, depth + 1), this.flatten(rest, at, depth + 1), at);
    }
    if (isObject(out) && Array.isArray(out['allOf'])) {
      const { allOf, ...rest } = out;
      let acc: Schema | boolean = this.flatten(rest, at, depth + 1);
      (allOf as unknown[]).forEach((m, i) => {
        acc = mergeSchemas(acc, this.flatten(asSchema(m, `${at}/allOf/${i}`), `${at}/allOf/${i}`, depth + 1), `${at}/allOf`);
      });
      out = acc;
    }
    return out;
  }

  resolve(ref: string, at: string): Schema | boolean {
    if (!ref.startsWith('#')) throw new UnsupportedSchemaError(`only local references ("#/…") are supported (at ${at}/$ref)`, '$ref', at);
    let node: unknown = this.root;
    if (ref !== '#' && ref !== '#/') {
      for (const raw of ref.slice(2).split('/')) {
        const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
        if (!isObject(node) && !Array.isArray(node)) node = undefined;
        else node = (node as Record<string, unknown>)[part];
        if (node === undefined) throw new UnsupportedSchemaError(`the reference ${JSON.stringify(ref)} (at ${at}/$ref) points nowhere`, '$ref', at);
      }
    }
    return asSchema(node, ref);
  }

  private body(raw: Schema, at: string): string | undefined {
    // a bare $ref is a rule of its own (recursion)
    const keys = Object.keys(raw).filter((k) => !ANNOTATIONS.has(k));
    if (keys.length === 1 && typeof raw['$ref'] === 'string') return this.refRule(raw['$ref'], at);
    const node = this.flatten(raw, at);
    if (typeof node === 'boolean') return node ? 'any' : undefined;
    // listed values: every other keyword is decided value by value
    if ('const' in node || Array.isArray(node['enum'])) return this.finite(raw, node, at);
    const split = splitDependencies(node, at);
    if (split !== undefined) return this.value(split, at);
    for (const k of Object.keys(node)) {
      if (k in REFUSED && !(k === 'uniqueItems' && node[k] === false)) this.refuse(k, `${at}/${k}`, `"${k}" (at ${at}/${k}) is not supported: ${REFUSED[k]!}`);
    }
    const anyOf = node['anyOf'];
    const oneOf = node['oneOf'];
    if (Array.isArray(anyOf) || Array.isArray(oneOf)) {
      const { anyOf: _a, oneOf: _o, ...base } = node;
      let branches = (Array.isArray(anyOf) ? anyOf : oneOf) as unknown[];
      const which = Array.isArray(anyOf) ? 'anyOf' : 'oneOf';
      if (Array.isArray(anyOf) && Array.isArray(oneOf)) branches = anyOf.flatMap((a) => (oneOf as unknown[]).map((o) => ({ allOf: [a, o] })));
      if (which === 'oneOf' && !disjointBranches(branches, (r) => this.resolve(r, at))) {
        const exact = exactlyOneRequired(branches);
        if (exact !== undefined) return this.value({ ...base, anyOf: exact }, at);
        if (!this.opts.lenient) throw new UnsupportedSchemaError(`"oneOf" (at ${at}/oneOf) whose branches may overlap is not supported (exactly one must match; no grammar can enforce it); use anyOf if any may`, 'oneOf', `${at}/oneOf`);
        this.warnings.push(`"oneOf" (at ${at}/oneOf) whose branches may overlap is enforced as anyOf`);
      }
      const alts: string[] = [];
      branches.forEach((b, i) => {
        const merged = Object.keys(base).length === 0 ? b : { allOf: [base, b] };
        const v = this.value(merged, `${at}/${which}/${i}`);
        if (v !== undefined) alts.push(v);
      });
      return alts.length === 0 ? undefined : [...new Set(alts)].join(' | ');
    }
    return this.typed(node, at);
  }

  private refRule(ref: string, at: string): string | undefined {
    const hit = this.refs.get(ref);
    if (hit !== undefined) return hit;
    const name = this.fresh('ref');
    this.refs.set(ref, name);
    const target = this.resolve(ref, at);
    const body = this.body(isObject(target) ? target : target ? {} : { not: {} }, ref);
    this.addRule(name, body ?? '[^\\0-\\U0010ffff]');
    return name;
  }

  /** the values `node` (flattened from `raw`) lists that pass every keyword of `raw` */
  private finite(raw: Schema, node: Schema, at: string): string | undefined {
    const values = 'const' in node ? [node['const']] : (node['enum'] as unknown[]);
    const ok: unknown[] = [];
    for (const v of values) {
      try {
        if (validates(raw, v, (ref) => this.resolve(ref, at))) ok.push(v);
      } catch (err) {
        if (!(err instanceof Undecided)) throw err;
        throw new UnsupportedSchemaError(`"${err.keyword}" beside "enum"/"const" (at ${at}) is not supported: it cannot be decided on the listed values`, err.keyword, at);
      }
    }
    if (ok.length === 0) return undefined;
    return [...new Set(ok.map((v) => jsonLiteral(v)))].join(' | ');
  }

  private typed(s: Schema, at: string): string | undefined {
    const types = typeSet(s['type']) ?? new Set(['null', 'boolean', 'number', 'string', 'array', 'object']);
    const alts: string[] = [];
    for (const t of ['null', 'boolean', 'integer', 'number', 'string', 'array', 'object']) {
      if (!types.has(t) || (t === 'integer' && types.has('number'))) continue;
      const e = this.ofType(t, s, at);
      if (e !== undefined) alts.push(e);
    }
    return alts.length === 0 ? undefined : alts.join(' | ');
  }

  private ofType(t: string, s: Schema, at: string): string | undefined {
    switch (t) {
      case 'null':
        return '"null"';
      case 'boolean':
        return '"true" | "false"';
      case 'integer':
      case 'number':
        return numericRule(this, t === 'integer', s, at);
      case 'string':
        return this.string(s, at);
      case 'array':
        return arrayRule(this, s, at);
      case 'object':
        return objectRule(this, s, at);
      default:
        throw new UnsupportedSchemaError(`unknown type ${JSON.stringify(t)} (at ${at}/type)`, 'type', at);
    }
  }

  private string(s: Schema, at: string): string | undefined {
    const min = typeof s['minLength'] === 'number' ? s['minLength'] : 0;
    const max = typeof s['maxLength'] === 'number' ? s['maxLength'] : undefined;
    const format = typeof s['format'] === 'string' && ENFORCED_FORMATS.has(s['format']) ? s['format'] : undefined;
    const pattern = typeof s['pattern'] === 'string' ? s['pattern'] : undefined;
    if (max !== undefined && max < min) return undefined;
    const lengths = min > 0 || max !== undefined;
    if (pattern !== undefined && format === undefined && lengths) {
      // ^C+$, ^C*$, ^C{m,n}$ for one character class C: the bounds meet in one repetition
      const both = classRun(pattern, min, max);
      if (both === null) return undefined;
      if (both !== undefined) return this.leaf({ pattern: both }, at);
    }
    if ((format !== undefined || pattern !== undefined) && lengths) {
      throw new UnsupportedSchemaError(`"minLength"/"maxLength" together with ${pattern !== undefined ? '"pattern"' : '"format"'} (at ${at}) is not supported`, 'maxLength', at);
    }
    if (format !== undefined && pattern !== undefined) throw new UnsupportedSchemaError(`"pattern" together with "format" (at ${at}) is not supported`, 'pattern', at);
    if (format === 'date' || format === 'time' || format === 'date-time') {
      if (!this.dates) this.rules.push(...dateTimeRules('fmt_'));
      this.dates = true;
      return `"\\"" fmt_${format.replace('-', '_')} qend`;
    }
    // xgrammar's uri-reference is the relative form only: a URI is one too
    if (format === 'uri-reference') return `(${this.leaf({ format: 'uri' }, at)} | ${this.leaf({ format }, at)})`;
    if (format !== undefined) return this.leaf({ format }, at);
    if (pattern !== undefined) return this.leaf({ pattern: unanchored(pattern, at) }, at);
    if (!lengths) return 'string';
    if ((max ?? min) > MAX_LENGTH) {
      this.refuse('maxLength', `${at}/maxLength`, `"${max !== undefined ? 'maxLength' : 'minLength'}" above ${MAX_LENGTH} (at ${at}) is not supported: the grammar would be too large`);
      return 'string';
    }
    // a pure class repeated: escapes are not written in length-bounded strings (narrower,
    // never wider; an escape would count as one character and be two or six)
    // one rule per bound: a schema's many fields of one maxLength share its automaton
    return this.shared(`"\\"" [^"\\\\\\0-\\x1f]{${min},${max ?? ''}} qend`, 'str');
  }

  private leaf(leaf: object, at: string): string {
    const key = JSON.stringify(leaf);
    const hit = this.leaves.get(key);
    if (hit !== undefined) return hit;
    let r;
    try {
      r = leafRules(this.xg, leaf, `${this.fresh('s')}_`);
    } catch (err) {
      const k = 'pattern' in leaf ? 'pattern' : 'format';
      throw new UnsupportedSchemaError(`the ${k} ${JSON.stringify((leaf as Record<string, unknown>)[k])} (at ${at}/${k}) is not supported: ${(err as Error).message}`, k, at);
    }
    this.rules.push(...r.rules);
    this.leaves.set(key, r.name);
    return r.name;
  }
}


function asSchema(v: unknown, at: string): Schema | boolean {
  if (typeof v === 'boolean' || isObject(v)) return v;
  throw new UnsupportedSchemaError(`${at} is not a schema (an object or a boolean)`, 'schema', at);
}

function typeSet(t: unknown): Set<string> | undefined {
  if (typeof t === 'string') return new Set([t]);
  if (Array.isArray(t)) return new Set(t.filter((x): x is string => typeof x === 'string'));
  return undefined;
}


/** Compiles a JSON Schema to EBNF (start rule `root`); throws UnsupportedSchemaError naming what it refuses. */
export function compileJsonSchema(schema: unknown, xg: XGrammarBinding, opts: SchemaCompileOptions = {}): CompiledSchema {
  return new SchemaCompiler(schema, xg, opts).compile();
}
