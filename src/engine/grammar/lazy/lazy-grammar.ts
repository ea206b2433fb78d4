// A grammar executed lazily against one vocabulary (what llguidance does, where xgrammar
// precomputes): compiling is parsing the EBNF and building the byte automaton, no pass over
// the vocabulary; a token mask is one walk of the token trie from the sequence's
// configuration, skipping every subtree whose prefix the grammar rejects. Masks are kept per
// configuration, so a position seen before (the same place in a string, a list) costs a copy.
import { ByteNfa } from './byte-nfa.js';
import { parseEbnf } from './ebnf.js';
import { DEAD, LazyPda } from './pda.js';
import type { Config } from './pda.js';
import type { TokenTrie } from './token-trie.js';

/** bytes of masks kept per grammar */
const MASK_CACHE_BYTES = 16 << 20;
/** past this many tokens to check against the real stack, a mask is walked with it instead */
const MAX_UNSURE = 256;
/** token ids kept per grammar in walked subtrees */
const SUBTREE_CACHE_IDS = 4 << 20;

export class LazyGrammar {
  readonly pda: LazyPda;
  private readonly masks = new Map<number, MaskEntry>();
  private readonly maskLimit: number;
  private maskGeneration = 0;
  /** the configuration at each depth of the walk */
  private readonly walkConfigs: Int32Array;
  /** (configuration after a first byte) × 256 + byte → the tokens under that byte it allows */
  private readonly subtrees = new Map<number, SubtreeEntry>();
  private subtreeIds = 0;
  /** stack-free configurations with too many unsure tokens: masks there come from the real one */
  private readonly stackBound = new Set<number>();

  /** Throws EbnfSyntaxError, LeftRecursionError or GrammarTooLargeError for what it cannot run. */
  constructor(
    ebnf: string,
    private readonly trie: TokenTrie,
    private readonly tokenBytes: readonly Uint8Array[],
    private readonly stopIds: readonly number[],
    readonly maskWords: number,
  ) {
    this.pda = new LazyPda(new ByteNfa(parseEbnf(ebnf), 'root', trie.maxDepth));
    this.maskLimit = Math.max(16, Math.floor(MASK_CACHE_BYTES / (maskWords * 4)));
    this.walkConfigs = new Int32Array(trie.maxDepth + 1);
  }

  /** Writes the mask of tokens allowed in configuration `position` (bit set = allowed). */
  fillMask(position: number, out: Int32Array): void {
    const pda = this.pda;
    const generation = pda.generation;
    const snap = pda.snapshot(position);
    const twin = pda.nfa.hasTwins ? pda.maskTwin(position) : position;
    if (this.maskGeneration !== generation) {
      this.masks.clear();
      this.subtrees.clear();
      this.stackBound.clear();
      this.subtreeIds = 0;
      this.maskGeneration = generation;
    }
    const free = pda.stackFree(twin);
    // where most tokens return (after a value: "," "}"), the real stack decides: walk with it
    let entry = pda.isUnsure(free) || this.stackBound.has(free) ? undefined : this.entry(free);
    if (entry && entry.unsure.length > MAX_UNSURE) {
      this.stackBound.add(free);
      entry = undefined;
    }
    entry ??= this.entry(twin);
    out.set(entry.mask);
    const unsure = entry.unsure;
    for (let k = 0; k < unsure.length; k++) {
      const id = unsure[k]!;
      if (this.advance(position, id) !== DEAD) out[id >> 5]! |= 1 << (id & 31);
    }
    // the tables started over on the way: every id above is void, again in the new ones
    if (pda.generation !== generation) return this.fillMask(pda.restore(snap), out);
    if (pda.isAccepting(position)) for (const id of this.stopIds) out[id >> 5]! |= 1 << (id & 31);
  }

  private entry(key: number): MaskEntry {
    let entry = this.masks.get(key);
    if (!entry) {
      entry = this.walk(key);
      if (this.masks.size >= this.maskLimit) this.masks.delete(this.masks.keys().next().value!);
      this.masks.set(key, entry);
    }
    return entry;
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

  /** The tokens a configuration allows for sure, and those that return into its unknown stack. */
  private walk(config: number): MaskEntry {
    const mask = new Int32Array(this.maskWords);
    const unsure: number[] = [];
    const { byte, subtreeEnd, tokenStart, tokenIds } = this.trie;
    const pda = this.pda;
    let table = pda.table;
    const n = byte.length;
    for (let top = 1; top < n; top = subtreeEnd[top]!) {
      // a subtree under a first byte, from the configuration that byte leads to: kept, since
      // many configurations share it (every position of a free-form key leads to its rest)
      const b = byte[top]!;
      let next = table[config * 256 + b]!;
      if (next < DEAD) {
        next = pda.step(config, b);
        table = pda.table;
      }
      if (next === DEAD) continue;
      const memoKey = next * 256 + b;
      let sub = this.subtrees.get(memoKey);
      if (sub === undefined) {
        sub = this.walkSubtree(top, next);
        table = pda.table;
        this.remember(memoKey, sub);
      }
      const ids = sub.ids;
      for (let k = 0; k < ids.length; k++) {
        const id = ids[k]!;
        mask[id >> 5]! |= 1 << (id & 31);
      }
      for (let k = 0; k < sub.unsure.length; k++) unsure.push(sub.unsure[k]!);
    }
    return { mask, unsure: Int32Array.from(unsure) };
  }

  /** The subtree of node `top`, entered in configuration `first`. */
  private walkSubtree(top: number, first: number): SubtreeEntry {
    const { byte, depth, subtreeEnd, tokenStart, tokenIds } = this.trie;
    const pda = this.pda;
    const configs = this.walkConfigs;
    const found: number[] = [];
    const unsure: number[] = [];
    let table = pda.table;
    const end = subtreeEnd[top]!;
    for (let i = top; i < end; ) {
      let to = first;
      if (i !== top) {
        const from = configs[depth[i]! - 1]!;
        to = table[from * 256 + byte[i]!]!;
        if (to < DEAD) {
          to = pda.step(from, byte[i]!);
          table = pda.table;
        }
        if (to === DEAD) {
          i = subtreeEnd[i]!;
          continue;
        }
      }
      if (pda.isUnsure(to)) {
        // the token returns into the stack the walk does not know: each is checked exactly
        for (let k = tokenStart[i]!, e = tokenStart[subtreeEnd[i]!]!; k < e; k++) unsure.push(tokenIds[k]!);
        i = subtreeEnd[i]!;
        continue;
      }
      configs[depth[i]!] = to;
      for (let k = tokenStart[i]!, e = tokenStart[i + 1]!; k < e; k++) found.push(tokenIds[k]!);
      i++;
    }
    return { ids: Int32Array.from(found), unsure: Int32Array.from(unsure) };
  }

  private remember(key: number, sub: SubtreeEntry): void {
    this.subtreeIds += sub.ids.length + sub.unsure.length;
    this.subtrees.set(key, sub);
    for (const [oldest, old] of this.subtrees) {
      if (this.subtreeIds <= SUBTREE_CACHE_IDS) break;
      this.subtrees.delete(oldest);
      this.subtreeIds -= old.ids.length + old.unsure.length;
    }
  }
}

interface MaskEntry {
  /** the tokens allowed whatever the stack */
  readonly mask: Int32Array;
  /** the tokens to check against the configuration's own stack */
  readonly unsure: Int32Array;
}

interface SubtreeEntry {
  readonly ids: Int32Array;
  readonly unsure: Int32Array;
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
    const to = this.grammar.advance(from, id);
    if (to === DEAD) return false;
    const pda = this.grammar.pda;
    // a start-over during the token: its configuration is in the new tables, found by replaying
    if (pda.generation !== this.generation) return this.acceptAfterStartOver(id);
    this.config = to;
    this.snap = pda.snapshot(to);
    return true;
  }

  get isTerminated(): boolean {
    return this.terminated;
  }

  /** Nothing to free: the automaton is the grammar's, shared. */
  close(): void {}

  private acceptAfterStartOver(id: number): boolean {
    const to = this.grammar.advance(this.current(), id);
    if (to === DEAD) return false;
    this.config = to;
    this.snap = this.grammar.pda.snapshot(to);
    return true;
  }

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
