// The engine behind its client: in a real worker thread, deltas stream in as they are
// made, unread deltas merge rather than drop, leaving a stream aborts the request and
// frees its blocks, and a dead worker ends every open request with an error.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Worker } from 'node:worker_threads';
import { after, before, describe, it } from 'node:test';
import { EngineDeadError } from '../../src/engine/request-stream.js';
import { WorkerEngineClient } from '../../src/engine/worker-client.js';
import { GOLDEN_DIR, ggufFixturePath } from '../fixtures/index.js';
import { readGolden } from '../fixtures/golden.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';
import { resolveSamplingParams, DEFAULT_SAMPLING_PARAMS } from '../../src/engine/sampling-params.js';

const FIXTURE = 'qwen3-q4_k';
const model = () => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === FIXTURE)!);
const start = () => WorkerEngineClient.start({ model: model(), backend: 'reference', kvCacheMemory: '32MiB' });

describe('WorkerEngineClient', () => {
  let client: WorkerEngineClient;
  before(async () => {
    client = await start();
  });
  after(() => client.close());

  it("streams llama.cpp's greedy tokens, a few at a time, with times", async () => {
    const g = readGolden(GOLDEN_DIR, FIXTURE).prompts[0]!;
    const stream = client.add('golden', g.promptIds, resolveSamplingParams({ temperature: 0, maxTokens: g.tokens.length, ignoreEos: true }));
    const tokens: number[] = [];
    const times: number[] = [];
    let deltas = 0;
    let finish: string | undefined;
    for await (const d of stream) {
      deltas++;
      tokens.push(...d.tokenIds);
      times.push(...d.times);
      finish ??= d.finishReason;
    }
    assert.deepEqual(tokens, g.tokens);
    assert.equal(finish, 'length');
    assert.ok(deltas > 1, 'more than one delta: output is incremental');
    assert.ok(times.every((t, i) => i === 0 || t >= times[i - 1]!));
  });

  it('merges deltas nobody read yet, dropping none', async () => {
    let finished = false;
    client.onStep((step) => {
      if (step.deltas.some((d) => d.id === 'unread' && d.finishReason)) finished = true;
    });
    const stream = client.add('unread', [5, 6, 7, 8], resolveSamplingParams({ temperature: 0, maxTokens: 12, ignoreEos: true }));
    while (!finished) await sleep(10); // all 12 steps' deltas arrive unread
    const all = [];
    for await (const d of stream) all.push(d);
    assert.equal(all.length, 1, 'one merged delta');
    assert.equal(all[0]!.tokenIds.length, 12);
    assert.equal(all[0]!.times.length, 12);
    assert.equal(all[0]!.finishReason, 'length');
  });

  it('leaving a stream aborts the request and frees its blocks', async () => {
    const stream = client.add('left', [9, 10, 11], resolveSamplingParams({ temperature: 0, maxTokens: 400, ignoreEos: true }));
    for await (const d of stream) {
      if (d.tokenIds.length > 0) break;
    }
    for (let i = 0; i < 100 && (client.stats?.kvCacheUsage ?? 1) > 0; i++) await sleep(10);
    assert.equal(client.stats?.kvCacheUsage, 0);
    assert.equal(client.stats?.numRunning, 0);
  });

  it('refuses bad parameters with an error delta and keeps serving', async () => {
    const bad = [];
    for await (const d of client.add('bad', [1, 2], { ...DEFAULT_SAMPLING_PARAMS, temperature: -1 })) bad.push(d);
    assert.match(bad[0]?.error ?? '', /temperature/);
    const ok = [];
    for await (const d of client.add('fine', [1, 2], resolveSamplingParams({ temperature: 0, maxTokens: 2, ignoreEos: true }))) ok.push(...d.tokenIds);
    assert.equal(ok.length, 2);
  });
});

describe('a dead engine worker', () => {
  it('ends open requests with an error and reports unhealthy', async () => {
    const client = await start();
    const stream = client.add('doomed', [3, 4, 5], resolveSamplingParams({ temperature: 0, maxTokens: 10_000, ignoreEos: true }));
    await (client as unknown as { worker: Worker }).worker.terminate();
    await assert.rejects(async () => {
      for await (const d of stream) assert.ok(d);
    }, EngineDeadError);
    assert.equal(client.healthy, false);
    await client.close();
  });
});
