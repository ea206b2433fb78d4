// Signatures of configurations that mean the same in every grammar. A stack-free
// configuration's future is fixed by the rules its threads are in, what those rules reach,
// and the threads' places in them; a rule's signature is that reachable sub-grammar written
// out with its rules renumbered in the order met, so `strsub` in one schema and in the next
// have one signature and share their walks. Rules reaching much (an object's whole schema)
// get none: their configurations are cached per grammar only.
import type { ByteNfa } from './byte-nfa.js';
import type { Expr } from './ebnf.js';
import type { SharedWalks } from './mask-cache.js';
import { UNKNOWN_STACK } from './pda.js';
import type { Config } from './pda.js';

/** past this many characters of reachable grammar a rule has no signature */
const MAX_SIGNATURE = 1024;

export class ConfigSignatures {
  /** per rule: its signature's id, -1 none, undefined not yet asked */
  private readonly ruleSig: Array<number | undefined> = [];

  constructor(
    private readonly nfa: ByteNfa,
    private readonly shared: SharedWalks,
  ) {}

  /** The configuration's signature, or undefined (a real stack, a rule reaching too much). */
  of(config: Config): string | undefined {
    const { states, stacks } = config;
    const parts: string[] = [];
    for (let i = 0; i < states.length; i++) {
      const st = stacks[i]!;
      if (st !== 0 && st !== UNKNOWN_STACK) return undefined;
      const s = states[i]!;
      const r = this.nfa.ruleOf[s]!;
      if (r < 0) return undefined;
      const id = this.rule(r);
      if (id < 0) return undefined;
      parts.push(`${id}.${s - this.nfa.bodyStart[r]!}.${st}`);
    }
    parts.sort();
    return `${parts.join(' ')}${config.accepting ? '!' : ''}${config.unsure ? '?' : ''}`;
  }

  private rule(r: number): number {
    let id = this.ruleSig[r];
    if (id === undefined) {
      const text = this.reachable(this.nfa.ruleNames[r]!);
      id = text === undefined ? -1 : this.shared.ruleId(text);
      this.ruleSig[r] = id;
    }
    return id;
  }

  /** the rules reachable from `name`, written with refs as their order of first meeting */
  private reachable(name: string): string | undefined {
    const order = new Map<string, number>([[name, 0]]);
    const queue = [name];
    const parts: string[] = [];
    let length = 0;
    const put = (x: string): boolean => {
      parts.push(x);
      length += x.length;
      return length <= MAX_SIGNATURE;
    };
    // false when the budget ran out (the rule gets no signature)
    const write = (e: Expr): boolean => {
      switch (e.kind) {
        case 'bytes':
          return put(`"${e.bytes.join('.')}"`);
        case 'class':
          return put(`[${e.ranges.map(([lo, hi]) => `${lo}-${hi}`).join(',')}]`);
        case 'ref': {
          let k = order.get(e.name);
          if (k === undefined) {
            order.set(e.name, (k = order.size));
            queue.push(e.name);
          }
          return put(`#${k}`);
        }
        case 'seq':
        case 'alt':
          if (!put(e.kind === 'seq' ? '(' : '<')) return false;
          for (const item of e.items) if (!write(item) || !put(' ')) return false;
          return put(')');
        case 'repeat':
          return write(e.item) && put(`{${e.min},${e.max}}`);
      }
    };
    for (let q = 0; q < queue.length; q++) if (!write(this.nfa.rules.get(queue[q]!)!) || !put('\n')) return undefined;
    return parts.join('');
  }
}
