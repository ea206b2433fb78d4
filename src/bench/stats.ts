// Summary statistics for benchmark figures. Percentiles interpolate linearly between
// the sorted values (numpy's default): rank = p/100 · (n − 1).

export interface Summary {
  readonly mean: number;
  readonly p50: number;
  readonly p99: number;
}

/** Mean and sample standard deviation (n − 1) of the figures of several runs. */
export interface Spread {
  readonly mean: number;
  readonly stdev: number;
}

export function mean(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

/** Sample standard deviation; 0 for a single value, NaN for none. */
export function stdev(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  if (xs.length === 1) return 0;
  const m = mean(xs);
  let s = 0;
  for (const x of xs) s += (x - m) ** 2;
  return Math.sqrt(s / (xs.length - 1));
}

/** p in [0, 100]; NaN for no values. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile ${p} is outside [0, 100]`);
  const sorted = Float64Array.from(xs).sort();
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo]! + (rank - lo) * (sorted[hi]! - sorted[lo]!);
}

export function summarize(xs: readonly number[]): Summary {
  return { mean: mean(xs), p50: percentile(xs, 50), p99: percentile(xs, 99) };
}

export function spread(xs: readonly number[]): Spread {
  return { mean: mean(xs), stdev: stdev(xs) };
}

/** Least-squares slope of y over x (NaN with fewer than two distinct x). */
export function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = Math.min(xs.length, ys.length);
  const mx = mean(xs.slice(0, n));
  const my = mean(ys.slice(0, n));
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
  }
  return sxx === 0 ? NaN : sxy / sxx;
}

/** Cosine similarity of two vectors of the same length. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
}
