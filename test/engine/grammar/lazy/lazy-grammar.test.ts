// loom's lazy automaton against xgrammar, an independent implementation of the same
// grammars: on random walks through each grammar (a byte-level BPE vocabulary, tokens drawn
// from the allowed ones), the two allow exactly the same tokens at every step, and agree on
// what ends the output. JSON schemas and choices go through GrammarCompiler as served (with
// xgrammar forced for the reference); EBNF the schema compiler never writes (nullable loops,
// tail calls through nullable prefixes, UTF-8 classes) goes to LazyGrammar directly.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { GrammarCompiler } from '../../../../src/engine/grammar/compiler.js';
import type { SequenceGrammar } from '../../../../src/engine/grammar/compiler.js';
import { LazyGrammar, LazyPosition } from '../../../../src/engine/grammar/lazy/lazy-grammar.js';
import { SharedWalks } from '../../../../src/engine/grammar/lazy/mask-cache.js';
import { TokenTrie } from '../../../../src/engine/grammar/lazy/token-trie.js';
import { LeftRecursionError } from '../../../../src/engine/grammar/lazy/byte-nfa.js';
import { validateGrammarSpec } from '../../../../src/engine/grammar/spec.js';
import type { GrammarSpec } from '../../../../src/engine/grammar/spec.js';
import { loadXGrammar } from '../../../../src/engine/grammar/xgrammar-binding.js';
import type { XGrammarBinding } from '../../../../src/engine/grammar/xgrammar-binding.js';
import { benchTokenizer } from '../../../../src/bench/grammar.js';
import { Rng } from '../../../../src/engine/rng.js';
import type { Tokenizer } from '../../../../src/tokenizer/tokenizer.js';

let xg: XGrammarBinding;
let tok: Tokenizer;
let lazy: GrammarCompiler;
let reference: GrammarCompiler;
let tokens: Uint8Array[];

const allowedIds = (mask: Int32Array): number[] => {
  const ids: number[] = [];
  mask.forEach((w, i) => {
    for (let b = 0; b < 32; b++) if ((w >>> b) & 1) ids.push(i * 32 + b);
  });
  return ids;
};

interface Walker {
  fillMask(out: Int32Array): void;
  accept(id: number): boolean;
  readonly isTerminated: boolean;
}

/** Walks both side by side; returns how many steps ran. Tokens that close things are drawn more often, so walks end. */
function walkBoth(a: Walker, b: Walker, seed: number, what: string, steps = 60): number {
  const rng = new Rng(seed);
  const words = Math.ceil(tok.vocabSize / 32);
  const ma = new Int32Array(words);
  const mb = new Int32Array(words);
  const stop = [...tok.stopIds][0]!;
  for (let step = 0; step < steps; step++) {
    a.fillMask(ma);
    b.fillMask(mb);
    const ia = allowedIds(ma);
    const ib = allowedIds(mb);
    if (ia.join() !== ib.join()) {
      const onlyA = ia.filter((x) => !ib.includes(x)).slice(0, 5);
      const onlyB = ib.filter((x) => !ia.includes(x)).slice(0, 5);
      const show = (ids: number[]): string => ids.map((id) => JSON.stringify(Buffer.from(tokens[id] ?? []).toString('latin1'))).join(' ');
      assert.fail(`${what}, step ${step}: lazy ${ia.length} allowed, xgrammar ${ib.length}; only lazy: ${show(onlyA)}; only xgrammar: ${show(onlyB)}`);
    }
    if (ia.length === 0) return step;
    if (ia.includes(stop) && rng.next() < 0.3) {
      assert.ok(a.accept(stop) && b.accept(stop), what);
      assert.ok(a.isTerminated && b.isTerminated, what);
      return step;
    }
    const closing = ia.filter((id) => /["}\]]/.test(Buffer.from(tokens[id] ?? []).toString('latin1')));
    const pool = closing.length > 0 && rng.next() < 0.5 ? closing : ia;
    const id = pool[Math.floor(rng.next() * pool.length)]!;
    assert.equal(a.accept(id), true, what);
    assert.equal(b.accept(id), true, what);
    if (id === stop) {
      assert.ok(a.isTerminated && b.isTerminated, what);
      return step;
    }
  }
  return steps;
}

/** xgrammar matchers of raw EBNF, the reference for LazyGrammar (call `done` after the last). */
function xgrammarWalkers(ebnf: string): { walker(): Walker & { close(): void }; done(): void } {
  const vec = xg.vecStringFromJSArray(tokens);
  const stops = xg.vecIntFromJSArray([...tok.stopIds]);
  const info = new xg.TokenizerInfo(vec, 'RAW', tok.vocabSize, stops, false);
  const compiler = new xg.GrammarCompiler(info, 1, false);
  const grammar = xg.Grammar.FromEBNF(ebnf, 'root');
  const compiled = compiler.CompileGrammar(grammar);
  for (const h of [vec, stops, info, compiler, grammar]) h.delete();
  return { walker: () => xgrammarWalker(new xg.GrammarMatcher(compiled, undefined, false, -1)), done: () => compiled.delete() };
}

function xgrammarWalker(m: InstanceType<XGrammarBinding['GrammarMatcher']>): Walker & { close(): void } {
  return {
    fillMask(out) {
      const v = m.GetNextTokenBitmask(tok.vocabSize);
      out.set(xg.vecIntToView(v));
      v.delete();
    },
    accept: (id) => m.AcceptToken(id, false),
    get isTerminated() {
      return m.IsTerminated();
    },
    close: () => m.delete(),
  };
}

function lazyWalker(ebnf: string, maxConfigs?: number): Walker {
  const words = Math.ceil(tok.vocabSize / 32);
  const g = new LazyGrammar(ebnf, new TokenTrie(tokens), tokens, [...tok.stopIds], words, new SharedWalks(), maxConfigs);
  return new LazyPosition(g);
}

const SCHEMAS: Array<[string, unknown]> = [
  ['bounded string', { type: 'string', minLength: 2, maxLength: 40 }],
  ['long bounded string (copies share masks)', { type: 'object', properties: { title: { type: 'string', maxLength: 120 } }, required: ['title'] }],
  ['numbers', { type: 'object', properties: { n: { type: 'integer', minimum: -5, maximum: 1200 }, x: { type: 'number' } }, required: ['n', 'x'] }],
  ['further properties (key trie)', { type: 'object', properties: { name: { type: 'string' }, nickname: { type: 'string' }, age: { type: 'integer' } }, additionalProperties: { type: 'boolean' } }],
  ['array', { type: 'array', items: { enum: ['red', 'grün', 7, null] }, minItems: 1, maxItems: 4 }],
  ['recursive tree', { $defs: { node: { type: 'object', properties: { v: { type: 'integer' }, kids: { type: 'array', items: { $ref: '#/$defs/node' } } }, required: ['v'] } }, $ref: '#/$defs/node' }],
  ['format and pattern', { type: 'object', properties: { d: { type: 'string', format: 'date' }, code: { type: 'string', pattern: '^[A-Z]{2}-[0-9]+$' } }, required: ['d', 'code'] }],
  ['anything', {}],
];

describe('lazy automaton against xgrammar', () => {
  before(async () => {
    xg = await loadXGrammar();
    // a small byte-level BPE vocabulary: xgrammar's compile, the reference, walks all of it per grammar
    tok = benchTokenizer(undefined, 4096);
    tokens = Array.from({ length: tok.vocabSize }, (_, id) => (tok.isSpecial(id) ? new Uint8Array(0) : tok.tokenBytes(id)));
    lazy = new GrammarCompiler(xg, tok, tok.vocabSize);
    reference = new GrammarCompiler(xg, tok, tok.vocabSize, undefined, false);
  });

  const both = (spec: GrammarSpec): [SequenceGrammar, SequenceGrammar] => [lazy.matcher(spec), reference.matcher(spec)];

  for (const [name, schema] of SCHEMAS) {
    it(`JSON schema: ${name}`, () => {
      const spec = validateGrammarSpec({ type: 'json_schema', schema });
      let steps = 0;
      for (let seed = 1; seed <= 6; seed++) {
        const [a, b] = both(spec);
        steps += walkBoth(a, b, seed, `${name} seed ${seed}`);
        a.close();
        b.close();
      }
      assert.ok(steps > 10, `${steps} steps`);
    });
  }

  it('json_object and choices', () => {
    for (const spec of [{ type: 'json_object' }, { type: 'choice', choices: ['yes', 'no', 'maybe so', 'ünïcödé'] }] as GrammarSpec[]) {
      for (let seed = 1; seed <= 4; seed++) {
        const [a, b] = both(spec);
        walkBoth(a, b, seed, `${spec.type} seed ${seed}`);
      }
    }
  });

  // [name, grammar, an equivalent grammar xgrammar compiles fast (default: the same)]
  const EBNF: Array<[string, string, string?]> = [
    ['a tail call after a nullable loop (schemas from regexes have it)', 'root ::= "<" body ">"\nbody ::= "" | [a-z ]* body', 'root ::= "<" [a-z ]* ">"'],
    ['right recursion, not in tail position', 'root ::= item\nitem ::= "(" item ")" | "x"'],
    ['nested repetition', 'root ::= ([a-f] | [x-z]{2} | "ab"){1,6} ("!" | "?")'],
    ['alternatives that share prefixes', 'root ::= "abc" | "abd" | "ab" [0-9]{2,3} | "a" x\nx ::= [b-z]+ "."'],
  ];
  for (const [name, ebnf, same = ebnf] of EBNF) {
    it(`EBNF: ${name}`, () => {
      const refs = xgrammarWalkers(same);
      for (let seed = 1; seed <= 5; seed++) {
        const ref = refs.walker();
        walkBoth(lazyWalker(ebnf), ref, seed, `${name} seed ${seed}`);
        ref.close();
      }
      refs.done();
    });
  }

  it('tables that start over mid-walk give the same masks', () => {
    const ebnf = 'root ::= "[" (item ("," item)*)? "]"\nitem ::= "\\"" [a-z]{0,30} "\\"" | [0-9]{1,12}';
    const refs = xgrammarWalkers(ebnf);
    for (let seed = 1; seed <= 4; seed++) {
      const ref = refs.walker();
      walkBoth(lazyWalker(ebnf, 24), ref, seed, `seed ${seed}`, 80);
      ref.close();
    }
    refs.done();
  });

  it('classes past ASCII: whole characters, split across tokens or not (xgrammar 0.1.27 reads such classes otherwise)', () => {
    const accepts = (text: string): boolean => {
      const w = lazyWalker('root ::= ([\\u03b1-\\u03c9] | [\\u4e00-\\u4e2f]){1,3} "!"');
      const bytes = Buffer.from(text, 'utf8');
      // one byte a token, so characters are split across tokens
      const byteId = (b: number): number => tokens.findIndex((t) => t.length === 1 && t[0] === b);
      return [...bytes].every((b) => w.accept(byteId(b))) && w.accept([...tok.stopIds][0]!);
    };
    assert.equal(accepts('αω!'), true);
    assert.equal(accepts('一α!'), true);
    assert.equal(accepts('α'), false);
    assert.equal(accepts('αβγδ!'), false);
    assert.equal(accepts('a!'), false);
    assert.equal(accepts('Ω!'), false);
  });

  it('a left-recursive grammar is refused (GrammarCompiler gives it to xgrammar)', () => {
    assert.throws(() => lazyWalker('root ::= root "a" | "b"'), LeftRecursionError);
    assert.doesNotThrow(() => lazyWalker('root ::= "" | [a-z]* root'));
  });
});
