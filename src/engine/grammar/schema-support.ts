// Which JSON Schema keywords loom's grammar engine (xgrammar 0.1.27) enforces. A schema
// using anything else is refused, naming the keyword and where it is, rather than being
// half-enforced in silence (an answer that parses but breaks the schema).
// The lists were checked against the valid and invalid instances of the 240 real-world
// schemas in ../shared/jsonschema (docs/api.md, "Structured outputs", gives the figures); 63 of them are in
// test/fixtures/jsonschema for test/engine/grammar/jsonschema-corpus.test.ts.

/** assertion keywords xgrammar does not enforce; any other unknown keyword only annotates (JSON Schema ignores it) */
const UNSUPPORTED = new Set([
  'not', 'if', 'then', 'else', 'dependentRequired', 'dependentSchemas', 'dependencies', 'uniqueItems', 'contains',
  'minContains', 'maxContains', 'multipleOf', 'patternProperties', 'propertyNames', 'minProperties', 'maxProperties',
  'unevaluatedProperties', 'unevaluatedItems', 'additionalItems', '$dynamicRef', '$recursiveRef', '$data',
]);

/** keywords that constrain a value (beside $ref, xgrammar would drop them) */
const ASSERTIONS = new Set([
  'type', 'enum', 'const', 'properties', 'required', 'additionalProperties', 'items', 'prefixItems', 'minItems', 'maxItems',
  'anyOf', 'oneOf', 'allOf', 'pattern', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'format',
]);

/** string formats xgrammar 0.1.27 writes a grammar for */
const FORMATS = new Set(['date', 'time', 'date-time', 'duration', 'email', 'uuid', 'ipv4', 'ipv6', 'hostname', 'uri']);

/** keywords whose value is a schema, a list of schemas, or a map of name → schema */
const SUB_SCHEMA = new Set(['items', 'additionalProperties', 'not', 'contains', 'propertyNames', 'if', 'then', 'else', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems']);
const SCHEMA_LISTS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
const SCHEMA_MAPS = new Set(['properties', '$defs', 'definitions', 'patternProperties', 'dependentSchemas']);

/**
 * The schema as loom compiles it: an object schema that lists `properties` generates only
 * those (xgrammar lets a listed name through the additional-properties rule with any value,
 * so `additionalProperties` beside `properties` would admit invalid answers). Every answer
 * of the narrowed schema is valid under the original.
 */
export function narrowSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(narrowSchema);
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) out[key] = key === 'enum' || key === 'const' || key === 'default' || key === 'examples' ? value : narrowSchema(value);
  if (isPlainObject(out['properties']) && out['additionalProperties'] !== undefined && out['additionalProperties'] !== false) out['additionalProperties'] = false;
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The first unsupported part of a schema as a message naming it, or undefined when all of it is enforced. */
export function checkSchemaSupport(schema: unknown): string | undefined {
  return walk(schema, '#', schema);
}

function walk(node: unknown, path: string, root: unknown): string | undefined {
  if (typeof node === 'boolean') return undefined;
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return `${path} is not a schema (an object or a boolean)`;
  const s = node as Record<string, unknown>;
  for (const [key, value] of Object.entries(s)) {
    const at = `${path}/${key}`;
    if (UNSUPPORTED.has(key)) return `the keyword "${key}" (at ${at}) is not supported`;
    if (key === 'format' && (typeof value !== 'string' || !FORMATS.has(value))) {
      return `the string format ${JSON.stringify(value)} (at ${at}) is not supported; supported: ${[...FORMATS].join(', ')}`;
    }
    if (key === '$ref') {
      if (typeof value !== 'string' || !value.startsWith('#')) return `only local references ("#/…") are supported (at ${at})`;
      if (resolvePointer(root, value) === undefined) return `the reference ${JSON.stringify(value)} (at ${at}) points nowhere`;
      if (Object.keys(s).some((k) => k !== '$ref' && ASSERTIONS.has(k))) return `keywords beside "$ref" (at ${path}) are not supported`;
    }
    if (key === 'type' && Array.isArray(value) && s['properties'] === undefined && value.length === 0) return `an empty "type" list (at ${at}) accepts nothing`;
    if (key === 'allOf' && Array.isArray(value) && value.length !== 1) return `"allOf" with more than one schema (at ${at}) is not supported`;
    if (key === 'oneOf' && Array.isArray(value) && !disjoint(value, root)) {
      return `"oneOf" (at ${at}) whose branches may overlap is not supported (exactly one must match); use anyOf if any may`;
    }
    if (key === 'items' && Array.isArray(value)) return `"items" as a list (at ${at}) is not supported; use prefixItems`;
    if (key === 'pattern' && typeof value === 'string' && /\(\?[=!<]|\\[1-9]|\\[bB]/.test(value)) {
      return `the pattern ${JSON.stringify(value)} (at ${at}) uses lookaround, backreferences or word boundaries, which are not supported`;
    }
    if (key === 'pattern' && typeof value === 'string' && /\\.-\]/.test(value)) {
      return `the pattern ${JSON.stringify(value)} (at ${at}) ends a character class with "-" after an escaped character, which xgrammar misreads as a range`;
    }
    if (key === 'pattern' && (s['minLength'] !== undefined || s['maxLength'] !== undefined || s['format'] !== undefined)) {
      return `"pattern" together with minLength, maxLength or format (at ${path}) is not supported`;
    }
    if ((key === 'exclusiveMinimum' || key === 'exclusiveMaximum') && typeof value !== 'number') {
      return `"${key}" (at ${at}) must be a number (draft-04's boolean form is not supported)`;
    }
    if ((key === 'exclusiveMinimum' || key === 'exclusiveMaximum') && s['type'] !== 'integer') {
      return `"${key}" (at ${at}) is supported on integers only`;
    }
    if (SUB_SCHEMA.has(key)) {
      const problem = walk(value, at, root);
      if (problem) return problem;
    } else if (SCHEMA_LISTS.has(key)) {
      if (!Array.isArray(value)) return `"${key}" (at ${at}) must be a list of schemas`;
      for (let i = 0; i < value.length; i++) {
        const problem = walk(value[i], `${at}/${i}`, root);
        if (problem) return problem;
      }
    } else if (SCHEMA_MAPS.has(key)) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return `"${key}" (at ${at}) must be an object of schemas`;
      for (const [name, sub] of Object.entries(value)) {
        const problem = walk(sub, `${at}/${escapePointer(name)}`, root);
        if (problem) return problem;
      }
    }
  }
  return undefined;
}

/** oneOf branches no value can match twice: each a distinct JSON type, or const/enum values apart */
function disjoint(branches: unknown[], root: unknown): boolean {
  const seen = new Set<string>();
  for (let b of branches) {
    while (b && typeof b === 'object' && typeof (b as { $ref?: unknown }).$ref === 'string') b = resolvePointer(root, (b as { $ref: string }).$ref);
    if (!b || typeof b !== 'object') return false;
    const s = b as Record<string, unknown>;
    let keys: string[];
    if ('const' in s) keys = [`=${JSON.stringify(s['const'])}`];
    else if (Array.isArray(s['enum'])) keys = s['enum'].map((v) => `=${JSON.stringify(v)}`);
    else if (typeof s['type'] === 'string') keys = [s['type'] === 'integer' ? 'number' : s['type']];
    else if (Array.isArray(s['type'])) keys = s['type'].map((t) => (t === 'integer' ? 'number' : String(t)));
    else return false;
    for (const k of keys) {
      if (seen.has(k)) return false;
      seen.add(k);
    }
  }
  // a typed branch and a value of that type may overlap
  for (const k of seen) {
    if (!k.startsWith('=')) continue;
    const v = JSON.parse(k.slice(1)) as unknown;
    const t = v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'number' ? 'number' : typeof v;
    if (seen.has(t)) return false;
  }
  return true;
}

function escapePointer(name: string): string {
  return name.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** the node a local JSON pointer ("#/a/b") names, or undefined */
export function resolvePointer(root: unknown, ref: string): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof node !== 'object' || node === null || !(part in node)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}
