// A grammar as one automaton over bytes with calls: each rule is a Thompson NFA whose edges
// are byte ranges, empty moves, calls of other rules (with the state to continue at) and a
// return. Executed by the lazy pushdown automaton (pda.ts); built in time linear in the
// grammar's size, with nothing computed against the vocabulary.
import type { Expr, Rules } from './ebnf.js';
import { utf8Sequences } from './utf8-ranges.js';
import type { ByteRangeSeq } from './utf8-ranges.js';

export const enum StateKind {
  /** one byte edge lo..hi → next */
  Byte = 0,
  /** empty moves to eps[s] */
  Split = 1,
  /** enter rule callee[s], continue at next[s] after it returns */
  Call = 2,
  /** the end of rule callee[s] */
  Return = 3,
}

export class GrammarTooLargeError extends Error {}
export class LeftRecursionError extends Error {}

/** the empty moves of a state that is not a split (shared: never written to) */
const NO_MOVES = Object.freeze([]) as unknown as number[];

/** past this many states a grammar goes to xgrammar instead (a huge {m,n} written out) */
const MAX_STATES = 1 << 20;

export class ByteNfa {
  readonly kind: number[] = [];
  readonly lo: number[] = [];
  readonly hi: number[] = [];
  /** Byte: the target; Call: the continuation */
  readonly next: number[] = [];
  /** Call and Return: the rule */
  readonly callee: number[] = [];
  readonly eps: number[][] = [];
  readonly ruleStart: number[] = [];
  readonly ruleReturn: number[] = [];
  readonly ruleNames: string[] = [];
  /** per state: the rule whose body holds it (-1: a rule's start or return state) */
  readonly ruleOf: number[] = [];
  /** per rule: its body's first state (a body's states are contiguous, in build order) */
  readonly bodyStart: number[] = [];
  readonly rules: Rules;
  private building = -1;
  /** each class's byte sequences (a repetition builds one class many times) */
  private readonly sequences = new Map<Expr, ByteRangeSeq[]>();
  readonly root: number;
  /** per state: 1 when continuing there is the same as returning (a call to it is a tail call), 0 not, 2 unknown */
  private readonly tailMemo: number[] = [];
  /**
   * per byte state: a state that accepts the same next `horizon` bytes (-1: none). A long
   * bounded repetition (a string's maxLength) is written out copy by copy; away from its
   * bounds every copy reads what an unbounded loop reads within one token, so masks are
   * computed, and kept, once for the loop instead of once per copy.
   */
  readonly twin: number[] = [];
  hasTwins = false;

  /** `horizon`: the longest token in bytes (a mask looks no further ahead) */
  constructor(
    rules: Rules,
    rootName = 'root',
    private readonly horizon = Infinity,
  ) {
    const index = new Map<string, number>();
    for (const name of rules.keys()) {
      index.set(name, this.ruleNames.length);
      this.ruleNames.push(name);
      this.ruleStart.push(this.add(StateKind.Split));
      this.ruleReturn.push(this.add(StateKind.Return, { callee: this.ruleNames.length - 1 }));
    }
    const root = index.get(rootName);
    if (root === undefined) throw new Error(`the grammar has no rule ${rootName}`);
    this.root = root;
    this.rules = rules;
    for (const [name, expr] of rules) {
      const r = index.get(name)!;
      this.building = r;
      this.bodyStart[r] = this.size;
      const exit = this.build(expr, this.ruleStart[r]!, index);
      this.eps[exit]!.push(this.ruleReturn[r]!);
    }
    this.checkNoLeftRecursion();
  }

  get size(): number {
    return this.kind.length;
  }

  /** Whether continuing at state s is the same as returning from its rule. */
  isTail(s: number): boolean {
    const memo = this.tailMemo[s];
    if (memo !== undefined && memo !== 2) return memo === 1;
    // only empty moves to the rule's return, nothing that reads or calls
    const seen = new Set<number>();
    const work = [s];
    let tail = true;
    let returns = false;
    while (work.length > 0 && tail) {
      const t = work.pop()!;
      if (seen.has(t)) continue;
      seen.add(t);
      const k = this.kind[t];
      if (k === StateKind.Split) work.push(...this.eps[t]!);
      else if (k === StateKind.Return) returns = true;
      else tail = false;
    }
    this.tailMemo[s] = tail && returns ? 1 : 0;
    return tail && returns;
  }

  private add(kind: StateKind, f: { lo?: number; hi?: number; next?: number; callee?: number } = {}): number {
    const s = this.kind.length;
    if (s >= MAX_STATES) throw new GrammarTooLargeError(`the grammar needs more than ${MAX_STATES} automaton states`);
    this.kind.push(kind);
    this.lo.push(f.lo ?? 0);
    this.hi.push(f.hi ?? -1);
    this.next.push(f.next ?? -1);
    this.callee.push(f.callee ?? -1);
    this.eps.push(kind === StateKind.Split ? [] : NO_MOVES);
    this.tailMemo.push(2);
    this.twin.push(-1);
    this.ruleOf.push(this.building);
    return s;
  }

  /** Adds expr's states after split state `from`; returns the split state that follows it. */
  private build(expr: Expr, from: number, index: ReadonlyMap<string, number>): number {
    switch (expr.kind) {
      case 'bytes': {
        let cur = from;
        for (const b of expr.bytes) cur = this.edge(cur, b, b);
        return cur;
      }
      case 'class': {
        const to = this.add(StateKind.Split);
        let seqs = this.sequences.get(expr);
        if (!seqs) this.sequences.set(expr, (seqs = utf8Sequences(expr.ranges)));
        for (const seq of seqs) {
          let cur = from;
          seq.forEach(([lo, hi], k) => {
            cur = this.edge(cur, lo, hi, k === seq.length - 1 ? to : undefined);
          });
        }
        return to;
      }
      case 'ref': {
        const to = this.add(StateKind.Split);
        this.eps[from]!.push(this.add(StateKind.Call, { callee: index.get(expr.name)!, next: to }));
        return to;
      }
      case 'seq':
        return expr.items.reduce((cur, item) => this.build(item, cur, index), from);
      case 'alt': {
        const to = this.add(StateKind.Split);
        for (const item of expr.items) {
          const start = this.add(StateKind.Split);
          this.eps[from]!.push(start);
          this.eps[this.build(item, start, index)]!.push(to);
        }
        return to;
      }
      case 'repeat': {
        let cur = from;
        for (let i = 0; i < expr.min; i++) cur = this.build(expr.item, cur, index);
        if (expr.max === Infinity) {
          const head = this.add(StateKind.Split);
          this.eps[cur]!.push(head);
          this.eps[this.build(expr.item, head, index)]!.push(head);
          return head;
        }
        const to = this.add(StateKind.Split);
        this.eps[cur]!.push(to);
        const copies: Array<[number, number]> = [];
        for (let i = expr.min; i < expr.max; i++) {
          const first = this.size;
          cur = this.build(expr.item, cur, index);
          copies.push([first, this.size]);
          this.eps[cur]!.push(to);
        }
        if (expr.max >= 2 * this.horizon && isPlain(expr.item)) this.twinCopies(expr.item, expr.min, expr.max, copies, to, index);
        return to;
      }
    }
  }

  /**
   * A loop that stands in for the optional copies of item{min,max} (copies[k]: the states of
   * copy min + k) that cannot run past max within a token.
   */
  private twinCopies(item: Expr, min: number, max: number, copies: ReadonlyArray<[number, number]>, to: number, index: ReadonlyMap<string, number>): void {
    const head = this.add(StateKind.Split);
    this.eps[head]!.push(to);
    const first = this.size;
    this.eps[this.build(item, head, index)]!.push(head);
    const width = this.size - first;
    if (copies.some(([a, b]) => b - a !== width)) return;
    copies.forEach(([start], k) => {
      if (min + k + this.horizon <= max) for (let j = 0; j < width; j++) this.twin[start + j] = first + j;
    });
    this.hasTwins = true;
  }

  /** A byte edge lo..hi from split `from` to `to` (a new split state when not given). */
  private edge(from: number, lo: number, hi: number, to = this.add(StateKind.Split)): number {
    this.eps[from]!.push(this.add(StateKind.Byte, { lo, hi, next: to }));
    return to;
  }

  /**
   * A rule that can call itself before reading a byte, not in tail position, would push
   * frames forever; such grammars (never written by loom's schema compiler) go to xgrammar.
   * Tail calls push nothing, so a cycle of them only loops (`a ::= "" | b* a`).
   */
  private checkNoLeftRecursion(): void {
    const n = this.ruleNames.length;
    const nullable = new Array<boolean>(n).fill(false);
    // the rules each rule may call before reading a byte (given what is nullable so far), and
    // of those the ones called in tail position
    const leftCalls = (r: number): { calls: Set<number>; pushing: Set<number>; returns: boolean } => {
      const calls = new Set<number>();
      const pushing = new Set<number>();
      const seen = new Set<number>();
      const work = [this.ruleStart[r]!];
      let returns = false;
      while (work.length > 0) {
        const s = work.pop()!;
        if (seen.has(s)) continue;
        seen.add(s);
        const k = this.kind[s];
        if (k === StateKind.Split) work.push(...this.eps[s]!);
        else if (k === StateKind.Return) returns = true;
        else if (k === StateKind.Call) {
          const c = this.callee[s]!;
          calls.add(c);
          if (!this.isTail(this.next[s]!)) pushing.add(c);
          if (nullable[c]) work.push(this.next[s]!);
        }
      }
      return { calls, pushing, returns };
    };
    for (let changed = true; changed; ) {
      changed = false;
      for (let r = 0; r < n; r++) {
        if (!nullable[r] && leftCalls(r).returns) {
          nullable[r] = true;
          changed = true;
        }
      }
    }
    const edges = Array.from({ length: n }, (_, r) => leftCalls(r));
    // a pushing call u → v is endless when v leads back to u before reading a byte
    for (let u = 0; u < n; u++) {
      for (const v of edges[u]!.pushing) {
        const seen = new Set<number>([v]);
        const work = [v];
        while (work.length > 0) {
          const r = work.pop()!;
          if (r === u) throw new LeftRecursionError(`rule ${this.ruleNames[u]} is left-recursive`);
          for (const c of edges[r]!.calls) {
            if (!seen.has(c)) {
              seen.add(c);
              work.push(c);
            }
          }
        }
      }
    }
  }
}

/** an expression that reads bytes only (no calls): its copies have the same shape */
function isPlain(e: Expr): boolean {
  if (e.kind === 'bytes' || e.kind === 'class') return true;
  if (e.kind === 'seq' || e.kind === 'alt') return e.items.every(isPlain);
  if (e.kind === 'repeat') return isPlain(e.item);
  return false;
}
