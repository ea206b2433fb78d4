// loom's JSON Schema compiler, keyword family by keyword family: schema → EBNF → xgrammar's
// matcher over a byte vocabulary (token i = byte i, 256 = stop); an instance is accepted when
// every byte is allowed by the mask and the stop token ends it.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { GrammarCompiler } from '../../../../src/engine/grammar/compiler.js';
import { validateGrammarSpec } from '../../../../src/engine/grammar/spec.js';
import type { GrammarSpec } from '../../../../src/engine/grammar/spec.js';
import { loadXGrammar } from '../../../../src/engine/grammar/xgrammar-binding.js';

let compiler: GrammarCompiler;
const STOP = 256;

before(async () => {
  const xg = await loadXGrammar();
  const vocab = {
    vocabSize: 257,
    stopIds: new Set([STOP]),
    isSpecial: (id: number) => id === STOP,
    tokenBytes: (id: number) => (id < 256 ? Uint8Array.of(id) : new Uint8Array(0)),
  };
  compiler = new GrammarCompiler(xg, vocab, 257);
});

function accepts(spec: GrammarSpec, text: string): boolean {
  const m = compiler.matcher(spec);
  const mask = new Int32Array(compiler.maskWords);
  try {
    for (const id of [...Buffer.from(text, 'utf8'), STOP]) {
      m.fillMask(mask);
      if ((mask[id >> 5]! & (1 << (id & 31))) === 0 || !m.accept(id)) return false;
    }
    return m.isTerminated;
  } finally {
    m.close();
  }
}

/** every `good` instance accepted, every `bad` one rejected (compact JSON unless a string) */
function check(schema: unknown, good: unknown[], bad: unknown[], lenient = false): void {
  const spec = validateGrammarSpec({ type: 'json_schema', schema, lenient });
  const text = (v: unknown): string => (typeof v === 'string' && v.startsWith('\u0001') ? v.slice(1) : JSON.stringify(v));
  for (const g of good) assert.ok(accepts(spec, text(g)), `${JSON.stringify(schema)} should accept ${text(g)}`);
  for (const b of bad) assert.ok(!accepts(spec, text(b)), `${JSON.stringify(schema)} should reject ${text(b)}`);
}

function refuses(schema: unknown, keyword: RegExp): void {
  assert.throws(() => validateGrammarSpec({ type: 'json_schema', schema }), keyword);
}

describe('JSON Schema compiler', () => {
  it('integers: ranges, exclusive bounds (both drafts), multipleOf', () => {
    check({ type: 'integer', minimum: -12, maximum: 250 }, [-12, -1, 0, 7, 99, 100, 250], [-13, 251, 1000, 1.5, '\u0001-0', '\u000107']);
    check({ type: 'integer', exclusiveMinimum: 0 }, [1, 10, 123456789012], [0, -1]);
    check({ type: 'integer', minimum: 5, exclusiveMinimum: true, maximum: 9, exclusiveMaximum: true }, [6, 8], [5, 9]);
    check({ type: 'integer', maximum: -3 }, [-3, -40], [-2, 0, 5]);
    check({ type: 'integer', multipleOf: 7 }, [0, 7, 14, 700, -21], [1, 8, -22]);
    check({ type: 'integer', multipleOf: 5, minimum: 0, maximum: 40 }, [0, 5, 40], [3, 45, -5]);
  });

  it('numbers: bounds, exclusive bounds, multipleOf powers of ten', () => {
    check({ type: 'number', minimum: 0, maximum: 65535 }, [0, 65535, 65534.5, 6553], [65536, 65535.5, 99999]);
    check({ type: 'number', minimum: 0, maximum: 10 }, [0, 0.5, 9.99, 10, '\u000110.0'], [-0.5, 10.5, '\u000110.01', -1]);
    check({ type: 'number', exclusiveMinimum: 0 }, [0.001, 3, 1e3 + 0.5], ['\u00010', '\u00010.0', -1]);
    check({ type: 'number', minimum: -5, exclusiveMaximum: 0 }, [-5, -0.1, -4.5], [0, 0.1, -5.1, '\u0001-0']);
    check({ type: 'number', multipleOf: 0.01 }, [1.25, 3, -0.5], [1.255]);
    // a positive non-integer lower bound
    check({ type: 'number', minimum: 0.3 }, [0.3, 0.35, 0.4, 1, 2.5, '\u00010.30'], [0.29, 0, 0.2999, -1]);
    check({ type: 'number', exclusiveMinimum: 1.25, maximum: 3 }, [1.26, 1.2501, 2, 3], [1.25, '\u00011.250', 1, 3.5]);
  });

  it('strings: lengths, formats (dates by month and leap year), patterns unanchored', () => {
    check({ type: 'string' }, ['', 'a "quoted" \\ line'], ['\u0001"a', 1]);
    check({ type: 'string', minLength: 2, maxLength: 3 }, ['ab', 'abc', 'é€x'], ['a', 'abcd']);
    check({ type: 'string', format: 'date' }, ['2024-02-29', '2000-02-29', '2023-04-30', '2023-01-31'], ['1990-02-31', '2023-02-29', '1900-02-29', '2023-04-31', '2023-13-01']);
    check({ type: 'string', format: 'date-time' }, ['2024-02-29T12:30:00Z', '2023-01-31T23:59:60.5+02:00'], ['2024-02-29 12:30:00Z', '2023-01-31T24:00:00Z']);
    check({ type: 'string', format: 'time' }, ['12:30:00Z'], ['12:30']);
    check({ type: 'string', format: 'uuid' }, ['123e4567-e89b-12d3-a456-426614174000'], ['123e4567']);
    check({ type: 'string', format: 'ipv4' }, ['192.168.0.1'], ['256.1.1.1']);
    check({ type: 'string', pattern: 'ab' }, ['ab', 'xxabyy'], ['a', 'ba']);
    check({ type: 'string', pattern: '^[a-z]+$' }, ['abc'], ['abc1', '']);
    check({ type: 'string', pattern: '^a|b$' }, ['a', 'axx', 'xxb'], ['xax']);
  });

  it('objects: properties in order, required, additionalProperties, patternProperties, counts, propertyNames', () => {
    const props = { a: { type: 'integer' }, b: { type: 'string' } };
    // additionalProperties left out (JSON Schema's default: any further property)
    check({ type: 'object', properties: props, required: ['b'] }, [{ b: 'x' }, { a: 1, b: 'x' }, { a: 1, b: 'x', c: null }, { 'a ': 'x', b: 'x' }], [{ a: 1 }, { a: 'x', b: 'x' }, {}]);
    check({ type: 'object', properties: props, required: ['b'], additionalProperties: true }, [{ b: 'x' }, { a: 1, b: 'x', c: null }, { b: 'x', aa: 1 }], [{ b: 'x', a: 'x' }]);
    check({ type: 'object', properties: props, additionalProperties: false }, [{}, { a: 1 }], [{ c: 1 }, { a: 1, c: 1 }]);
    check({ type: 'object', properties: props, additionalProperties: { type: 'boolean' } }, [{ a: 1, zz: true }, { aa: false }], [{ a: 1, zz: 1 }]);
    check({ type: 'object', patternProperties: { '^x-': { type: 'integer' } }, additionalProperties: false }, [{ 'x-a': 1 }, {}], [{ 'x-a': 'no' }, { y: 1 }]);
    check({ type: 'object', patternProperties: { '^x-': { type: 'integer' } }, additionalProperties: true }, [{ 'x-a': 1, y: 'any' }], [{ 'x-a': 'no' }]);
    check({ type: 'object' }, [{}, { any: [1, { b: null }] }], [[]]);
    check({ type: 'object', minProperties: 1, maxProperties: 2 }, [{ a: 1 }, { a: 1, b: 2 }], [{}, { a: 1, b: 2, c: 3 }]);
    check({ type: 'object', properties: props, minProperties: 2, additionalProperties: true }, [{ a: 1, b: 'x' }, { a: 1, q: 2 }], [{ a: 1 }, {}]);
    check({ type: 'object', propertyNames: { pattern: '^[a-z]+$' } }, [{ ab: 1 }], [{ Ab: 1 }]);
    check({ type: 'object', required: ['weird key "q"', 'x'] }, [{ 'weird key "q"': 1, x: 2 }], [{ x: 2 }]);
  });

  it('objects: further keys are no listed name, listed ones in any order, required tracked', () => {
    const props = { id: { type: 'integer' }, idx: { type: 'string' }, never: false, kind: { enum: ['a', 'b'] } };
    const schema = { type: 'object', properties: props, required: ['kind', 'id'] };
    const good = [{ kind: 'a', id: 1 }, { id: 1, kind: 'b' }, { i: true, id: 2, kind: 'a' }, { kind: 'a', 'id ': 'x', id: 3, idx: 'y', nev: null, neverr: 1 }, { idx: 'q', id: 0, kind: 'a', zz: [] }];
    // a listed name as a further key must keep its own schema; a name whose schema is false never appears
    const bad = [{ kind: 'a' }, { id: 1 }, { kind: 'a', id: 'one' }, { kind: 'a', id: 1, idx: 2 }, { kind: 'a', id: 1, never: 1 }, { kind: 'c', id: 1 }, {}];
    check(schema, good, bad);
    // a listed property comes at most once (up to 8 listed)
    check({ type: 'object', properties: { a: { type: 'integer' }, b: {} } }, ['\u0001{"b":1,"a":2}'], ['\u0001{"a":1,"a":2}', '\u0001{"b":1,"a":2,"b":3}']);
    // more required properties than are tracked as a set: then in the schema's order
    const many = Object.fromEntries('abcdefgh'.split('').map((k) => [k, { type: 'integer' }]));
    const all = Object.fromEntries('abcdefgh'.split('').map((k, i) => [k, i]));
    check({ type: 'object', properties: many, required: Object.keys(many) }, [all, { ...all, z: 'x' }], [{ ...all, a: 'x' }, { b: 1 }]);
  });

  it('closed (forced tool calls): additionalProperties left out beside properties means none', () => {
    const closed = (schema: unknown) => validateGrammarSpec({ type: 'json_schema', schema, closed: true });
    const props = { type: 'object', properties: { a: { type: 'integer' } } };
    assert.ok(accepts(closed(props), '{"a":1}') && accepts(closed(props), '{}'));
    assert.ok(!accepts(closed(props), '{"a":1,"b":2}') && !accepts(closed(props), '{"b":2}'));
    assert.ok(accepts(closed({ ...props, additionalProperties: true }), '{"a":1,"b":2}'));
    assert.ok(accepts(closed({ type: 'object' }), '{"b":[1]}'));
    const two = { type: 'object', properties: { name: { type: 'string' }, n: { type: 'integer' } } };
    assert.ok(accepts(closed(two), '{"name":"x","n":1}') && !accepts(closed(two), '{"n":1,"name":"x"}'));
  });

  it('enum and const decide every other keyword value by value (not, if/then/else, uniqueItems, oneOf)', () => {
    check({ allOf: [{ enum: [{ a: 0 }, { a: false }, 3] }, { not: { enum: [{ a: false }] } }] }, [{ a: 0 }, 3], [{ a: false }, 4]);
    check({ enum: [[1, 1], [1, 2], 'x'], uniqueItems: true }, [[1, 2], 'x'], [[1, 1]]);
    check({ enum: [1, 2, 3, 4], if: { minimum: 3 }, then: { multipleOf: 2 }, else: { not: { const: 1 } } }, [2, 4], [1, 3]);
    check({ enum: [{ x: 1 }, { y: 1 }, { x: 1, y: 1 }], oneOf: [{ required: ['x'] }, { required: ['y'] }] }, [{ x: 1 }, { y: 1 }], [{ x: 1, y: 1 }]);
    refuses({ enum: ['a'], not: { $dynamicRef: '#x' } }, /\$dynamicRef/);
    // names that are also Object.prototype's are properties like any other
    check({ enum: [{}, { toString: 1 }], required: ['toString'] }, [{ toString: 1 }], [{}]);
    check({ type: 'object', properties: { constructor: { type: 'integer' } }, required: ['toString'] }, [{ toString: 'x', constructor: 1 }], [{}, { toString: 1, constructor: 'x' }]);
  });

  it('oneOf of branches that only require names: exactly one branch holds', () => {
    const props = { r: { type: 'number' }, l: { type: 'number' }, w: { type: 'number' } };
    check({ type: 'object', properties: props, oneOf: [{ required: ['r'] }, { required: ['l', 'w'] }] }, [{ r: 1 }, { l: 1, w: 2 }, { r: 1, l: 2 }], [{}, { l: 1 }, { r: 1, l: 1, w: 1 }]);
  });

  it('dependencies, dependentRequired, dependentSchemas: split by which named properties are present', () => {
    const props = { a: { type: 'integer' }, b: { type: 'string' }, c: { type: 'boolean' } };
    check({ type: 'object', properties: props, dependencies: { a: ['b'] } }, [{}, { b: 'x' }, { a: 1, b: 'x' }, { c: true }], [{ a: 1 }, { a: 1, c: true }]);
    check({ type: 'object', properties: props, dependentRequired: { a: ['b', 'c'] } }, [{ a: 1, b: 'x', c: false }], [{ a: 1, b: 'x' }]);
    check({ type: 'object', properties: props, dependentSchemas: { a: { properties: { b: { maxLength: 1 } } } } }, [{ a: 1, b: 'x' }, { b: 'long' }], [{ a: 1, b: 'long' }]);
    check({ type: 'object', properties: props, dependencies: { c: { required: ['a'] } } }, [{ c: true, a: 1 }], [{ c: true }]);
  });

  it('a pattern of one character class meets minLength/maxLength', () => {
    check({ type: 'string', pattern: '^[a-z0-9.-]+$', minLength: 3, maxLength: 5 }, ['abc', 'a.b-c'], ['ab', 'abcdef', 'ab_c']);
    check({ type: 'string', pattern: '^[a-z]{2,10}$', maxLength: 3 }, ['ab', 'abc'], ['a', 'abcd']);
    refuses({ type: 'string', pattern: '^a+b$', maxLength: 3 }, /minLength.*pattern/);
  });

  it('allOf merges object keywords exactly: a name one member lists is under the other\'s additionalProperties', () => {
    check({ allOf: [{ properties: { a: { type: 'integer' } }, additionalProperties: false }, { properties: { b: { type: 'string' } } }] }, [{ a: 1 }, {}], [{ b: 'x' }, { a: 1, b: 'x' }]);
    check({ allOf: [{ patternProperties: { '^a': { minimum: 10 } } }, { patternProperties: { '^b': { minimum: 3 } } }], minProperties: 1 }, [{ a: 10 }, { b: 3 }, { ab: 10 }], [{ a: 9 }, { ba: 2 }, {}]);
    // patterns that may meet on one key with different schemas: refused
    refuses({ allOf: [{ patternProperties: { a: { minimum: 10 } } }, { patternProperties: { b: { minimum: 3 } } }] }, /patternProperties/);
    // a listed name a pattern matches keeps its own schema (written under the pattern too: narrower)
    check({ properties: { ax: { type: 'string' } }, patternProperties: { '^a': {} }, additionalProperties: false }, [{ ax: 'x' }, { ay: 'y' }], [{ ax: 1 }]);
    refuses({ allOf: [{ patternProperties: { a: {} } }, { additionalProperties: false }] }, /patternProperties/);
  });

  it('format uri-reference', () => {
    check({ type: 'string', format: 'uri-reference' }, ['https://example.com/a?b#c', '../x/y', '#frag'], ['invalid uri', 'a b']);
  });

  it('arrays: items, prefixItems, min/maxItems, contains, draft-04 items lists', () => {
    check({ type: 'array', items: { type: 'integer' }, minItems: 1, maxItems: 3 }, [[1], [1, 2, 3]], [[], [1, 2, 3, 4], ['a']]);
    check({ type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false }, [[], ['a'], ['a', 1]], [[1], ['a', 1, 2]]);
    check({ type: 'array', items: [{ type: 'string' }], additionalItems: { type: 'integer' } }, [['a', 1, 2]], [['a', 'b']]);
    check({ type: 'array', contains: { const: 3 } }, [[3], [1, 3, 5]], [[], [1, 2]]);
  });

  it('enum, const, type lists, anyOf, oneOf disjoint, allOf merged, $ref recursive', () => {
    check({ enum: ['a', 1, null, { x: [1] }] }, ['a', 1, null, { x: [1] }], ['b', 2, { x: [] }]);
    check({ const: { a: 1 } }, [{ a: 1 }], [{ a: 2 }]);
    check({ type: ['string', 'null'], maxLength: 1 }, ['a', null], ['ab', 1]);
    check({ anyOf: [{ type: 'integer' }, { type: 'string', maxLength: 1 }] }, [1, 'a'], ['ab', null]);
    check({ oneOf: [{ type: 'object', properties: { k: { const: 'a' }, n: { type: 'integer' } }, required: ['k'] }, { type: 'object', properties: { k: { const: 'b' } }, required: ['k'] }] }, [{ k: 'a', n: 1 }, { k: 'b' }], [{ k: 'c' }]);
    check({ allOf: [{ type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] }, { properties: { a: { minimum: 5 } } }] }, [{ a: 5 }], [{ a: 4 }, {}]);
    const tree = { $defs: { node: { type: 'object', properties: { kids: { type: 'array', items: { $ref: '#/$defs/node' } } }, additionalProperties: false } }, $ref: '#/$defs/node' };
    check(tree, [{}, { kids: [{ kids: [] }, {}] }], [{ kids: [1] }]);
    check({ definitions: { n: { type: 'integer' } }, properties: { a: { $ref: '#/definitions/n', minimum: 1 } } }, [{ a: 1 }], [{ a: 0 }]);
  });

  it('whitespace between tokens is bounded', () => {
    check({ type: 'object', properties: { a: { type: 'integer' } } }, ['\u0001{"a": 1}', '\u0001{ "a" : 1 }'], ['\u0001{"a":      1}']);
  });

  it('refuses what no grammar enforces, naming it; lenient mode drops it', () => {
    refuses({ type: 'array', uniqueItems: true }, /uniqueItems/);
    refuses({ not: { type: 'string' } }, /"not"/);
    refuses({ oneOf: [{ type: 'integer' }, { type: 'number' }] }, /oneOf.*#\/oneOf/);
    refuses({ properties: { a: { $ref: 'http://x/y' } } }, /local references/);
    check({ type: 'array', items: { type: 'integer' }, uniqueItems: true }, [[1, 2]], [['a']], true);
  });
});
