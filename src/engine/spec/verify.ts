// Verifies a draft against the target model's rows, position by position, in one pass.
//
// Rejection sampling (Leviathan et al. 2023) accepts draft token x with probability
// min(1, p(x)/q(x)) and on rejection draws from norm(max(0, p − q)). A prompt-lookup draft
// is a point mass (q(x) = 1), so: accept with probability p(x); on rejection draw from p
// with x removed, renormalized. Drawing y ~ p once and accepting iff y = x does exactly that
// (P[accept] = p(x); given y ≠ x, y ~ p(·)/(1 − p(x)) on the other tokens), with one RNG
// draw per emitted token, as without speculation: a seeded request draws the same numbers.
// Greedy is the limit: accept iff argmax = x, else emit the argmax.

/** the token sampled at a draft position and whether the sequence ends with it */
export interface Sampled {
  readonly token: number;
  readonly finished: boolean;
}

/**
 * Samples positions 0, 1, … (position i: after the draft's first i tokens) through
 * `sampleAt`, which emits each token; stops after the first token that differs from the
 * draft or ends the sequence, or after the bonus token at position draft.length. Returns
 * how many draft tokens were accepted (their K/V, computed this step, are valid).
 */
export function verifyDraft(draft: readonly number[], sampleAt: (position: number) => Sampled): number {
  for (let i = 0; i < draft.length; i++) {
    const { token, finished } = sampleAt(i);
    if (token !== draft[i]) return i;
    if (finished) return i + 1;
  }
  sampleAt(draft.length);
  return draft.length;
}
