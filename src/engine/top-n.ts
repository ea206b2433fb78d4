// The N highest entries of a row, in O(vocab · log N) worst case and O(vocab) typically
// (most entries lose one comparison against the heap's weakest), never a full sort.
// Order: value desc, then id asc. NaN counts as −∞.

/**
 * Writes the ids of the top `n` values of `row` into ids[0..n) (best first) and returns how
 * many were written (min(n, row.length)). `heap` is scratch of at least n entries.
 */
export function topN(row: Float32Array, n: number, ids: Int32Array, heap: Int32Array = new Int32Array(n)): number {
  const k = Math.min(n, row.length);
  if (k <= 0) return 0;
  // min-heap by rank: heap[0] is the weakest of the best k seen so far
  let size = 0;
  for (let i = 0; i < row.length; i++) {
    if (size < k) {
      heap[size] = i;
      siftUp(row, heap, size++);
    } else if (better(row, i, heap[0]!)) {
      heap[0] = i;
      siftDown(row, heap, size);
    }
  }
  // pop weakest first into the tail of ids
  for (let out = k - 1; out >= 0; out--) {
    ids[out] = heap[0]!;
    heap[0] = heap[--size]!;
    siftDown(row, heap, size);
  }
  return k;
}

const val = (row: Float32Array, i: number): number => {
  const x = row[i]!;
  return x === x ? x : -Infinity;
};

/** whether token a ranks above token b (value desc, id asc) */
function better(row: Float32Array, a: number, b: number): boolean {
  const x = val(row, a);
  const y = val(row, b);
  return x > y || (x === y && a < b);
}

function siftUp(row: Float32Array, heap: Int32Array, at: number): void {
  while (at > 0) {
    const parent = (at - 1) >> 1;
    if (!better(row, heap[parent]!, heap[at]!)) return;
    swap(heap, parent, at);
    at = parent;
  }
}

function siftDown(row: Float32Array, heap: Int32Array, size: number): void {
  let at = 0;
  for (;;) {
    const l = 2 * at + 1;
    const r = l + 1;
    let weakest = at;
    if (l < size && better(row, heap[weakest]!, heap[l]!)) weakest = l;
    if (r < size && better(row, heap[weakest]!, heap[r]!)) weakest = r;
    if (weakest === at) return;
    swap(heap, at, weakest);
    at = weakest;
  }
}

function swap(heap: Int32Array, a: number, b: number): void {
  const t = heap[a]!;
  heap[a] = heap[b]!;
  heap[b] = t;
}
