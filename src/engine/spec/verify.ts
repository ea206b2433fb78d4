// Verifies a draft against the target model's rows, position by position, in one pass.
//
// Rejection sampling (Leviathan et al. 2023) accepts draft token x with probability
// min(1, p(x)/q(x)) and on rejection draws from norm(max(0, p − q)); the emitted token is
// then distributed as p whatever q was. A prompt-lookup draft is a point mass (q(x) = 1),
// so: accept with probability p(x); on rejection draw from p with x removed, renormalized.
// Drawing y ~ p once and accepting iff y = x does exactly that (P[accept] = p(x); given
// y ≠ x, y ~ p(·)/(1 − p(x)) on the other tokens), with one RNG draw per emitted token, as
// without speculation: a seeded request draws the same numbers. A draft model's sampled
// draft keeps its q rows and goes through rejectionSample. Greedy is the limit: accept iff
// argmax = x, else emit the argmax.

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

/**
 * One draft position of Leviathan et al.'s rejection sampling: x (drawn from q) with
 * probability min(1, p(x)/q(x)), else a draw from norm(max(0, p − q)), which never is x.
 * p, q: [vocab] probabilities; `uniform` gives numbers in [0, 1). O(vocab) on rejection.
 */
export function rejectionSample(p: Float32Array, q: Float32Array, x: number, uniform: () => number): number {
  const px = p[x]!;
  const qx = q[x]!;
  if (px > 0 && uniform() * qx < px) return x;
  let total = 0;
  for (let i = 0; i < p.length; i++) {
    const r = p[i]! - q[i]!;
    if (r > 0) total += r;
  }
  // p = q up to rounding (a rejection then has probability ~0): draw from p itself
  const residual = total > 1e-12;
  const dist = (i: number): number => (residual ? Math.max(0, p[i]! - q[i]!) : p[i]!);
  let u = uniform() * (residual ? total : 1);
  let last = -1;
  for (let i = 0; i < p.length; i++) {
    const w = dist(i);
    if (w <= 0) continue;
    last = i;
    if (u < w) return i;
    u -= w;
  }
  return last >= 0 ? last : x;
}
