// The lazy pushdown automaton: a configuration is the set of (byte state, call stack) threads
// the input so far can be in, and whether it may end here. Configurations are interned and
// their transitions computed on first use, then read from a table (config × byte), so a
// token walk is mostly array reads. Calls in tail position push nothing, so right-recursive
// rules (lists, strings) loop in one configuration instead of growing the stack.
import { ByteNfa, StateKind } from './byte-nfa.js';

/** a transition not computed yet */
export const UNKNOWN = -2;
/** the configuration no input continues */
export const DEAD = -1;

/**
 * the stack a mask's walk starts from in place of a configuration's own: a thread that
 * returns into it marks the configuration unsure (what follows depends on the real stack)
 */
export const UNKNOWN_STACK = 1;

/**
 * past this many configurations the tables start over (sequences keep their threads); the
 * 240-schema corpus needs at most 10,193 in one grammar, 603 in the median one
 */
export const MAX_CONFIGS = 1 << 14;

export interface Config {
  /** the byte states of the threads, in the order of `key` */
  readonly states: Int32Array;
  readonly stacks: Int32Array;
  readonly accepting: boolean;
  /** a thread returned into UNKNOWN_STACK */
  readonly unsure: boolean;
  /** of the threads and flags, for interning */
  readonly hash: number;
}

function sameThreads(a: Config, states: Int32Array, stacks: Int32Array, accepting: boolean, unsure: boolean): boolean {
  if (a.accepting !== accepting || a.unsure !== unsure || a.states.length !== states.length) return false;
  for (let i = 0; i < states.length; i++) if (a.states[i] !== states[i] || a.stacks[i] !== stacks[i]) return false;
  return true;
}

export class LazyPda {
  /** [configs × 256] next configuration, UNKNOWN or DEAD */
  table = new Int32Array(256 * 64).fill(UNKNOWN);
  private configs: Config[] = [];
  /** per configuration: its mask twin (maskTwin), once asked */
  private twins: number[] = [];
  /** fillRow's scratch: per byte, the threads reading it (a bit each); the row; subset → configuration */
  private readers = new Uint32Array(256);
  private readonly row = new Int32Array(256);
  private readonly bySubset = new Map<string | number, number>();
  /** closure's scratch: per state, the closure that last met it and the first stack it met it with */
  private readonly seenStamp: Int32Array;
  private readonly seenStack: Int32Array;
  private stamp = 0;
  private readonly seen = new Set<number>();
  /** intern's scratch */
  private sortStates = new Int32Array(64);
  private sortStacks = new Int32Array(64);
  /** per kept depth, per configuration: its stacks cut (truncated), once asked */
  private cut: number[][] = [];
  /** hash → the configurations with it */
  private interned = new Map<number, number[]>();
  /** call stacks, hash-consed: id → (continuation state, parent id); 0 is the empty stack */
  private readonly stackCont: number[] = [-1, -1];
  private readonly stackParent: number[] = [-1, -1];
  private readonly stackIds = new Map<number, number>();
  /** bumped when the tables start over (a configuration id from before means nothing) */
  generation = 0;
  /** the configuration before any input */
  start: number;

  constructor(
    readonly nfa: ByteNfa,
    private maxConfigs = MAX_CONFIGS,
  ) {
    this.seenStamp = new Int32Array(nfa.size);
    this.seenStack = new Int32Array(nfa.size);
    this.start = this.closure([nfa.ruleStart[nfa.root]!, 0]);
  }

  /** Allows twice the configurations (a single walk that needs more than the tables hold). */
  growLimit(): void {
    this.maxConfigs *= 2;
  }

  get configCount(): number {
    return this.configs.length;
  }

  isAccepting(config: number): boolean {
    return this.configs[config]!.accepting;
  }

  isUnsure(config: number): boolean {
    return this.configs[config]!.unsure;
  }

  /**
   * The configuration with every stack cut to its top `keep` frames over UNKNOWN_STACK
   * (the empty stack stays). What a token does inside a string or a key does not depend on
   * where the value returns to, so masks walked from the cut configuration serve every
   * context, and only tokens that return below the cut (unsure) are checked against the real
   * stack. keep 0 is the most shared; a frame or two keep tokens that leave a small rule
   * (whitespace, a colon) known.
   */
  truncated(config: number, keep: number): number {
    const memo = (this.cut[keep] ??= []);
    const known = memo[config];
    if (known !== undefined) return known;
    const { states, stacks, accepting, unsure } = this.configs[config]!;
    let changed = false;
    const mapped: number[] = [];
    for (let i = 0; i < states.length; i++) {
      const st = this.cutStack(stacks[i]!, keep);
      if (st !== stacks[i]) changed = true;
      mapped.push(st);
    }
    const to = changed ? this.intern([...states], mapped, accepting, unsure) : config;
    memo[config] = to;
    return to;
  }

  /** A stack cut to its top `keep` frames over UNKNOWN_STACK. */
  private cutStack(stack: number, keep: number): number {
    if (stack === 0 || stack === UNKNOWN_STACK) return stack;
    if (keep === 0) return UNKNOWN_STACK;
    return this.push(this.stackCont[stack]!, this.cutStack(this.stackParent[stack]!, keep - 1));
  }

  /** The configuration after byte b (DEAD when no thread reads it); fills the table. */
  step(config: number, b: number): number {
    const cached = this.table[config * 256 + b]!;
    if (cached !== UNKNOWN) return cached;
    const current = this.configs[config];
    // an id from before the tables started over (a walk in progress): the walk is redone
    if (!current) return DEAD;
    return this.fillRow(config, current, b);
  }

  /**
   * Computes a configuration's whole row at once: bytes read by the same threads lead to
   * the same configuration, so a row costs one closure per distinct thread subset (a
   * string's configuration: about ten) instead of one per byte. Returns the entry for b.
   */
  private fillRow(config: number, current: Config, b: number): number {
    const { states, stacks } = current;
    const { lo, hi, next } = this.nfa;
    const words = (states.length + 31) >>> 5;
    if (this.readers.length < 256 * words) this.readers = new Uint32Array(256 * words);
    const readers = this.readers;
    readers.fill(0, 0, 256 * words);
    for (let i = 0; i < states.length; i++) {
      const s = states[i]!;
      const bit = 1 << (i & 31);
      for (let x = lo[s]!, end = hi[s]!; x <= end; x++) readers[x * words + (i >>> 5)]! |= bit;
    }
    const generation = this.generation;
    const row = this.row;
    const bySubset = this.bySubset;
    bySubset.clear();
    for (let x = 0; x < 256; x++) {
      let subset: string | number;
      let any = false;
      if (words === 1) {
        subset = readers[x]!;
        any = subset !== 0;
      } else {
        const w = readers.subarray(x * words, (x + 1) * words);
        any = w.some((v) => v !== 0);
        subset = w.join(',');
      }
      if (!any) {
        row[x] = DEAD;
        continue;
      }
      let to = bySubset.get(subset);
      if (to === undefined) {
        const seeds: number[] = [];
        for (let i = 0; i < states.length; i++) if ((readers[x * words + (i >>> 5)]! >>> (i & 31)) & 1) seeds.push(next[states[i]!]!, stacks[i]!);
        to = this.closure(seeds);
        bySubset.set(subset, to);
        // the tables started over: config's id is void, the row is not kept
        if (this.generation !== generation) return x === b ? to : this.closure(this.seedsFor(current, b));
      }
      row[x] = to;
    }
    this.table.set(row, config * 256);
    return row[b]!;
  }

  private seedsFor({ states, stacks }: Config, b: number): number[] {
    const { lo, hi, next } = this.nfa;
    const seeds: number[] = [];
    for (let i = 0; i < states.length; i++) {
      const s = states[i]!;
      if (b >= lo[s]! && b <= hi[s]!) seeds.push(next[s]!, stacks[i]!);
    }
    return seeds;
  }

  /**
   * The configuration whose masks equal this one's (ByteNfa.twin: the loop for a long
   * bounded repetition's middle copies), or the configuration itself.
   */
  maskTwin(config: number): number {
    const known = this.twins[config];
    if (known !== undefined) return known;
    const { states, stacks, accepting, unsure } = this.configs[config]!;
    const { twin } = this.nfa;
    let changed = false;
    const mapped: number[] = [];
    for (let i = 0; i < states.length; i++) {
      const t = twin[states[i]!]!;
      if (t >= 0) changed = true;
      mapped.push(t >= 0 ? t : states[i]!);
    }
    const to = changed ? this.intern(mapped, [...stacks], accepting, unsure) : config;
    this.twins[config] = to;
    return to;
  }

  /** A configuration's threads, to find it again after the tables started over. */
  snapshot(config: number): Config {
    return this.configs[config]!;
  }

  /** The id of a snapshot's configuration now. */
  restore(snap: Config): number {
    return this.find(snap.states, snap.stacks, snap.accepting, snap.unsure, snap.hash) ?? this.add(snap);
  }

  private find(states: Int32Array, stacks: Int32Array, accepting: boolean, unsure: boolean, hash: number): number | undefined {
    const ids = this.interned.get(hash);
    if (ids) for (const id of ids) if (sameThreads(this.configs[id]!, states, stacks, accepting, unsure)) return id;
    return undefined;
  }

  /** Follows empty moves, calls and returns from (state, stack) pairs; interns the result. */
  private closure(seeds: number[]): number {
    const nfa = this.nfa;
    const { kind, eps, next, callee, ruleStart } = nfa;
    // visited (state, stack) pairs: the first stack met at a state by stamp, more in a set
    const stamp = ++this.stamp;
    const { seenStamp, seenStack } = this;
    const more = this.seen;
    more.clear();
    const states: number[] = [];
    const stacks: number[] = [];
    let accepting = false;
    let unsure = false;
    const work = seeds;
    while (work.length > 0) {
      const stack = work.pop()!;
      const s = work.pop()!;
      if (seenStamp[s] !== stamp) {
        seenStamp[s] = stamp;
        seenStack[s] = stack;
      } else {
        if (seenStack[s] === stack) continue;
        const key = stack * nfa.size + s;
        if (more.has(key)) continue;
        more.add(key);
      }
      switch (kind[s]) {
        case StateKind.Byte:
          states.push(s);
          stacks.push(stack);
          break;
        case StateKind.Split:
          for (const e of eps[s]!) work.push(e, stack);
          break;
        case StateKind.Call: {
          const cont = next[s]!;
          work.push(ruleStart[callee[s]!]!, nfa.isTail(cont) ? stack : this.push(cont, stack));
          break;
        }
        case StateKind.Return:
          if (stack === 0) accepting = true;
          else if (stack === UNKNOWN_STACK) unsure = true;
          else work.push(this.stackCont[stack]!, this.stackParent[stack]!);
          break;
      }
    }
    if (states.length === 0 && !accepting && !unsure) return DEAD;
    return this.intern(states, stacks, accepting, unsure);
  }

  /** The id of the configuration of these threads (pairs in any order, repeats allowed). */
  private intern(stateList: number[], stackList: number[], accepting: boolean, unsure: boolean): number {
    // insertion sort by (state, stack) into scratch, dropping repeats: thread sets are small
    if (this.sortStates.length < stateList.length) {
      this.sortStates = new Int32Array(2 * stateList.length);
      this.sortStacks = new Int32Array(2 * stateList.length);
    }
    const ss = this.sortStates;
    const sk = this.sortStacks;
    let m = 0;
    for (let i = 0; i < stateList.length; i++) {
      const s = stateList[i]!;
      const k = stackList[i]!;
      let j = m;
      while (j > 0 && (ss[j - 1]! > s || (ss[j - 1] === s && sk[j - 1]! > k))) j--;
      if (j > 0 && ss[j - 1] === s && sk[j - 1] === k) continue;
      ss.copyWithin(j + 1, j, m);
      sk.copyWithin(j + 1, j, m);
      ss[j] = s;
      sk[j] = k;
      m++;
    }
    let hash = 0x811c9dc5 ^ (accepting ? 1 : 0) ^ (unsure ? 2 : 0);
    for (let i = 0; i < m; i++) {
      hash = Math.imul(hash ^ ss[i]!, 0x01000193);
      hash = Math.imul(hash ^ sk[i]!, 0x01000193);
    }
    const same = this.interned.get(hash);
    if (same) {
      for (const id of same) {
        const c = this.configs[id]!;
        if (c.accepting !== accepting || c.unsure !== unsure || c.states.length !== m) continue;
        let equal = true;
        for (let i = 0; i < m && equal; i++) equal = c.states[i] === ss[i] && c.stacks[i] === sk[i];
        if (equal) return id;
      }
    }
    return this.add({ states: ss.slice(0, m), stacks: sk.slice(0, m), accepting, unsure, hash });
  }

  private add(config: Config): number {
    if (this.configs.length >= this.maxConfigs) this.startOver();
    const id = this.configs.length;
    this.configs.push(config);
    const same = this.interned.get(config.hash);
    if (same) same.push(id);
    else this.interned.set(config.hash, [id]);
    if (this.table.length < (id + 1) * 256) {
      const grown = new Int32Array(this.table.length * 2).fill(UNKNOWN);
      grown.set(this.table);
      this.table = grown;
    }
    return id;
  }

  private startOver(): void {
    const start = this.configs[this.start]!;
    this.configs = [];
    this.twins = [];
    this.cut = [];
    this.interned = new Map();
    this.table.fill(UNKNOWN);
    this.generation++;
    this.configs.push(start);
    this.interned.set(start.hash, [0]);
    this.start = 0;
  }

  private push(cont: number, parent: number): number {
    const key = parent * this.nfa.size + cont;
    let id = this.stackIds.get(key);
    if (id === undefined) {
      id = this.stackCont.length;
      this.stackCont.push(cont);
      this.stackParent.push(parent);
      this.stackIds.set(key, id);
    }
    return id;
  }
}
