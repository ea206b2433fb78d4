// Top-k and top-p over a candidate list in expected O(candidates), by partial selection
// (quickselect), never a full sort. The order of tokens is (logit desc, id asc): a strict
// total order, so results do not depend on the candidates' initial order.

/** Scratch shared by every sampler of this thread (sampling is synchronous): [capacity] each. */
export interface Scratch {
  /** candidate token ids */
  idx: Int32Array;
  /** exp(logit − max) of idx[j], parallel to idx */
  weight: Float64Array;
  /** candidate logits, for k-th selection */
  value: Float32Array;
}

let scratch: Scratch = { idx: new Int32Array(0), weight: new Float64Array(0), value: new Float32Array(0) };

/** Scratch arrays of at least `n` entries, reused across calls (valid until the next call). */
export function getScratch(n: number): Scratch {
  if (scratch.idx.length < n) scratch = { idx: new Int32Array(n), weight: new Float64Array(n), value: new Float32Array(n) };
  return scratch;
}

/**
 * The k-th largest of logits[idx[0..n)] (1 ≤ k ≤ n). Tokens with logit ≥ it are the top-k
 * (ties at the k-th value all kept, as vLLM's top-k does).
 */
export function kthLargest(logits: Float32Array, idx: Int32Array, n: number, k: number, value: Float32Array): number {
  for (let j = 0; j < n; j++) value[j] = logits[idx[j]!]!;
  // quickselect: position k-1 of value[0..n) sorted descending
  let lo = 0;
  let hi = n - 1;
  const target = k - 1;
  while (lo < hi) {
    const pivot = medianOf3(value[lo]!, value[(lo + hi) >>> 1]!, value[hi]!);
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (value[i]! > pivot) i++;
      while (value[j]! < pivot) j--;
      if (i <= j) {
        const t = value[i]!;
        value[i++] = value[j]!;
        value[j--] = t;
      }
    }
    // [lo, j] ≥ pivot ≥ [i, hi]; between them (j < x < i) == pivot
    if (target <= j) hi = j;
    else if (target >= i) lo = i;
    else break;
  }
  return value[target]!;
}

/**
 * Top-p cut. Candidates idx[0..n) with weights weight[0..n) (parallel); `mass` = p · Σ weight.
 * In the (logit desc, id asc) order a token is kept iff the weight of the tokens before it is
 * < mass (so the most likely token is always kept; vLLM's rule). Reorders idx/weight so the
 * kept tokens are idx[0..m) and returns m. Expected O(n).
 */
export function topPCut(logits: Float32Array, idx: Int32Array, weight: Float64Array, n: number, mass: number): number {
  let lo = 0;
  let hi = n;
  let before = 0; // weight of tokens ranked above idx[lo]; idx[0..lo) are kept
  while (lo < hi) {
    const p = partition(logits, idx, weight, lo, hi);
    let above = 0; // weight of idx[lo..p): tokens ranked above the pivot
    for (let j = lo; j < p; j++) above += weight[j]!;
    if (before + above >= mass) {
      hi = p; // the pivot and all after it are dropped; the cut lies above the pivot
    } else {
      before += above + weight[p]!; // everything above the pivot, and the pivot, are kept
      lo = p + 1;
    }
  }
  return lo;
}

const BUCKETS_PER_NAT = 8;
const hist = new Float64Array(512);

/**
 * Shrinks the candidates before kthLargest without changing top-k's result: buckets tokens
 * by (max − logit); tokens below the bucket where the count reaches k have ≥ k tokens
 * strictly above them, so top-k drops them. Sets their logits to −∞, returns the new count.
 */
export function topKPrefilter(logits: Float32Array, idx: Int32Array, n: number, max: number, k: number): number {
  hist.fill(0);
  const last = hist.length - 1;
  for (let j = 0; j < n; j++) {
    const b = Math.floor((max - logits[idx[j]!]!) * BUCKETS_PER_NAT);
    hist[b < last ? b : last]!++;
  }
  let count = 0;
  let cut = 0; // buckets < cut hold ≥ k tokens
  while (cut <= last && count < k) count += hist[cut++]!;
  if (cut > last) return n;
  return compactAbove(logits, idx, null, n, max, cut);
}

/**
 * Shrinks the candidates before topPCut without changing its result: buckets tokens by
 * (max − logit) in quarter nats; if the tokens above some bucket already hold ≥ `mass`, every
 * token at or below it is dropped by top-p (all those tokens rank above it). Sets dropped
 * tokens' logits to −∞, keeps idx/weight parallel, returns the new count. O(n).
 */
export function topPPrefilter(logits: Float32Array, idx: Int32Array, weight: Float64Array, n: number, max: number, mass: number): number {
  hist.fill(0);
  const last = hist.length - 1;
  for (let j = 0; j < n; j++) {
    const b = Math.floor((max - logits[idx[j]!]!) * BUCKETS_PER_NAT);
    hist[b < last ? b : last]! += weight[j]!;
  }
  let cum = 0;
  let cut = 0; // tokens in buckets < cut hold ≥ mass
  while (cut < last && cum < mass) cum += hist[cut++]!;
  if (cum < mass || cut >= last) return n;
  return compactAbove(logits, idx, weight, n, max, cut);
}

/** Keeps candidates in buckets < cut (order kept, weight parallel); the others' logits become −∞. */
function compactAbove(logits: Float32Array, idx: Int32Array, weight: Float64Array | null, n: number, max: number, cut: number): number {
  let kept = 0;
  for (let j = 0; j < n; j++) {
    const id = idx[j]!;
    if (Math.floor((max - logits[id]!) * BUCKETS_PER_NAT) < cut) {
      if (weight) weight[kept] = weight[j]!;
      idx[kept++] = id;
    } else {
      logits[id] = -Infinity;
    }
  }
  return kept;
}

/** (logit desc, id asc) */
function ranksAbove(logits: Float32Array, a: number, b: number): boolean {
  const x = logits[a]!;
  const y = logits[b]!;
  return x > y || (x === y && a < b);
}

/** Lomuto partition of idx/weight[lo..hi) around a middle pivot; returns the pivot's final position. */
function partition(logits: Float32Array, idx: Int32Array, weight: Float64Array, lo: number, hi: number): number {
  swap(idx, weight, (lo + hi) >>> 1, hi - 1);
  const pivot = idx[hi - 1]!;
  let store = lo;
  for (let j = lo; j < hi - 1; j++) {
    if (ranksAbove(logits, idx[j]!, pivot)) swap(idx, weight, j, store++);
  }
  swap(idx, weight, store, hi - 1);
  return store;
}

function swap(idx: Int32Array, weight: Float64Array, a: number, b: number): void {
  const t = idx[a]!;
  idx[a] = idx[b]!;
  idx[b] = t;
  const w = weight[a]!;
  weight[a] = weight[b]!;
  weight[b] = w;
}

function medianOf3(a: number, b: number, c: number): number {
  return a < b ? (b < c ? b : a < c ? c : a) : a < c ? a : b < c ? c : b;
}
