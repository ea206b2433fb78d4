// The free KV blocks, handed out so that a sequence's blocks lie next to each other in memory.
// Decode attention reads every block of a sequence each step; on a CPU, scattered 16-token
// blocks stream at about half the rate of long runs (the hardware prefetcher follows runs,
// not block tables). So the pool prefers, for a sequence's next block, the one right after its
// last; and a sequence's first block is taken so as to leave room after it: block ids are
// ranked column by column in rows of `runway` blocks (0, runway, 2·runway, …, then 1,
// runway + 1, …) and the free block of lowest rank is taken first. Which blocks are free, and
// how many, is all the rest of the engine sees; the ids are only a placement.
// An indexed binary min-heap of ranks: take, takeIfFree(b) and release are O(log n).

/** blocks of room left after each sequence's first block while the cache is not crowded */
export const RUNWAY_BLOCKS = 32;

export class FreeBlocks {
  private readonly heap: Int32Array; // block ids, heap-ordered by rank
  private readonly pos: Int32Array;  // [numBlocks] index in heap, -1 when not free
  private readonly rank: Int32Array; // [numBlocks]
  private count = 0;

  constructor(readonly numBlocks: number, runway = RUNWAY_BLOCKS) {
    const width = Math.max(1, Math.min(runway, numBlocks));
    const rows = Math.ceil(numBlocks / width);
    this.heap = new Int32Array(numBlocks);
    this.pos = new Int32Array(numBlocks);
    this.rank = new Int32Array(numBlocks);
    for (let b = 0; b < numBlocks; b++) this.rank[b] = (b % width) * rows + Math.floor(b / width);
    // every block free: the array sorted by rank is a valid heap
    const byRank = Array.from({ length: numBlocks }, (_, b) => b).sort((a, b) => this.rank[a]! - this.rank[b]!);
    for (const b of byRank) {
      this.heap[this.count] = b;
      this.pos[b] = this.count++;
    }
  }

  get size(): number {
    return this.count;
  }

  /** the free block of lowest rank, taken; -1 when none is free */
  take(): number {
    return this.count === 0 ? -1 : this.remove(this.heap[0]!);
  }

  /** b, taken, if it is free; else -1 */
  takeIfFree(b: number): number {
    return b >= 0 && b < this.numBlocks && this.pos[b]! >= 0 ? this.remove(b) : -1;
  }

  release(b: number): void {
    if (this.pos[b]! >= 0) throw new Error(`FreeBlocks: block ${b} is already free`);
    this.heap[this.count] = b;
    this.pos[b] = this.count++;
    this.up(this.count - 1);
  }

  /** the free blocks, in no particular order */
  *[Symbol.iterator](): IterableIterator<number> {
    for (let i = 0; i < this.count; i++) yield this.heap[i]!;
  }

  private remove(b: number): number {
    const i = this.pos[b]!;
    const last = this.heap[--this.count]!;
    this.pos[b] = -1;
    if (last !== b) {
      this.heap[i] = last;
      this.pos[last] = i;
      this.down(i);
      this.up(this.pos[last]!);
    }
    return b;
  }

  private up(i: number): void {
    const h = this.heap, b = h[i]!, r = this.rank[b]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = h[parent]!;
      if (this.rank[p]! <= r) break;
      h[i] = p;
      this.pos[p] = i;
      i = parent;
    }
    h[i] = b;
    this.pos[b] = i;
  }

  private down(i: number): void {
    const h = this.heap, b = h[i]!, r = this.rank[b]!;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= this.count) break;
      if (child + 1 < this.count && this.rank[h[child + 1]!]! < this.rank[h[child]!]!) child++;
      const c = h[child]!;
      if (this.rank[c]! >= r) break;
      h[i] = c;
      this.pos[c] = i;
      i = child;
    }
    h[i] = b;
    this.pos[b] = i;
  }
}
