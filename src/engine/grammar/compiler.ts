// Grammars compiled for one tokenizer, cached by grammar; and the per-sequence matcher.
// JSON schemas, json_object and choices run on loom's lazy automaton (lazy/): compiling is
// parsing, masks are computed when asked. EBNF and regex grammars from requests (xgrammar's
// full notation) run on xgrammar, which precomputes masks against the vocabulary.
// Both see each token as its decoded bytes (xgrammar's vocab type "raw"), so the grammar
// sees exactly the text loom's detokenizer produces; special tokens (hidden from text) are
// empty, which no grammar allows, except the stop ids at the end.
import { performance } from 'node:perf_hooks';
import type { Tokenizer } from '../../tokenizer/tokenizer.js';
import { callXGrammar } from './xgrammar-binding.js';
import type { CompiledGrammarHandle, GrammarMatcherHandle, XGrammarBinding } from './xgrammar-binding.js';
import { choiceGrammar, grammarKey, schemaToEbnf } from './spec.js';
import { Utf8Guard } from './utf8-guard.js';
import type { GrammarSpec } from './spec.js';
import { EbnfSyntaxError } from './lazy/ebnf.js';
import { GrammarTooLargeError, LeftRecursionError } from './lazy/byte-nfa.js';
import { LazyGrammar, LazyPosition } from './lazy/lazy-grammar.js';
import { TokenTrie } from './lazy/token-trie.js';
import { SharedWalks } from './lazy/mask-cache.js';


/** What the compiler needs of a tokenizer: token bytes, which are hidden, the stop ids. */
export type GrammarVocab = Pick<Tokenizer, 'vocabSize' | 'stopIds' | 'isSpecial' | 'tokenBytes'>;

export interface CompileStats {
  compiled: number;
  cacheHits: number;
  /** ms spent compiling (cache misses only) */
  compileMs: number;
  /** next-token masks computed, and ms spent on them and on advancing the matchers */
  masks: number;
  maskMs: number;
  acceptMs: number;
}

/** grammars kept compiled (a lazy one compiles in milliseconds; its walks are kept with it) */
const CACHE_LIMIT = 32;

/** a compiled grammar: loom's lazy automaton, or xgrammar's precomputed one */
export type CompiledGrammar = { readonly lazy: LazyGrammar } | { readonly xgrammar: CompiledGrammarHandle };

/** where one sequence is in its grammar, whichever engine runs it */
interface GrammarPosition {
  fillMask(out: Int32Array): void;
  accept(id: number): boolean;
  readonly isTerminated: boolean;
  close(): void;
}

export class GrammarCompiler {
  /** ceil(vocabSize / 32): the length of a token bitmask */
  readonly maskWords: number;
  readonly stats: CompileStats = { compiled: 0, cacheHits: 0, compileMs: 0, masks: 0, maskMs: 0, acceptMs: 0 };
  private readonly compiler;
  /**
   * [maskWords] tokens free of raw control bytes (< 0x20): JSON never has them (loom's JSON
   * is one line), yet xgrammar 0.1.27 lets some string rules take them
   */
  private readonly jsonSafe: Int32Array;
  /** keeps every grammar's output valid UTF-8 */
  private readonly utf8: Utf8Guard;
  /** grammar key → compiled grammar; insertion order is recency (LRU) */
  private readonly cache = new Map<string, CompiledGrammar>();
  /** each token's bytes (empty: never allowed) */
  private readonly tokens: Uint8Array[];
  /** the vocabulary as a byte trie, for the lazy grammars' walks */
  private readonly trie: TokenTrie;
  /** walks every lazy grammar of this vocabulary shares */
  private readonly walks = new SharedWalks();

  /** `vocabSize`: the logits row length (may exceed the tokenizer's, padded ids are never allowed) */
  constructor(
    private readonly xg: XGrammarBinding,
    vocab: GrammarVocab,
    readonly vocabSize: number,
    readonly stopIds: readonly number[] = [...vocab.stopIds],
    /** run JSON schemas, json_object and choices on loom's lazy automaton (false: all on xgrammar, a reference) */
    private readonly lazy = true,
  ) {
    const tokens: Uint8Array[] = [];
    const empty = new Uint8Array(0);
    for (let id = 0; id < vocabSize; id++) tokens.push(id < vocab.vocabSize && !vocab.isSpecial(id) ? vocab.tokenBytes(id) : empty);
    this.tokens = tokens;
    const vec = xg.vecStringFromJSArray(tokens);
    const stops = xg.vecIntFromJSArray(this.stopIds);
    const info = new xg.TokenizerInfo(vec, 'RAW', vocabSize, stops, false);
    vec.delete();
    stops.delete();
    this.compiler = new xg.GrammarCompiler(info, 1, false);
    info.delete();
    this.maskWords = Math.ceil(vocabSize / 32);
    this.trie = new TokenTrie(tokens);
    this.utf8 = new Utf8Guard(tokens, this.maskWords);
    this.jsonSafe = new Int32Array(this.maskWords).fill(-1);
    tokens.forEach((bytes, id) => {
      if (bytes.some((b) => b < 0x20)) this.jsonSafe[id >> 5]! &= ~(1 << (id & 31));
    });
    for (let w = 0; w < this.maskWords; w++) this.jsonSafe[w]! &= this.utf8.valid[w]!;
  }

  /** The compiled grammar of a (validated) spec, from the cache when it was compiled before. */
  compile(spec: GrammarSpec): CompiledGrammar {
    const key = grammarKey(spec);
    const hit = this.cache.get(key);
    if (hit) {
      this.stats.cacheHits++;
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    const t0 = performance.now();
    const compiled = callXGrammar(`the ${spec.type === 'grammar' ? 'grammar' : spec.type.replace('_', ' ')} could not be compiled`, () => this.compileUncached(spec));
    this.stats.compileMs += performance.now() - t0;
    this.stats.compiled++;
    this.cache.set(key, compiled);
    if (this.cache.size > CACHE_LIMIT) {
      const [oldest, grammar] = this.cache.entries().next().value!;
      this.cache.delete(oldest);
      if ('xgrammar' in grammar) grammar.xgrammar.delete();
    }
    return compiled;
  }

  /** Frees every cached grammar (a benchmark compiling many schemas once each). */
  clearCache(): void {
    for (const grammar of this.cache.values()) if ('xgrammar' in grammar) grammar.xgrammar.delete();
    this.cache.clear();
  }

  /** A matcher at the grammar's start, for one sequence. */
  matcher(spec: GrammarSpec): SequenceGrammar {
    const compiled = this.compile(spec);
    const json = spec.type === 'json_schema' || spec.type === 'json_object';
    const position = 'lazy' in compiled ? new LazyPosition(compiled.lazy) : new XGrammarPosition(this.xg, new this.xg.GrammarMatcher(compiled.xgrammar, undefined, false, -1), this.vocabSize);
    return new SequenceGrammar(position, this.stats, this.utf8, json ? this.jsonSafe : this.utf8.valid);
  }

  private compileUncached(spec: GrammarSpec): CompiledGrammar {
    switch (spec.type) {
      // JSON as json.dumps writes it on one line (", " and ": "): free whitespace lets a model
      // pad forever
      case 'json_object':
        return this.lazyOrXGrammar(schemaToEbnf({ type: 'json_schema', schema: { type: 'object' } }).ebnf);
      case 'json_schema':
        return this.lazyOrXGrammar(schemaToEbnf(spec).ebnf);
      case 'regex':
        return { xgrammar: this.compiler.CompileStructuralTag(JSON.stringify({ type: 'structural_tag', format: { type: 'regex', pattern: spec.pattern } })) };
      case 'choice':
        return this.lazyOrXGrammar(choiceGrammar(spec.choices));
      case 'grammar':
        return { xgrammar: this.fromEbnf(spec.grammar) };
    }
  }

  /** loom's lazy automaton when it runs the grammar (left recursion, a huge {m,n}: xgrammar) */
  private lazyOrXGrammar(ebnf: string): CompiledGrammar {
    if (!this.lazy) return { xgrammar: this.fromEbnf(ebnf) };
    try {
      return { lazy: new LazyGrammar(ebnf, this.trie, this.tokens, this.stopIds, this.maskWords, this.walks) };
    } catch (err) {
      if (err instanceof EbnfSyntaxError || err instanceof LeftRecursionError || err instanceof GrammarTooLargeError) return { xgrammar: this.fromEbnf(ebnf) };
      throw err;
    }
  }


  private fromEbnf(ebnf: string): CompiledGrammarHandle {
    const grammar = this.xg.Grammar.FromEBNF(ebnf, 'root');
    try {
      return this.compiler.CompileGrammar(grammar);
    } finally {
      grammar.delete();
    }
  }
}

/** One sequence's position in its grammar: the mask of allowed next tokens, and advancing. */
export class SequenceGrammar {
  /** the UTF-8 lead byte the output ends on, whose second byte is still to come (0: none) */
  private pendingLead = 0;

  constructor(
    private readonly position: GrammarPosition,
    private readonly stats: CompileStats,
    private readonly utf8: Utf8Guard,
    /** [maskWords] ANDed into every mask */
    private readonly restrict: Int32Array,
  ) {}

  /** Writes the allowed-next-token bitmask ([ceil(vocab / 32)] words, bit set = allowed). */
  fillMask(out: Int32Array): void {
    const t0 = performance.now();
    this.position.fillMask(out);
    const r = this.restrict;
    for (let w = 0; w < out.length; w++) out[w]! &= r[w]!;
    if (this.pendingLead !== 0) this.utf8.restrictAfter(this.pendingLead, out);
    this.stats.masks++;
    this.stats.maskMs += performance.now() - t0;
  }

  /** Advances by a sampled token; false when the grammar does not allow it (the state is unchanged). */
  accept(id: number): boolean {
    const t0 = performance.now();
    const ok = this.position.accept(id);
    if (ok) this.pendingLead = this.utf8.leadAfter(id);
    this.stats.acceptMs += performance.now() - t0;
    return ok;
  }

  /** whether a stop token completed the grammar */
  get isTerminated(): boolean {
    return this.position.isTerminated;
  }

  /** Frees the matcher (idempotent). */
  close(): void {
    this.position.close();
  }
}

/** A position in an xgrammar-compiled grammar (its matcher lives in WebAssembly memory). */
class XGrammarPosition implements GrammarPosition {
  private closed = false;

  constructor(
    private readonly xg: XGrammarBinding,
    private readonly handle: GrammarMatcherHandle,
    private readonly vocabSize: number,
  ) {}

  fillMask(out: Int32Array): void {
    const vec = this.handle.GetNextTokenBitmask(this.vocabSize);
    try {
      out.set(this.xg.vecIntToView(vec));
    } finally {
      vec.delete();
    }
  }

  accept(id: number): boolean {
    return this.handle.AcceptToken(id, false);
  }

  get isTerminated(): boolean {
    return this.handle.IsTerminated();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.handle.delete();
  }
}
