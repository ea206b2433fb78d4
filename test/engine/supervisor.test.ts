// Engine faults, injected with the test-only switch LOOM_TEST_FAULT: the worker throws,
// exits or hangs at step N. In-flight requests end with a 503 or a stream error event,
// /health is 503 only while a fresh engine starts, loom:engine_restarts_total counts it,
// and requests after recovery get llama.cpp's greedy text again. Past --max-engine-restarts
// the supervisor gives up.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { FAULT_ENV } from '../../src/engine/fault.js';
import { SupervisedEngineClient } from '../../src/engine/supervisor.js';
import type { SupervisorOptions } from '../../src/engine/supervisor.js';
import { loadModel } from '../../src/model/load.js';
import { buildApp } from '../../src/server/app.js';
import { GOLDEN_DIR, ggufFixturePath } from '../fixtures/index.js';
import { readGolden } from '../fixtures/golden.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';
import { waitUntil } from '../fixtures/wait.js';

const FIXTURE = 'qwen3-q8_0';
const path = () => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === FIXTURE)!);
const golden = () => readGolden(GOLDEN_DIR, FIXTURE).prompts[0]!;

async function startServer(fault: string, sup: Partial<SupervisorOptions> = {}) {
  const logs: string[] = [];
  let gaveUp: string | undefined;
  process.env[FAULT_ENV] = fault; // read by each worker as it starts
  const engine = await SupervisedEngineClient.start(
    { model: path(), backend: 'reference', kvCacheMemory: '32MiB' },
    { maxRestarts: 3, restartWindowMs: 60_000, backoffMs: 200, maxBackoffMs: 400, stepTimeoutMs: 60_000, log: (l) => logs.push(l), onGiveUp: (r) => (gaveUp = r), ...sup },
  );
  const { app } = buildApp({
    engine,
    tokenizer: loadModel(path()).tokenizer,
    options: { servedModelName: 'fixture', maxModelLen: engine.info.maxModelLen, maxPendingRequests: 64, slowClientTimeoutMs: 5_000, bodyLimitBytes: 1 << 20 },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const complete = (extra: object = {}) =>
    fetch(`${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fixture', prompt: golden().prompt, max_tokens: 32, temperature: 0, ignore_eos: true, ...extra }),
    });
  return { engine, base, complete, logs, gaveUp: () => gaveUp, close: async () => (await app.close(), await engine.close()) };
}

/** /health's statuses, each change once, until it is 200 (no window: a loaded machine reloads slowly) */
async function waitHealthy(base: string): Promise<number[]> {
  const seen: number[] = [];
  await waitUntil(async () => {
    const status = (await fetch(`${base}/health`)).status;
    if (seen.at(-1) !== status) seen.push(status);
    return status === 200;
  }, 'a healthy engine again', 120_000, 25);
  return seen;
}

describe('engine supervision', () => {
  for (const kind of ['throw', 'exit', 'hang'] as const) {
    it(`survives a worker that ${kind}s mid-request`, async () => {
      // 32 greedy tokens take ~33 steps: the first request finishes, the fault hits the second
      // the watchdog is short only where it is the point (a loaded CI machine has slow steps)
      const s = await startServer(`${kind}@45`, { stepTimeoutMs: kind === 'hang' ? 3_000 : 60_000 });
      try {
        const goldenText = loadModel(path()).tokenizer.decode(golden().tokens);
        const before = (await (await s.complete()).json()) as { choices: { text: string }[] };
        assert.equal(before.choices[0]!.text, goldenText);

        const [streamed, plain] = await Promise.all([s.complete({ stream: true }).then((r) => r.text()), s.complete()]);
        assert.equal(plain.status, 503);
        const err = (await plain.json()) as { error: { type: string; code: string; message: string } };
        assert.deepEqual([err.error.type, err.error.code], ['server_error', 'engine_unavailable']);
        assert.match(err.error.message, kind === 'hang' ? /did not finish a step within 3s/ : kind === 'exit' ? /exited \(code 70\)/ : /injected fault/);
        assert.match(streamed, /data: \{"error":\{"message":"[^"]+","type":"server_error"/, 'the stream ends with an error event');
        assert.match(streamed, /data: \[DONE\]\n\n$/);

        // the backoff (200 ms) and the model's reload keep it down for a moment, then it is up
        // (503 while it reloads, unless this test polls only after that: a loaded machine)
        assert.match((await waitHealthy(s.base)).join(' '), /^(503 )?200$/);
        const after = (await (await s.complete()).json()) as { choices: { text: string }[] };
        assert.equal(after.choices[0]!.text, goldenText, 'the fresh engine generates the same greedy text');
        const metrics = await (await fetch(`${s.base}/metrics`)).text();
        assert.match(metrics, /^loom:engine_restarts_total\{model_name="fixture"[^}]*\} 1$/m);
        assert.equal(s.gaveUp(), undefined);
        assert.ok(s.logs.some((l) => /starting a fresh engine/.test(l)) && s.logs.some((l) => /fresh engine is running/.test(l)), s.logs.join('\n'));
      } finally {
        await s.close();
      }
    });
  }

  it('gives up after --max-engine-restarts failures within the window', async () => {
    // a window of an hour: the two failures fall in it however slowly the engine reloads
    const s = await startServer('exit@1/all', { maxRestarts: 1, restartWindowMs: 3_600_000 });
    try {
      assert.equal((await s.complete()).status, 503);
      await waitHealthy(s.base);
      assert.equal((await s.complete()).status, 503);
      await waitUntil(() => s.gaveUp() !== undefined, 'the supervisor to give up');
      assert.match(s.gaveUp() ?? '', /2 engine failures within 3600s \(--max-engine-restarts 1\)/);
      assert.equal((await fetch(`${s.base}/health`)).status, 503);
    } finally {
      await s.close();
    }
  });
});
