// A measuring aid for `bench scaleout`, not a production router (that is the inference
// extension's EPP): it binds a ZeroMQ SUB socket that replicas' KV events connect to, keeps
// each replica's set of cached block hashes, and says how many leading blocks of a prompt a
// replica holds, hashing the prompt as llm-d does (src/engine/kv-events.ts).
import { decode } from '@msgpack/msgpack';
import { Subscriber } from 'zeromq';
import { promptBlockHashes } from '../engine/kv-events.js';

export class KvRouterIndex {
  private readonly blocks = new Map<string, Set<bigint>>(); // replica → cached block hashes
  private readonly done: Promise<void>;
  eventsSeen = 0;

  private constructor(private readonly sub: Subscriber, readonly endpoint: string, private readonly blockSize: number, private readonly hashSeed: string) {
    this.done = this.read();
  }

  /** binds on a free loopback port; replicas publish with topic kv@REPLICA@MODEL */
  static async start(blockSize: number, hashSeed = ''): Promise<KvRouterIndex> {
    const sub = new Subscriber();
    await sub.bind('tcp://127.0.0.1:*');
    sub.subscribe('kv@');
    return new KvRouterIndex(sub, sub.lastEndpoint!, blockSize, hashSeed);
  }

  /** leading full blocks of `promptIds` cached on `replica` */
  cachedBlocks(replica: string, promptIds: readonly number[]): number {
    const held = this.blocks.get(replica);
    if (!held) return 0;
    let n = 0;
    for (const h of promptBlockHashes(promptIds, this.blockSize, this.hashSeed)) {
      if (!held.has(h)) break;
      n++;
    }
    return n;
  }

  async close(): Promise<void> {
    this.sub.close();
    await this.done.catch(() => undefined);
  }

  private async read(): Promise<void> {
    for await (const [topic, , payload] of this.sub) {
      const replica = topic!.toString().split('@')[1] ?? '';
      const held = this.blocks.get(replica) ?? new Set<bigint>();
      this.blocks.set(replica, held);
      const [, events] = decode(payload!, { useBigInt64: true }) as [number, unknown[][]];
      for (const e of events) {
        this.eventsSeen++;
        if (e[0] === 'BlockStored') for (const h of e[1] as bigint[]) held.add(BigInt.asUintN(64, h));
        else if (e[0] === 'BlockRemoved') for (const h of e[1] as bigint[]) held.delete(BigInt.asUintN(64, h));
        else if (e[0] === 'AllBlocksCleared') held.clear();
      }
    }
  }
}
