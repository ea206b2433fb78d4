// KV-cache events for a prefix-cache-aware router (llm-d's KV-cache indexer, vLLM's event
// model): a block is "stored" when it enters the prefix cache, "removed" when it leaves it, and
// "all cleared" on a reset. Blocks are named by a hash a router computes from token ids alone,
// exactly as llm-d's token processor does (pkg/kvcache/kvblock/token_processor.go):
//   root  = low 64 bits (big-endian bytes 24..31) of sha256(cbor(hashSeed))
//   block = low 64 bits of sha256(cbor([parentHash, [token ids of the block], null]))
// with deterministic CBOR and the chain restarting at the root for each prompt. The engine's own
// prefix-cache index (block-hash.ts) is separate: it is local and never leaves the process.
import { createHash } from 'node:crypto';
import { encodeCbor } from './cbor.js';

export type KvEvent =
  | { readonly type: 'stored'; readonly hashes: bigint[]; readonly parentHash: bigint | null; readonly tokenIds: number[]; readonly blockSize: number }
  | { readonly type: 'removed'; readonly hashes: bigint[] }
  | { readonly type: 'cleared' };

function low64(bytes: Uint8Array): bigint {
  const digest = createHash('sha256').update(bytes).digest();
  return digest.readBigUInt64BE(24);
}

export function rootBlockHash(hashSeed: string): bigint {
  return low64(encodeCbor(hashSeed));
}

export function chainBlockHash(parent: bigint, tokenIds: readonly number[]): bigint {
  return low64(encodeCbor([parent, tokenIds, null]));
}

/** The hashes of a prompt's full blocks, as a router computes them. */
export function promptBlockHashes(tokenIds: readonly number[], blockSize: number, hashSeed = ''): bigint[] {
  const hashes: bigint[] = [];
  let parent = rootBlockHash(hashSeed);
  for (let start = 0; start + blockSize <= tokenIds.length; start += blockSize) {
    parent = chainBlockHash(parent, tokenIds.slice(start, start + blockSize));
    hashes.push(parent);
  }
  return hashes;
}

/** The block manager's side: names blocks as they are registered, queues the events of a step. */
export class KvEventRecorder {
  private readonly root: bigint;
  private readonly hashOf: BigUint64Array; // [numBlocks] router hash of a registered block
  private pending: KvEvent[] = [];

  constructor(numBlocks: number, readonly blockSize: number, hashSeed = '') {
    this.root = rootBlockHash(hashSeed);
    this.hashOf = new BigUint64Array(numBlocks);
  }

  /** Block b now holds tokens[start, start + blockSize) after parentBlock (−1: first block).
   *  `mapped`: b entered the prefix cache (an event); else it duplicates a cached block's content. */
  registered(b: number, parentBlock: number, tokens: ArrayLike<number>, start: number, mapped: boolean): void {
    const ids = Array.from({ length: this.blockSize }, (_, j) => tokens[start + j]!);
    const parent = parentBlock < 0 ? this.root : this.hashOf[parentBlock]!;
    const h = chainBlockHash(parent, ids);
    this.hashOf[b] = h;
    if (!mapped) return;
    const last = this.pending[this.pending.length - 1];
    // consecutive blocks of one sequence travel as one event, as vLLM sends them
    if (last?.type === 'stored' && last.hashes[last.hashes.length - 1] === parent) {
      last.hashes.push(h);
      last.tokenIds.push(...ids);
    } else {
      this.pending.push({ type: 'stored', hashes: [h], parentHash: parentBlock < 0 ? null : parent, tokenIds: ids, blockSize: this.blockSize });
    }
  }

  /** A cached block left the prefix cache (evicted for reuse). */
  removed(b: number): void {
    const h = this.hashOf[b]!;
    const last = this.pending[this.pending.length - 1];
    if (last?.type === 'removed') last.hashes.push(h);
    else this.pending.push({ type: 'removed', hashes: [h] });
  }

  cleared(): void {
    this.pending = [{ type: 'cleared' }];
  }

  /** The events since the last drain, in order. */
  drain(): KvEvent[] {
    const events = this.pending;
    this.pending = [];
    return events;
  }
}
