// KV events as llm-d's router consumes them: deterministic CBOR per RFC 8949, block hashes a
// router computes from token ids alone (llm-d's token processor), and a real ZeroMQ subscriber
// that rebuilds the engine's cached-block set from vLLM's wire format and finds it equal to
// what the engine's own prefix cache holds, through evictions and a reset.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { decode } from '@msgpack/msgpack';
import { Subscriber } from 'zeromq';
import { encodeCbor } from '../../src/engine/cbor.js';
import { EngineCore } from '../../src/engine/engine.js';
import { InProcessEngineClient } from '../../src/engine/in-process-client.js';
import { promptBlockHashes, rootBlockHash } from '../../src/engine/kv-events.js';
import { resolveEngineConfig } from '../../src/engine/options.js';
import { referenceKernels } from '../../src/kernels/reference.js';
import { KvCache } from '../../src/model/kv-cache.js';
import { loadModel } from '../../src/model/load.js';
import { publishKvEvents } from '../../src/server/kv-events-publisher.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';
import { waitUntil } from '../fixtures/wait.js';
import { Rng } from '../../src/engine/rng.js';
import { resolveSamplingParams } from '../../src/engine/sampling-params.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('deterministic CBOR', () => {
  it('encodes as RFC 8949 Appendix A shows', () => {
    const cases: [Parameters<typeof encodeCbor>[0], string][] = [
      [0, '00'], [23, '17'], [24, '1818'], [100, '1864'], [1000, '1903e8'], [1000000, '1a000f4240'],
      [1000000000000, '1b000000e8d4a51000'], [18446744073709551615n, '1bffffffffffffffff'],
      ['', '60'], ['a', '6161'], ['IETF', '6449455446'], ['\u00fc', '62c3bc'],
      [[], '80'], [[1, 2, 3], '83010203'], [[1, [2, 3], [4, 5]], '8301820203820405'], [null, 'f6'],
      // RFC 8949 appendix A's negative integers (an image position's cache key is one)
      [-1, '20'], [-10, '29'], [-100, '3863'], [-1000, '3903e7'], [-2147483648, '3a7fffffff'],
    ];
    for (const [value, expected] of cases) assert.equal(hex(encodeCbor(value)), expected, String(value));
  });
});

describe('block hashes a router computes', () => {
  it("follow llm-d's token processor: sha256 over CBOR [parent, tokens, null], low 64 bits", () => {
    // the bytes written out by hand: 0x83, parent as a uint64 (0x1b + 8 bytes), array(2) of 1 and 300, null
    const root = rootBlockHash('');
    const parent = Buffer.alloc(8);
    parent.writeBigUInt64BE(root);
    const bytes = Buffer.concat([Buffer.from([0x83, 0x1b]), parent, Buffer.from([0x82, 0x01, 0x19, 0x01, 0x2c, 0xf6])]);
    const expected = createHash('sha256').update(bytes).digest().readBigUInt64BE(24);
    assert.deepEqual(promptBlockHashes([1, 300, 7], 2), [expected], 'one full block; the partial one is not hashed');
    assert.equal(root, createHash('sha256').update(Buffer.from([0x60])).digest().readBigUInt64BE(24), 'root: sha256 of CBOR ""');
    assert.notEqual(rootBlockHash('42'), root, 'the seed changes every hash');
  });
});

describe('KV events over ZeroMQ', () => {
  const fixture = GGUF_FIXTURES.find((f) => f.name === 'llama-q8_0')!;
  const model = loadModel(ggufFixturePath(fixture));
  const blockSize = 4;
  // 24 blocks: the prompts below need more, so older blocks are evicted and reported removed
  const config = resolveEngineConfig({ model: '', kvCacheMemory: 24 * blockSize * KvCache.bytesPerToken(model.config, 'f16'), blockSize, maxModelLen: 24 * blockSize, kvEvents: { hashSeed: 'loom' } }, model.config, [...model.tokenizer.stopIds]);
  const client = new InProcessEngineClient(new EngineCore(model, referenceKernels, config));
  after(() => client.close());

  it('a subscriber rebuilds exactly the blocks the engine has cached', async () => {
    assert.ok(config.numBlocks <= 24 && config.numBlocks >= 20, `cache of ${config.numBlocks} blocks`);
    const publisher = await publishKvEvents(client, { endpoint: 'tcp://127.0.0.1:*', topic: 'kv@replica-0@fixture' });
    const sub = new Subscriber();
    sub.connect(publisher.endpoint);
    sub.subscribe('kv@');
    // closed however the test ends: an open socket would keep the test process alive
    let reader: Promise<void> | undefined;
    try {
      // batches published so far (the publisher's first says the cache is empty), and the last
      // one the subscriber has read: the subscriber is up to date when it has read them all
      let published = 1;
      client.onStep((step) => {
        if (step.kvEvents) published++;
      });
      const held = new Set<bigint>();
      let removed = 0;
      let lastSeq = -1n;
      let clears = 0;
      /** a reset of the prefix cache, once the subscriber has read its AllBlocksCleared and all before it */
      const reset = async () => {
        const before = clears;
        assert.ok(await client.resetPrefixCache());
        await waitUntil(() => clears > before && lastSeq === BigInt(published - 1), 'the subscriber to read the reset');
      };
      reader = (async () => {
        for await (const [topic, seq, payload] of sub) {
          assert.equal(topic!.toString(), 'kv@replica-0@fixture');
          const s = seq!.readBigUInt64BE();
          assert.ok(s > lastSeq, 'sequence numbers increase');
          lastSeq = s;
          const [ts, events, rank] = decode(payload!, { useBigInt64: true }) as [number, unknown[][], number];
          assert.ok(ts > 1.7e9 && rank === 0);
          for (const e of events) {
            if (e[0] === 'BlockStored') {
              const [, hashes, , tokenIds, size] = e as [string, bigint[], bigint | null, number[], number];
              assert.equal(size, blockSize);
              assert.equal(tokenIds.length, hashes.length * blockSize);
              for (const h of hashes) held.add(BigInt.asUintN(64, h));
            } else if (e[0] === 'BlockRemoved') {
              for (const h of e[1] as bigint[]) removed++, assert.ok(held.delete(BigInt.asUintN(64, h)), 'a removed block was stored before');
            } else if (e[0] === 'AllBlocksCleared') held.clear(), clears++;
            else assert.fail(`unknown event ${String(e[0])}`);
          }
        }
      })();

      // PUB drops what is sent before the subscription arrives (slow joiner): requests until the
      // subscriber reads something, then a reset, after which it has seen every event there is
      const vocab = model.config.vocabSize;
      const warmRng = new Rng(99);
      let warm = 0;
      await waitUntil(async () => {
        const prompt = Array.from({ length: 2 * blockSize }, () => Math.floor(warmRng.next() * vocab));
        for await (const _ of client.add(`warm-${warm++}`, prompt, resolveSamplingParams({ temperature: 0, maxTokens: 1, ignoreEos: true })));
        assert.ok(await client.resetPrefixCache()); // nothing stored before the subscriber sees it is ever evicted
        return lastSeq >= 0n;
      }, 'the subscription to reach the publisher', 120_000, 50);
      await reset();
      assert.equal(held.size, 0);
      const rng = new Rng(7);

      const stems = Array.from({ length: 3 }, () => Array.from({ length: 24 }, () => Math.floor(rng.next() * vocab)));
      const prompts = Array.from({ length: 12 }, (_, i) => [...stems[i % 3]!, ...Array.from({ length: 4 + Math.floor(rng.next() * 12) }, () => Math.floor(rng.next() * vocab))]);
      const settle = async () => {
        await waitUntil(() => lastSeq === BigInt(published - 1), 'the subscriber to read every published batch');
        for (const p of prompts) {
          // the engine's own index says how many full blocks of p it holds; the router's hashes of
          // those blocks must be exactly the ones the subscriber holds
          const cachedBlocks = client.engine.blocks.findCachedPrefix([...p, 0]).length;
          const hashes = promptBlockHashes(p, blockSize, 'loom');
          for (let i = 0; i < hashes.length; i++) {
            assert.equal(held.has(hashes[i]!), i < cachedBlocks, `prompt ${prompts.indexOf(p)}, block ${i}: cached ${i < cachedBlocks}`);
          }
        }
      };
      for (let round = 0; round < 2; round++) {
        for (const [i, p] of prompts.entries()) {
          for await (const _ of client.add(`r${round}-${i}`, p, resolveSamplingParams({ temperature: 0, maxTokens: 3, ignoreEos: true })));
        }
        await settle();
      }
      assert.ok(held.size > 0);
      assert.ok(removed > 0, 'the cache was small enough for evictions');
      await reset();
      assert.equal(held.size, 0, 'a reset clears every block');
    } finally {
      sub.close();
      await publisher.close();
      await reader?.catch(() => undefined);
    }
  });
});
