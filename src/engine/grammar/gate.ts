// When a sequence's grammar starts: at once, or when its reasoning ends (vLLM applies
// structured output only after the reasoning parser's end token; llama-server's grammars
// let the thinking block through first). The gate watches the sampled token ids for the
// reasoning end marker, so the engine needs no text: reasoning (unconstrained) runs until
// the output's last tokens are the end marker's ids, and the grammar applies from the next
// token. A model that opens its reasoning itself (Gemma 4's <|channel>) may also skip it:
// its first token is then the grammar's first, or the start token, which opens reasoning.

/** Where the grammar waits for reasoning to end (sampling params; absent: it starts at once). */
export interface GrammarGate {
  /** the ids that end reasoning (e.g. </think>): the grammar starts after them */
  readonly reasoningEnd: readonly number[];
  /**
   * set when the model opens reasoning itself: the first token may be this one (reasoning
   * follows) or one the grammar allows (no reasoning). Unset: reasoning is open from the start.
   */
  readonly reasoningStart?: number | undefined;
}

export function validateGrammarGate(gate: GrammarGate, isTokenId: (id: number) => boolean): string | null {
  if (!Array.isArray(gate.reasoningEnd) || gate.reasoningEnd.length === 0) return 'reasoningEnd must be a non-empty list of token ids';
  if (!gate.reasoningEnd.every(isTokenId)) return 'reasoningEnd must hold token ids';
  if (gate.reasoningStart !== undefined && !isTokenId(gate.reasoningStart)) return 'reasoningStart must be a token id';
  return null;
}

/** One sequence's place relative to its reasoning. */
export class SequenceGate {
  private state: 'lead' | 'reasoning' | 'grammar';
  /** the last output tokens, as many as the end marker has */
  private readonly tail: number[] = [];

  constructor(private readonly gate: GrammarGate) {
    this.state = gate.reasoningStart !== undefined ? 'lead' : 'reasoning';
  }

  /** whether the grammar's mask constrains the next token */
  get constrains(): boolean {
    return this.state !== 'reasoning';
  }

  /** whether the grammar has started (every token from here on is the grammar's) */
  get started(): boolean {
    return this.state === 'grammar';
  }

  /** Lets the start token through a grammar mask (the lead position only). */
  widen(mask: Int32Array): void {
    const id = this.gate.reasoningStart;
    if (this.state === 'lead' && id !== undefined) mask[id >> 5]! |= 1 << (id & 31);
  }

  /** Takes a sampled token; true when it is the grammar's to accept. */
  observe(token: number): boolean {
    if (this.state === 'grammar') return true;
    if (this.state === 'lead') {
      if (token !== this.gate.reasoningStart) {
        this.state = 'grammar';
        return true;
      }
      this.state = 'reasoning';
    }
    const end = this.gate.reasoningEnd;
    this.tail.push(token);
    if (this.tail.length > end.length) this.tail.shift();
    if (this.tail.length === end.length && this.tail.every((t, i) => t === end[i])) this.state = 'grammar';
    return false;
  }
}
