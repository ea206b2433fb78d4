// A grammar executed lazily against one vocabulary (what llguidance does, where xgrammar
// precomputes): compiling is parsing the EBNF and building the byte automaton, no pass over
// the vocabulary; a token mask is one walk of the token trie from the sequence's
// configuration, skipping every subtree whose prefix the grammar rejects. What a walk finds
// is kept per configuration (the same place in a string or a list costs a copy), and for
// configurations that mean the same in every grammar, per vocabulary (mask-cache.ts).
import { ByteNfa } from './byte-nfa.js';
import { parseEbnf } from './ebnf.js';
import { BoundedCache, groupEntryBytes, maskEntryBytes, subtreeEntryBytes } from './mask-cache.js';
import type { GroupEntry, MaskEntry, SharedWalks, SubtreeEntry } from './mask-cache.js';
import { DEAD, LazyPda, MAX_CONFIGS } from './pda.js';
import type { Config } from './pda.js';
import { ConfigSignatures } from './signatures.js';
import type { TokenTrie } from './token-trie.js';

/**
 * bytes of walks kept per grammar in each of its four caches (what every grammar shares is in
 * SharedWalks); with the automaton's table (MAX_CONFIGS rows of 1 KiB) a grammar holds at
 * most 24 MiB, GrammarCompiler's 32 grammars 768 MiB, however many schemas come
 */
const GRAMMAR_CACHE_BYTES = 2 << 20;
/** thrown inside a mask computation whose tables started over */
const STALE = Symbol('stale');
/** subtrees of this many trie nodes and more are walked through the subtree cache */
const SPLIT_NODES = 256;
const EMPTY = new Int32Array(0);
/** first bytes leading to one configuration that are kept as one mask */
const GROUP_MIN = 8;
/** the stack depths masks are first walked with (EXACT: the real stack) */
const CUTS = [0, 2];
const EXACT = -1;
/** past this many tokens to check against the real stack, a mask is walked with a deeper cut instead */
const MAX_UNSURE = 1024;

export class LazyGrammar {
  readonly pda: LazyPda;
  private readonly masks = new BoundedCache<number, MaskEntry>(GRAMMAR_CACHE_BYTES, maskEntryBytes);
  /** configuration → its whole mask (unsure tokens checked, stops set): a position seen again costs a copy */
  private readonly finished = new BoundedCache<number, Int32Array>(GRAMMAR_CACHE_BYTES, (m) => 4 * m.length);
  /** configuration × trie nodes + node → the tokens under that node it allows */
  private readonly subtrees = new BoundedCache<number, SubtreeEntry>(GRAMMAR_CACHE_BYTES, subtreeEntryBytes);
  /** configuration → the tokens under a set of first bytes it allows, as a mask */
  private readonly groups = new BoundedCache<number, GroupEntry>(GRAMMAR_CACHE_BYTES, groupEntryBytes);
  /** cut configurations with too many unsure tokens: masks there come from a deeper cut or the real one */
  private readonly stackBound = new Set<number>();
  /** per configuration: the id of its signature (-1 none), in the tables' current generation */
  private signatureOf: number[] = [];
  private readonly signatures: ConfigSignatures;
  private cacheGeneration = 0;
  /** the tables' generation the mask being computed began in */
  private walkGeneration = 0;
  /** the configuration at each depth of the walk */
  private readonly walkConfigs: Int32Array;
  /** scratch lists of token ids a walk finds */
  private readonly scratchFound: Int32Array;
  private readonly scratchUnsure: Int32Array;


  /** Throws EbnfSyntaxError, LeftRecursionError or GrammarTooLargeError for what it cannot run. */
  constructor(
    ebnf: string,
    private readonly trie: TokenTrie,
    private readonly tokenBytes: readonly Uint8Array[],
    private readonly stopIds: readonly number[],
    readonly maskWords: number,
    private readonly shared: SharedWalks,
    /** past this many configurations the automaton's tables start over */
    maxConfigs = MAX_CONFIGS,
  ) {
    this.pda = new LazyPda(new ByteNfa(parseEbnf(ebnf), 'root', trie.maxDepth), maxConfigs);
    this.signatures = new ConfigSignatures(this.pda.nfa, shared);
    this.walkConfigs = new Int32Array(trie.maxDepth + 1);
    this.scratchFound = new Int32Array(trie.tokenIds.length);
    this.scratchUnsure = new Int32Array(trie.tokenIds.length);
  }

  /** Writes the mask of tokens allowed in configuration `position` (bit set = allowed). */
  fillMask(position: number, out: Int32Array): void {
    const pda = this.pda;
    const snap = pda.snapshot(position);
    for (let attempt = 0; ; attempt++) {
      try {
        this.fillMaskOnce(attempt === 0 ? position : pda.restore(snap), out);
        return;
      } catch (err) {
        if (err !== STALE) throw err;
        // the tables started over on the way (every id held is void): again in the new ones,
        // with room for twice the configurations when one mask needed more than they hold
        if (attempt > 0) pda.growLimit();
      }
    }
  }

  private fillMaskOnce(position: number, out: Int32Array): void {
    const pda = this.pda;
    this.walkGeneration = pda.generation;
    if (this.cacheGeneration !== pda.generation) {
      this.finished.clear();
      this.masks.clear();
      this.subtrees.clear();
      this.groups.clear();
      this.stackBound.clear();
      this.signatureOf = [];
      this.cacheGeneration = pda.generation;
    }
    const done = this.finished.get(position);
    if (done) {
      out.set(done);
      return;
    }
    const twin = pda.nfa.hasTwins ? pda.maskTwin(position) : position;
    // stacks cut to no frame (shared most widely), then to a few; where most tokens still
    // return below the cut (after a value: "," "}"), the real stack decides: walk with it
    let entry: MaskEntry | undefined;
    for (const keep of CUTS) {
      const cut = pda.truncated(twin, keep);
      this.fresh();
      if (pda.isUnsure(cut) || this.stackBound.has(cut)) continue;
      const e = this.entry(cut, keep);
      if (e.unsure.length <= MAX_UNSURE) {
        entry = e;
        break;
      }
      this.stackBound.add(cut);
    }
    entry ??= this.entry(twin, EXACT);
    out.set(entry.mask);
    const unsure = entry.unsure;
    for (let k = 0; k < unsure.length; k++) {
      const id = unsure[k]!;
      if (this.advance(position, id) !== DEAD) out[id >> 5]! |= 1 << (id & 31);
    }
    this.fresh();
    if (pda.isAccepting(position)) for (const id of this.stopIds) out[id >> 5]! |= 1 << (id & 31);
    this.finished.set(position, out.slice());
  }

  /** Throws STALE when the tables started over since this mask began. */
  private fresh(): void {
    if (this.pda.generation !== this.walkGeneration) throw STALE;
  }

  /** The configuration after a token's bytes, DEAD when the grammar rejects them. */
  advance(config: number, id: number): number {
    const bytes = this.tokenBytes[id];
    if (!bytes || bytes.length === 0) return DEAD;
    let c = config;
    for (let i = 0; i < bytes.length && c !== DEAD; i++) c = this.pda.step(c, bytes[i]!);
    return c;
  }

  isStop(id: number): boolean {
    return this.stopIds.includes(id);
  }

  /** `keep`: config's stacks are cut to that many frames, and so are the subtrees below its first bytes (EXACT: not cut) */
  private entry(config: number, keep: number): MaskEntry {
    const sig = (): number | undefined => this.signature(config);
    return twoLevel(this.masks, config, this.shared.masks, sig, () => this.walk(config, keep));
  }

  private signature(config: number): number | undefined {
    let sig = this.signatureOf[config];
    if (sig === undefined) {
      const text = this.signatures.of(this.pda.snapshot(config));
      this.signatureOf[config] = sig = text === undefined ? -1 : this.shared.configId(text);
    }
    return sig < 0 ? undefined : sig;
  }

  /** The tokens a configuration allows for sure, and those that return into its unknown stack. */
  private walk(config: number, keep: number): MaskEntry {
    const { byte, subtreeEnd } = this.trie;
    const pda = this.pda;
    const n = byte.length;
    // first bytes grouped by the configuration they lead to (below the first byte the stack
    // is unknown too in a stack-free walk: every position of a free-form key leads to its
    // rest, whatever the object around it)
    const groups = new Map<number, number[]>();
    for (let top = 1; top < n; top = subtreeEnd[top]!) {
      const b = byte[top]!;
      let next = pda.table[config * 256 + b]!;
      if (next < DEAD) next = pda.step(config, b);
      if (next === DEAD) continue;
      const first = keep === EXACT ? next : pda.truncated(next, keep);
      this.fresh();
      const tops = groups.get(first);
      if (tops) tops.push(top);
      else groups.set(first, [top]);
    }
    const mask = new Int32Array(this.maskWords);
    const unsure: Int32Array[] = [];
    for (const [first, tops] of groups) {
      if (tops.length < GROUP_MIN) {
        for (const top of tops) this.addSubtree(this.subtree(top, first), mask, unsure);
        continue;
      }
      const group = this.group(first, tops);
      for (let w = 0; w < mask.length; w++) mask[w]! |= group.mask[w]!;
      unsure.push(...group.unsure);
    }
    return { mask, unsure: concat(unsure) };
  }

  /**
   * The tokens under many first bytes that lead to one configuration. Kept per configuration
   * as a mask over the first bytes it was made for; another set of first bytes (the next
   * position of a key: all but its own next letters) corrects it by the subtrees that differ.
   */
  private group(first: number, tops: readonly number[]): { mask: Int32Array; unsure: Int32Array[] } {
    let base = this.groups.get(first);
    if (!base) {
      const sig = this.signature(first);
      base = sig === undefined ? undefined : this.shared.groups.get(sig);
      if (!base) {
        const mask = new Int32Array(this.maskWords);
        for (const top of tops) orIds(this.subtree(top, first).ids, mask);
        base = { tops: new Set(tops), mask };
        if (sig !== undefined) this.shared.groups.set(sig, base);
      }
      this.groups.set(first, base);
    }
    const mask = base.mask.slice();
    const wanted = new Set(tops);
    for (const top of base.tops) if (!wanted.has(top)) clearIds(this.subtree(top, first).ids, mask);
    const unsure: Int32Array[] = [];
    for (const top of tops) {
      const sub = this.subtree(top, first);
      if (!base.tops.has(top)) orIds(sub.ids, mask);
      if (sub.unsure.length > 0) unsure.push(sub.unsure);
    }
    return { mask, unsure };
  }

  private addSubtree(sub: SubtreeEntry, mask: Int32Array, unsure: Int32Array[]): void {
    orIds(sub.ids, mask);
    if (sub.unsure.length > 0) unsure.push(sub.unsure);
  }

  /** The tokens under trie node `top` (its byte read) allowed from configuration `first`. */
  private subtree(top: number, first: number): SubtreeEntry {
    const nodes = this.trie.nodes;
    const sharedKey = (): number | undefined => {
      const sig = this.signature(first);
      return sig === undefined ? undefined : sig * nodes + top;
    };
    return twoLevel(this.subtrees, first * nodes + top, this.shared.subtrees, sharedKey, () => this.walkSubtree(top, first));
  }

  /**
   * Walks a subtree; its large child subtrees go through `subtree` (kept), since many
   * configurations lead to the same one below (after a key's next letter, most bytes lead
   * to its rest).
   */
  private walkSubtree(top: number, first: number): SubtreeEntry {
    const { byte, subtreeEnd, tokenStart, tokenIds } = this.trie;
    const pda = this.pda;
    const end = subtreeEnd[top]!;
    if (pda.isUnsure(first)) return { ids: EMPTY, unsure: tokenIds.slice(tokenStart[top]!, tokenStart[end]!) };
    const ids: Int32Array[] = [tokenIds.subarray(tokenStart[top]!, tokenStart[top + 1]!)];
    const unsure: Int32Array[] = [];
    for (let c = top + 1; c < end; c = subtreeEnd[c]!) {
      let to = pda.table[first * 256 + byte[c]!]!;
      if (to < DEAD) {
        to = pda.step(first, byte[c]!);
        this.fresh();
      }
      if (to === DEAD) continue;
      const sub = subtreeEnd[c]! - c >= SPLIT_NODES ? this.subtree(c, to) : this.walkInline(c, to);
      if (sub.ids.length > 0) ids.push(sub.ids);
      if (sub.unsure.length > 0) unsure.push(sub.unsure);
    }
    return { ids: concat(ids), unsure: concat(unsure) };
  }

  /** A small subtree walked node by node. */
  private walkInline(top: number, first: number): SubtreeEntry {
    const { byte, depth, subtreeEnd, tokenStart, tokenIds } = this.trie;
    const pda = this.pda;
    const configs = this.walkConfigs;
    const found = this.scratchFound;
    const unsure = this.scratchUnsure;
    let foundCount = 0;
    let unsureCount = 0;
    let table = pda.table;
    const end = subtreeEnd[top]!;
    for (let i = top; i < end; ) {
      let to = first;
      if (i !== top) {
        const from = configs[depth[i]! - 1]!;
        to = table[from * 256 + byte[i]!]!;
        if (to < DEAD) {
          to = pda.step(from, byte[i]!);
          this.fresh();
          table = pda.table;
        }
        if (to === DEAD) {
          i = subtreeEnd[i]!;
          continue;
        }
      }
      if (pda.isUnsure(to)) {
        // the token returns into the stack the walk does not know: each is checked exactly
        for (let k = tokenStart[i]!, e = tokenStart[subtreeEnd[i]!]!; k < e; k++) unsure[unsureCount++] = tokenIds[k]!;
        i = subtreeEnd[i]!;
        continue;
      }
      configs[depth[i]!] = to;
      for (let k = tokenStart[i]!, e = tokenStart[i + 1]!; k < e; k++) found[foundCount++] = tokenIds[k]!;
      i++;
    }
    return { ids: found.slice(0, foundCount), unsure: unsure.slice(0, unsureCount) };
  }
}

/** One sequence's place in a LazyGrammar. */
export class LazyPosition {
  private config: number;
  private generation: number;
  private snap: Config;
  private terminated = false;

  constructor(private readonly grammar: LazyGrammar) {
    this.config = grammar.pda.start;
    this.generation = grammar.pda.generation;
    this.snap = grammar.pda.snapshot(this.config);
  }

  fillMask(out: Int32Array): void {
    if (this.terminated) {
      out.fill(0);
      return;
    }
    this.grammar.fillMask(this.current(), out);
  }

  /** Advances by a token; false (unchanged) when the grammar does not allow it. */
  accept(id: number): boolean {
    if (this.terminated) return false;
    const from = this.current();
    if (this.grammar.isStop(id)) {
      if (!this.grammar.pda.isAccepting(from)) return false;
      this.terminated = true;
      return true;
    }
    let to = this.grammar.advance(from, id);
    // a start-over during the token: its configuration is in the new tables, found by replaying
    if (this.grammar.pda.generation !== this.generation) to = this.grammar.advance(this.current(), id);
    if (to === DEAD) return false;
    this.config = to;
    this.snap = this.grammar.pda.snapshot(to);
    return true;
  }

  get isTerminated(): boolean {
    return this.terminated;
  }

  /** Nothing to free: the automaton is the grammar's, shared. */
  close(): void {}

  /** the configuration's id in the automaton's current tables */
  private current(): number {
    const pda = this.grammar.pda;
    if (pda.generation !== this.generation) {
      this.config = pda.restore(this.snap);
      this.generation = pda.generation;
    }
    return this.config;
  }
}

function concat(parts: readonly Int32Array[]): Int32Array {
  if (parts.length === 0) return EMPTY;
  if (parts.length === 1) return parts[0]!;
  const out = new Int32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function orIds(ids: Int32Array, mask: Int32Array): void {
  for (let k = 0; k < ids.length; k++) {
    const id = ids[k]!;
    mask[id >> 5]! |= 1 << (id & 31);
  }
}

function clearIds(ids: Int32Array, mask: Int32Array): void {
  for (let k = 0; k < ids.length; k++) {
    const id = ids[k]!;
    mask[id >> 5]! &= ~(1 << (id & 31));
  }
}

/**
 * A walk kept per grammar (by configuration id) and, when the configuration has a
 * signature, per vocabulary (by the signature's key): found in either, or computed and kept in both.
 */
function twoLevel<V>(local: BoundedCache<number, V>, key: number, shared: BoundedCache<number, V>, sharedKey: () => number | undefined, compute: () => V): V {
  let v = local.get(key);
  if (v !== undefined) return v;
  const k = sharedKey();
  v = k === undefined ? undefined : shared.get(k);
  if (v === undefined) {
    v = compute();
    if (k !== undefined) shared.set(k, v);
  }
  local.set(key, v);
  return v;
}
