// The prefix cache's block hash. Only an index: the block manager verifies the parent cid and the
// token ids of every hit, so a collision costs a cache hit, never wrong KV.

/** hash of a block's content given its parent's content id: any number in [0, 2^53) (injectable for tests) */
export type BlockHashFn = (parentCid: number, tokens: ArrayLike<number>, start: number, length: number) => number;

/** 53-bit hash: two murmur3 lanes over (parent cid lo/hi words, token ids) */
export function hashBlock(parentCid: number, tokens: ArrayLike<number>, start: number, length: number): number {
  let a = 0x9747b28c, b = 0x1b873593;
  const lo = parentCid >>> 0, hi = Math.floor(parentCid / 4294967296) >>> 0;
  a = mix(mix(a, lo), hi);
  b = mix(mix(b, hi ^ 0x5bd1e995), lo);
  for (let i = start; i < start + length; i++) {
    const t = tokens[i]! | 0;
    a = mix(a, t);
    b = mix(b, t ^ 0x27d4eb2f);
  }
  return (fmix(a ^ length) & 0x1fffff) * 4294967296 + fmix(b ^ length);
}

function mix(h: number, k: number): number {
  k = Math.imul(k, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  h ^= Math.imul(k, 0x1b873593);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
