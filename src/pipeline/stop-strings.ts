// Stop strings over streamed text: a stop string may span token boundaries, so text that
// could be the start of one is held back until it is known not to be. The stop string
// itself never reaches the output.

export class StopStringMatcher {
  private held = '';
  private readonly longest: number;

  constructor(private readonly stops: readonly string[]) {
    this.longest = Math.max(0, ...stops.map((s) => s.length));
  }

  /** Text safe to emit after `piece`, and whether a stop string was hit (then nothing more comes). */
  push(piece: string): { text: string; stopped: boolean; stop?: string } {
    if (this.stops.length === 0) return { text: piece, stopped: false };
    const text = this.held + piece;
    let cut = -1;
    let hit: string | undefined;
    for (const stop of this.stops) {
      // search only where a match could newly end, so the cost is O(piece + longest stop)
      const at = text.indexOf(stop, Math.max(0, this.held.length - stop.length + 1));
      if (at >= 0 && (cut < 0 || at < cut)) {
        cut = at;
        hit = stop;
      }
    }
    if (cut >= 0) {
      this.held = '';
      return { text: text.slice(0, cut), stopped: true, stop: hit! };
    }
    const keep = this.heldBackLength(text);
    this.held = text.slice(text.length - keep);
    return { text: text.slice(0, text.length - keep), stopped: false };
  }

  /** What was held back, at the end of the stream. */
  flush(): string {
    const rest = this.held;
    this.held = '';
    return rest;
  }

  /** length of the longest suffix of text that is a proper prefix of some stop string */
  private heldBackLength(text: string): number {
    for (let n = Math.min(this.longest - 1, text.length); n > 0; n--) {
      const suffix = text.slice(text.length - n);
      if (this.stops.some((s) => s.startsWith(suffix))) return n;
    }
    return 0;
  }
}
