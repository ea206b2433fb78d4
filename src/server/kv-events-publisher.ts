// Publishes the engine's KV events over ZeroMQ in vLLM's wire format, for llm-d's precise
// prefix-cache scorer (pkg/kvcache/kvevents in llm-d-kv-cache-manager reads it):
//   PUB frames: [topic, sequence number (8 bytes, big-endian), msgpack payload]
//   payload:    [ts, [event…], data_parallel_rank]                       (vLLM's array-like EventBatch)
//   events:     ["BlockStored", [hash…], parent hash | nil, [token id…], block size, lora id, medium, lora name]
//               ["BlockRemoved", [hash…], medium]   ["AllBlocksCleared"]
// Hashes are uint64 (see src/engine/kv-events.ts for how a router computes them); medium is nil,
// which routers read as the primary tier. An optional ROUTER socket replays missed batches: a
// client sends [empty, start seq (8 bytes)] and gets [empty, seq, payload]… then [empty, −1, empty].
import { encode } from '@msgpack/msgpack';
import { Publisher, Router } from 'zeromq';
import type { EngineClient } from '../engine/client.js';
import type { KvEvent } from '../engine/kv-events.js';

export interface KvEventsPublisherOptions {
  /** `tcp://*:5557` binds (a wildcard binds, as vLLM does); `tcp://host:5557` connects */
  readonly endpoint: string;
  readonly topic: string;
  readonly replayEndpoint?: string;
  /** batches kept for replay */
  readonly bufferSteps?: number;
}

const END_SEQ = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);

export class KvEventsPublisher {
  private seq = 0n;
  private readonly queue: [Buffer, Uint8Array][] = [];
  private sending = false;
  private readonly replayBuffer: [Buffer, Uint8Array][] = [];
  private closed = false;

  private constructor(
    private readonly pub: Publisher,
    private readonly router: Router | undefined,
    private readonly opts: KvEventsPublisherOptions,
  ) {
    if (router) void this.serveReplays(router);
  }

  static async start(opts: KvEventsPublisherOptions): Promise<KvEventsPublisher> {
    const pub = new Publisher({ sendHighWaterMark: 100_000 });
    await attach(pub, opts.endpoint);
    let router: Router | undefined;
    if (opts.replayEndpoint) {
      router = new Router();
      await router.bind(opts.replayEndpoint);
    }
    return new KvEventsPublisher(pub, router, opts);
  }

  /** the address the PUB socket is bound or connected to (a wildcard port resolved) */
  get endpoint(): string {
    return this.pub.lastEndpoint ?? this.opts.endpoint;
  }

  /** Queues one batch (one engine step's events); batches go out in order. */
  publish(events: readonly KvEvent[], ts = Date.now() / 1000): void {
    if (this.closed || events.length === 0) return;
    const payload = encode([ts, events.map(wireEvent), 0], { useBigInt64: true });
    const seq = Buffer.alloc(8);
    seq.writeBigUInt64BE(this.seq++);
    this.queue.push([seq, payload]);
    this.replayBuffer.push([seq, payload]);
    if (this.replayBuffer.length > (this.opts.bufferSteps ?? 10_000)) this.replayBuffer.shift();
    void this.drain();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.pub.close();
    this.router?.close();
  }

  private async drain(): Promise<void> {
    if (this.sending) return;
    this.sending = true;
    try {
      while (this.queue.length > 0 && !this.closed) {
        const [seq, payload] = this.queue.shift()!;
        await this.pub.send([this.opts.topic, seq, payload]);
      }
    } catch (err) {
      if (!this.closed) console.error(`loom: KV events: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      this.sending = false;
    }
  }

  private async serveReplays(router: Router): Promise<void> {
    try {
      for await (const frames of router) {
        const [client, , start] = frames;
        if (!client || !start || start.length !== 8) continue;
        const from = start.readBigUInt64BE();
        for (const [seq, payload] of this.replayBuffer) {
          if (seq.readBigUInt64BE() >= from) await router.send([client, '', seq, payload]);
        }
        await router.send([client, '', END_SEQ, '']);
      }
    } catch (err) {
      if (!this.closed) console.error(`loom: KV events replay: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

/** vLLM's convention: bind where the address is a wildcard or local transport, else connect */
async function attach(pub: Publisher, endpoint: string): Promise<void> {
  if (endpoint.includes('*') || endpoint.includes('::') || endpoint.startsWith('ipc://') || endpoint.startsWith('inproc://')) await pub.bind(endpoint);
  else pub.connect(endpoint);
}

type Wire = (string | number | bigint | null | Wire)[];

function wireEvent(e: KvEvent): Wire {
  switch (e.type) {
    case 'stored':
      return ['BlockStored', e.hashes, e.parentHash, e.tokenIds, e.blockSize, null, null, null];
    case 'removed':
      return ['BlockRemoved', e.hashes, null];
    case 'cleared':
      return ['AllBlocksCleared'];
  }
}

/** Starts a publisher fed by every engine step; the first batch says the (new) cache is empty. */
export async function publishKvEvents(engine: EngineClient, opts: KvEventsPublisherOptions): Promise<KvEventsPublisher> {
  const publisher = await KvEventsPublisher.start(opts);
  publisher.publish([{ type: 'cleared' }]);
  engine.onStep((step) => {
    if (step.kvEvents) publisher.publish(step.kvEvents);
  });
  return publisher;
}
