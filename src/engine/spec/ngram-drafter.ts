// Prompt lookup (vLLM's "ngram" method): the longest suffix n-gram of a sequence (prompt and
// output) that occurred before proposes the tokens that followed it there. No model runs.

export interface NgramLookup {
  /** longest and shortest suffix tried, longest first */
  readonly max: number;
  readonly min: number;
}

const NO_DRAFT: readonly number[] = Object.freeze([]);

/**
 * Up to k tokens that followed an earlier occurrence of the longest suffix n-gram (n from
 * lookup.max down to lookup.min) of tokens[0, length): the latest occurrence with k tokens
 * after it, else the one with the most (in a repeating pattern the latest occurrence overlaps
 * the suffix and would propose only one period). Empty when no suffix recurs. O(length · max).
 */
export function proposeNgram(tokens: ArrayLike<number>, lookup: NgramLookup, k: number, length = tokens.length): readonly number[] {
  if (k <= 0) return NO_DRAFT;
  for (let n = Math.min(lookup.max, length - 1); n >= lookup.min; n--) {
    const suffix = length - n;
    let best = -1; // start of the match with the most followers so far
    // starts i with tokens[i, i+n) == tokens[suffix, length), latest first; each has a follower (i + n < length)
    for (let i = suffix - 1; i >= 0; i--) {
      let j = 0;
      while (j < n && tokens[i + j] === tokens[suffix + j]) j++;
      if (j < n) continue;
      best = i;
      if (i + n + k <= length) break;
    }
    if (best < 0) continue;
    const from = best + n;
    const to = Math.min(from + k, length);
    const draft: number[] = [];
    for (let t = from; t < to; t++) draft.push(tokens[t]!);
    return draft;
  }
  return NO_DRAFT;
}
