// --kv-cache-dir behind the HTTP API: /metrics reports the disk as vLLM reports a KV
// connector's cache (external_prefix_cache_queries/hits) plus loom's kv_cache_dir_* counters,
// and POST /reset_prefix_cache empties the memory, the disk too only with reset_external=true.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { createEngineCore } from '../../src/engine/create.js';
import { InProcessEngineClient } from '../../src/engine/in-process-client.js';
import { loadModel } from '../../src/model/load.js';
import { buildApp } from '../../src/server/app.js';
import { advance } from '../../src/server/kv-cache-dir-metrics.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const PATH = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q8_0')!);
const BS = 16;
const dir = mkdtempSync(join(tmpdir(), 'loom-kvdir-http-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function start(kvCacheDir?: string) {
  const model = loadModel(PATH);
  const engine = new InProcessEngineClient(createEngineCore({ model: PATH, backend: 'reference', kvCacheMemory: '16MiB', blockSize: BS, ...(kvCacheDir && { kvCacheDir }) }, model));
  const { app } = buildApp({
    engine,
    tokenizer: model.tokenizer,
    options: { servedModelName: 'fixture', maxModelLen: engine.info.maxModelLen, maxPendingRequests: 16, slowClientTimeoutMs: 5_000, bodyLimitBytes: 1 << 20 },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return {
    url,
    engine,
    complete: async (prompt: number[]) => {
      const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fixture', prompt, max_tokens: 3, temperature: 0, ignore_eos: true }) });
      assert.equal(r.status, 200, await r.clone().text());
      return (await r.json()) as { choices: { text: string }[] };
    },
    /** the first sample of a metric in /metrics (undefined: absent) */
    metric: async (name: string): Promise<number | undefined> => {
      const text = await (await fetch(`${url}/metrics`)).text();
      const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
      return m ? Number(m[1]) : undefined;
    },
    close: async () => (await app.close(), await engine.close()),
  };
}

const P = Array.from({ length: 6 * BS + 5 }, (_, i) => ((i * 104729 + 7) % 200) + 5);
const kvFiles = (): number => readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith('.kv')).length;

describe('--kv-cache-dir over HTTP', () => {
  it('/metrics: the disk is the external prefix cache; the kv_cache_dir_* counters say what it did', async () => {
    const first = await start(dir);
    const computed = await first.complete(P);
    assert.equal(await first.metric('vllm:external_prefix_cache_queries_total'), P.length);
    assert.equal(await first.metric('loom:external_prefix_cache_hits_total'), 0);
    assert.ok((await first.metric('loom:kv_cache_dir_blocks_written_total'))! >= 6);
    assert.ok((await first.metric('loom:kv_cache_dir_bytes'))! > 0);
    assert.equal(await first.metric('loom:kv_cache_dir_max_bytes'), 8 * 2 ** 30);
    await first.close();

    const second = await start(dir); // a restart: the blocks are found on disk
    assert.ok((await second.metric('loom:kv_cache_dir_bytes'))! > 0, 'the bytes found at start');
    assert.deepEqual((await second.complete(P)).choices[0]!.text, computed.choices[0]!.text);
    assert.equal(await second.metric('vllm:external_prefix_cache_hits_total'), 6 * BS);
    assert.equal(await second.metric('loom:kv_cache_dir_blocks_read_total'), 6);
    assert.equal(await second.metric('vllm:prefix_cache_hits_total'), 0, 'nothing was in memory');
    await second.complete(P);
    assert.equal(await second.metric('vllm:prefix_cache_hits_total'), 6 * BS, 'in memory now');
    assert.equal(await second.metric('vllm:external_prefix_cache_hits_total'), 6 * BS);
    assert.equal(await second.metric('loom:kv_cache_dir_files_refused_total'), 0);
    await second.close();

    const plain = await start();
    assert.equal(await plain.metric('vllm:external_prefix_cache_queries_total'), 0);
    assert.equal(await plain.metric('loom:kv_cache_dir_bytes'), undefined, 'no directory, no kv_cache_dir series');
    await plain.close();
  });

  it("a counter advances by an engine's cumulative count, which a restarted engine starts again from zero", () => {
    assert.equal(advance(10, 4), 6);
    assert.equal(advance(3, 10), 3, 'after a restart: what the new engine counted');
    assert.equal(advance(5, 5), 0);
  });

  it('POST /reset_prefix_cache empties the memory; ?reset_external=true the directory too', async () => {
    const s = await start(dir);
    try {
      await s.complete(P); // found on disk (the first test's)
      const files = kvFiles();
      assert.ok(files >= 6);
      const reset = (query = '') => fetch(`${s.url}/reset_prefix_cache${query}`, { method: 'POST' });
      assert.equal((await reset()).status, 200);
      assert.equal(kvFiles(), files, 'the directory is left alone');
      await s.complete(P);
      assert.equal(await s.metric('vllm:external_prefix_cache_hits_total'), 2 * 6 * BS, 'found on disk again after the memory was emptied');
      assert.equal((await reset('?reset_external=true&reset_running_requests=false')).status, 200);
      assert.equal(kvFiles(), 0);
      const bad = await reset('?reset_external=maybe');
      assert.equal(bad.status, 400);
      assert.match(await bad.text(), /reset_external/);
    } finally {
      await s.close();
    }
  });
});
