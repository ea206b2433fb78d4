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

/** past this many configurations the tables start over (sequences keep their threads) */
const MAX_CONFIGS = 1 << 16;

export interface Config {
  /** the byte states of the threads, in the order of `key` */
  readonly states: Int32Array;
  readonly stacks: Int32Array;
  readonly accepting: boolean;
  /** a thread returned into UNKNOWN_STACK */
  readonly unsure: boolean;
  readonly key: string;
}

export class LazyPda {
  /** [configs × 256] next configuration, UNKNOWN or DEAD */
  table = new Int32Array(256 * 64).fill(UNKNOWN);
  private configs: Config[] = [];
  /** per configuration: its mask twin (maskTwin), once asked */
  private twins: number[] = [];
  /** per configuration: the same threads over UNKNOWN_STACK (stackFree), once asked */
  private cores: number[] = [];
  private interned = new Map<string, number>();
  /** call stacks, hash-consed: id → (continuation state, parent id); 0 is the empty stack */
  private readonly stackCont: number[] = [-1, -1];
  private readonly stackParent: number[] = [-1, -1];
  private readonly stackIds = new Map<number, number>();
  /** bumped when the tables start over (a configuration id from before means nothing) */
  generation = 0;
  /** the configuration before any input */
  start: number;

  constructor(readonly nfa: ByteNfa) {
    this.start = this.closure([nfa.ruleStart[nfa.root]!, 0]);
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
   * The configuration with every non-empty stack replaced by UNKNOWN_STACK: what a token
   * does inside a string or a key does not depend on where the value returns to, so masks
   * walked from it serve every context, and only tokens that return (unsure) are checked
   * against the real stack.
   */
  stackFree(config: number): number {
    const known = this.cores[config];
    if (known !== undefined) return known;
    const { states, stacks, accepting, unsure } = this.configs[config]!;
    const size = this.nfa.size;
    let changed = false;
    const keys = new Set<number>();
    for (let i = 0; i < states.length; i++) {
      const st = stacks[i]! === 0 ? 0 : UNKNOWN_STACK;
      if (st !== stacks[i]) changed = true;
      keys.add(st * size + states[i]!);
    }
    const to = changed ? this.intern([...keys], accepting, unsure) : config;
    this.cores[config] = to;
    return to;
  }

  /** The configuration after byte b (DEAD when no thread reads it); fills the table. */
  step(config: number, b: number): number {
    const cached = this.table[config * 256 + b]!;
    if (cached !== UNKNOWN) return cached;
    const current = this.configs[config];
    // an id from before the tables started over (a walk in progress): the walk is redone
    if (!current) return DEAD;
    const { states, stacks } = current;
    const { lo, hi, next } = this.nfa;
    const seeds: number[] = [];
    for (let i = 0; i < states.length; i++) {
      const s = states[i]!;
      if (b >= lo[s]! && b <= hi[s]!) seeds.push(next[s]!, stacks[i]!);
    }
    const to = seeds.length === 0 ? DEAD : this.closure(seeds);
    // interning may have started the tables over: config's id is void then
    if (config < this.configs.length && this.configs[config]!.states === states) this.table[config * 256 + b] = to;
    return to;
  }

  /**
   * The configuration whose masks equal this one's (ByteNfa.twin: the loop for a long
   * bounded repetition's middle copies), or the configuration itself.
   */
  maskTwin(config: number): number {
    const known = this.twins[config];
    if (known !== undefined) return known;
    const { states, stacks, accepting, unsure } = this.configs[config]!;
    const { twin, size } = this.nfa;
    let changed = false;
    const keys = new Set<number>();
    for (let i = 0; i < states.length; i++) {
      const t = twin[states[i]!]!;
      if (t >= 0) changed = true;
      keys.add(stacks[i]! * size + (t >= 0 ? t : states[i]!));
    }
    const to = changed ? this.intern([...keys], accepting, unsure) : config;
    this.twins[config] = to;
    return to;
  }

  /** A configuration's threads, to find it again after the tables started over. */
  snapshot(config: number): Config {
    return this.configs[config]!;
  }

  /** The id of a snapshot's configuration now. */
  restore(snap: Config): number {
    return this.interned.get(snap.key) ?? this.add(snap);
  }

  /** Follows empty moves, calls and returns from (state, stack) pairs; interns the result. */
  private closure(seeds: number[]): number {
    const nfa = this.nfa;
    const { kind, eps, next, callee, ruleStart } = nfa;
    const n = nfa.size;
    const seen = new Set<number>();
    const threads: number[] = [];
    let accepting = false;
    let unsure = false;
    const work = seeds;
    while (work.length > 0) {
      const stack = work.pop()!;
      const s = work.pop()!;
      const key = stack * n + s;
      if (seen.has(key)) continue;
      seen.add(key);
      switch (kind[s]) {
        case StateKind.Byte:
          threads.push(key);
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
    if (threads.length === 0 && !accepting && !unsure) return DEAD;
    return this.intern(threads, accepting, unsure);
  }

  /** The id of the configuration of these threads (stack × size + state keys). */
  private intern(threads: number[], accepting: boolean, unsure: boolean): number {
    const n = this.nfa.size;
    threads.sort((a, b) => a - b);
    const key = `${threads.join(',')}${accepting ? '!' : ''}${unsure ? '?' : ''}`;
    const found = this.interned.get(key);
    if (found !== undefined) return found;
    const states = new Int32Array(threads.length);
    const stacks = new Int32Array(threads.length);
    threads.forEach((t, i) => {
      states[i] = t % n;
      stacks[i] = Math.floor(t / n);
    });
    return this.add({ states, stacks, accepting, unsure, key });
  }

  private add(config: Config): number {
    if (this.configs.length >= MAX_CONFIGS) this.startOver();
    const id = this.configs.length;
    this.configs.push(config);
    this.interned.set(config.key, id);
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
    this.cores = [];
    this.interned = new Map();
    this.table.fill(UNKNOWN);
    this.generation++;
    this.configs.push(start);
    this.interned.set(start.key, 0);
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
