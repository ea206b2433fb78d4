// `loom bench soak` against an in-process server: every kind of request gets the answer it
// expects, the samples carry the server's memory and KV figures, and the growth fit is a
// least-squares slope.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { runSoak, slope } from '../../src/bench/soak.js';
import { formatSoakReport } from '../../src/bench/soak-report.js';
import { WorkerEngineClient } from '../../src/engine/worker-client.js';
import { loadModel } from '../../src/model/load.js';
import { buildApp } from '../../src/server/app.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

describe('loom bench soak', () => {
  it('slope is the least-squares fit', () => {
    assert.equal(slope([0, 1, 2, 3], [1, 4, 7, 10]), 3);
    assert.equal(slope([0, 1, 2], [0, 2, 1]), 0.5);
    assert.ok(Number.isNaN(slope([1], [1])));
  });

  it('runs the mix against a server with no failures and reports memory over time', async () => {
    const path = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q8_0')!);
    const engine = await WorkerEngineClient.start({ model: path, kvCacheMemory: '16MiB' });
    const { app } = buildApp({
      engine,
      tokenizer: loadModel(path).tokenizer,
      options: { servedModelName: 'fixture', maxModelLen: engine.info.maxModelLen, maxPendingRequests: 64, slowClientTimeoutMs: 5_000, bodyLimitBytes: 1 << 20, apiKey: 'k' },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
      const r = await runSoak({ baseUrl, model: 'fixture', requests: 120, concurrency: 4, sampleEvery: 30, warmupShare: 0.2, maxTokens: 4, seed: 7, apiKey: 'k' });
      assert.equal(r.failures, 0, r.failureExamples.join('\n'));
      assert.equal(Object.values(r.counts).reduce((a, b) => a + b, 0), 120);
      assert.ok(Object.values(r.counts).every((n) => n > 0), JSON.stringify(r.counts));
      assert.deepEqual(r.samples.map((s) => s.requests), [0, 30, 60, 90, 120]);
      assert.ok(r.samples.every((s) => s.rssBytes > 2 ** 20 && s.heapUsedBytes > 2 ** 20), 'memory figures come from /metrics');
      assert.deepEqual(r.after, { kvCacheUsage: 0, running: 0, waiting: 0 });
      assert.ok(Number.isFinite(r.rssGrowthPer1k) && Number.isFinite(r.heapGrowthPer1k));
      assert.match(formatSoakReport(r), /growth after warm-up \(first 20%\), per 1,000 requests: RSS [+−]/);
    } finally {
      await app.close();
      await engine.close();
    }
  });
});
