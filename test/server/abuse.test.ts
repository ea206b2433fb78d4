// What careless and hostile clients can do, kept in the suite (seeded, bounded): hundreds
// of mutated bodies per endpoint (never a 5xx, always OpenAI's error shape, healthy after),
// a disconnect storm (nothing left running or waiting, the KV cache back to its baseline),
// overload past --max-pending-requests (429s and nothing more in flight), and a slow reader
// and a slow sender that other clients do not wait for.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Rng } from '../../src/engine/rng.js';
import { WorkerEngineClient } from '../../src/engine/worker-client.js';
import { EngineGate } from '../fixtures/engine-gate.js';
import { loadModel } from '../../src/model/load.js';
import { buildApp } from '../../src/server/app.js';
import type { ServerContext } from '../../src/server/context.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const path = () => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q8_0')!);
const MAX_PENDING = 8;
let engine: WorkerEngineClient;
let ctx: ServerContext;
let base = '';
let port = 0;
let close: () => Promise<void>;

const post = (p: string, body: string, signal?: AbortSignal) => fetch(`${base}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal });

async function gauges(): Promise<{ running: number; waiting: number; kv: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const get = (name: string) => Number(new RegExp(`^vllm:${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1]);
  return { running: get('num_requests_running'), waiting: get('num_requests_waiting'), kv: get('kv_cache_usage_perc') };
}

async function settled(): Promise<{ running: number; waiting: number; kv: number }> {
  let g = await gauges();
  for (let i = 0; i < 100 && (g.running !== 0 || g.waiting !== 0 || g.kv !== 0 || ctx.inFlight !== 0); i++) {
    await sleep(20);
    g = await gauges();
  }
  return g;
}

// ---- the fuzzer: valid bodies, mutated a few fields at a time ----
const WEIRD: unknown[] = [null, true, false, 0, -1, 1, 1.5, -0.5, 2 ** 31, -(2 ** 53), 1e308, '', 'x', '\u0000\ud800', '😀'.repeat(50), [], [1, 2], [-3], [[1]], [2 ** 40], ['a', 7], {}, { a: 1 }, { '1': 1e9 }, { role: 'user' }];
const BASES: Record<string, object> = {
  '/v1/completions': { model: 'fixture', prompt: 'Once upon a time', max_tokens: 4, temperature: 0.7, seed: 1, n: 2, stop: ['x'], logprobs: 2, logit_bias: { '5': 3 } },
  '/v1/chat/completions': { model: 'fixture', messages: [{ role: 'user', content: 'Hi' }], max_completion_tokens: 4, logprobs: true, top_logprobs: 2, stream: false },
  '/generate': { prompt: 'Once upon', max_tokens: 4, temperature: 0.5, top_k: 5, return_logprob: true },
  '/tokenize': { model: 'fixture', prompt: 'hello there' },
  '/detokenize': { model: 'fixture', tokens: [5, 6, 7] },
};
const FIELDS = ['model', 'prompt', 'messages', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'top_k', 'min_p', 'n', 'stop', 'stop_token_ids', 'seed', 'presence_penalty', 'frequency_penalty', 'repetition_penalty', 'logit_bias', 'logprobs', 'top_logprobs', 'echo', 'ignore_eos', 'stream', 'stream_options', 'prompt_logprobs', 'best_of', 'suffix', 'min_tokens', 'input_ids', 'tokens', 'add_special_tokens', 'return_logprob', 'skip_special_tokens', 'unknown_field'];

function mutate(rng: Rng, baseBody: object): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng.next() * xs.length)]!;
  const roll = rng.next();
  if (roll < 0.05) return JSON.stringify(baseBody).slice(0, Math.floor(rng.next() * 40)); // truncated JSON
  if (roll < 0.08) return JSON.stringify(pick(WEIRD)); // not an object
  const body: Record<string, unknown> = structuredClone(baseBody) as Record<string, unknown>;
  const edits = 1 + Math.floor(rng.next() * 3);
  for (let e = 0; e < edits; e++) {
    const field = rng.next() < 0.7 ? pick(Object.keys(body).length ? Object.keys(body) : FIELDS) : pick(FIELDS);
    if (rng.next() < 0.15) delete body[field];
    else body[field] = pick(WEIRD);
  }
  // keep the valid ones short: a random max_tokens ≤ 8 when it is a sane number
  for (const k of ['max_tokens', 'max_completion_tokens']) if (typeof body[k] === 'number' && (body[k] as number) > 8 && (body[k] as number) < 2 ** 31) body[k] = 8;
  return JSON.stringify(body);
}

/** OpenAI's {"error": {message, type, param, code}}, or LMDeploy's flat {"object": "error", …} (or FastAPI's 422) on /generate */
function assertOpenAIError(status: number, text: string, what: string, lmdeploy = false): void {
  const body = JSON.parse(text) as { object?: unknown; error?: Record<string, unknown>; detail?: unknown } & Record<string, unknown>;
  // LMDeploy (FastAPI) answers a body of the wrong types with 422 {"detail": [{type, loc, msg, input}]}
  if (lmdeploy && status === 422) {
    const d = (body.detail as Record<string, unknown>[] | undefined)?.[0];
    assert.ok(d && typeof d.type === 'string' && Array.isArray(d.loc) && typeof d.msg === 'string', `422 not in FastAPI's shape for ${what}: ${text}`);
    return;
  }
  const e = lmdeploy && body.object === 'error' ? body : body.error;
  assert.ok(e && typeof e.message === 'string' && e.message.length > 0 && typeof e.type === 'string', `${status} not in the error shape for ${what}: ${text}`);
  assert.ok('param' in e && 'code' in e, `param/code missing for ${what}: ${text}`);
  assert.doesNotMatch(e.message as string, /\n\s+at /, 'no stack traces');
}

describe('server under abuse', () => {
  let gate: EngineGate;
  before(async () => {
    engine = await WorkerEngineClient.start({ model: path(), kvCacheMemory: '16MiB', maxNumSeqs: 16 });
    gate = new EngineGate(engine); // admission tests hold it (test/fixtures/engine-gate.ts)
    const built = buildApp({
      engine: gate.client,
      tokenizer: loadModel(path()).tokenizer,
      options: { servedModelName: 'fixture', maxModelLen: engine.info.maxModelLen, maxPendingRequests: MAX_PENDING, slowClientTimeoutMs: 2_000, bodyLimitBytes: 1 << 20 },
    });
    ctx = built.ctx;
    await built.app.listen({ host: '127.0.0.1', port: 0 });
    port = (built.app.server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
    close = async () => (await built.app.close(), await engine.close());
  });
  after(() => close());

  for (const [endpoint, baseBody] of Object.entries(BASES)) {
    it(`200 mutated bodies to ${endpoint}: no 5xx, every error in OpenAI's shape`, async () => {
      const rng = new Rng(endpoint.length * 7919);
      const statuses = new Map<number, number>();
      for (let batch = 0; batch < 200 / MAX_PENDING; batch++) {
        const bodies = Array.from({ length: MAX_PENDING }, () => mutate(rng, baseBody));
        await Promise.all(
          bodies.map(async (b) => {
            const r = await post(endpoint, b);
            const text = await r.text();
            statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
            assert.ok(r.status < 500, `${r.status} for ${b}: ${text}`);
            if (r.status >= 400) assertOpenAIError(r.status, text, b, endpoint === '/generate');
            else assert.doesNotMatch(text, /data: \{"error":|"type":"server_error"/, `a stream failed for ${b}`); // an error event in vLLM's shape (/v1) or LMDeploy's
          }),
        );
      }
      // (/generate answers a body of the wrong types with FastAPI's 422, as LMDeploy)
      const refused = (statuses.get(400) ?? 0) + (statuses.get(422) ?? 0);
      assert.ok((statuses.get(200) ?? 0) >= 5 && refused > 50, `a mix of accepted and refused: ${JSON.stringify([...statuses])}`);
      assert.equal((await fetch(`${base}/health`)).status, 200);
      assert.deepEqual(await settled(), { running: 0, waiting: 0, kv: 0 });
    });
  }

  it('a disconnect storm leaves nothing running or waiting and the KV cache at its baseline', async () => {
    const rng = new Rng(4242);
    // streams long enough (most of the fixture's 512 positions) that most are still running
    // when they are cut (the client shares the server's thread, so it can lag the engine)
    const body = (i: number) => JSON.stringify({ model: 'fixture', prompt: `story ${i}: once`, max_tokens: 480, temperature: 0.8, seed: i, ignore_eos: true, stream: true, n: i % 6 === 0 ? 2 : 1 });
    let cut = 0;
    let cutAfterHeaders = 0;
    const counters = async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      const get = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0); // a histogram appears with its first observation
      return { aborts: get(/^vllm:request_success_total\{[^}]*finished_reason="abort"[^}]*\} (\S+)$/m), lengths: get(/^vllm:request_success_total\{[^}]*finished_reason="length"[^}]*\} (\S+)$/m), e2e: get(/^vllm:e2e_request_latency_seconds_count\{[^}]*\} (\S+)$/m), prompt: get(/^vllm:prompt_tokens_total\{[^}]*\} (\S+)$/m) };
    };
    const before = await counters();
    for (let wave = 0; wave < 35; wave++) {
      await Promise.all(
        Array.from({ length: 6 }, async (_, k) => {
          const controller = new AbortController();
          const chunksBeforeCut = Math.floor(rng.next() * 6); // 0: cut before any token
          try {
            const r = await post('/v1/completions', body(wave * 6 + k), controller.signal);
            const reader = r.body!.getReader();
            for (let c = 0; c < chunksBeforeCut; c++) if ((await reader.read()).done) return;
            controller.abort();
            cut++;
            if (r.status === 200) cutAfterHeaders++;
          } catch {
            cut++; // aborted before the response
          }
        }),
      );
    }
    assert.ok(cut > 150, `${cut} streams cut`);
    assert.deepEqual(await settled(), { running: 0, waiting: 0, kv: 0 });
    // every cut stream is counted once as finished, with its latency and prompt tokens: as an
    // abort, or at its length when the engine finished it before the disconnect reached it.
    // How many are which depends on how far the client (on the server's thread) lags the
    // engine, which a loaded machine changes (from most aborts to a third): only that some
    // disconnects did reach the engine as aborts is asserted, not a share
    const end = await counters();
    const [aborts, lengths] = [end.aborts - before.aborts, end.lengths - before.lengths];
    assert.ok(aborts + lengths >= cutAfterHeaders && aborts > 0, `${aborts} aborts and ${lengths} finished at their length for ${cutAfterHeaders} streams cut`);
    assert.ok(end.e2e - before.e2e >= cutAfterHeaders && end.prompt > before.prompt, JSON.stringify({ before, end }));
    assert.equal(ctx.inFlight, 0);
    assert.equal((await post('/v1/completions', JSON.stringify({ model: 'fixture', prompt: 'hi', max_tokens: 3 }))).status, 200);
  });

  it(`overload past --max-pending-requests (${MAX_PENDING}) gets 429s, and never more in flight`, async () => {
    let most = 0;
    let refused = 0;
    gate.hold();
    const watch = setInterval(() => (most = Math.max(most, ctx.inFlight)), 1);
    const pending = Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const r = await post('/v1/completions', JSON.stringify({ model: 'fixture', prompt: `p${i}`, max_tokens: 480, ignore_eos: true }));
        if (r.status === 429) refused++;
        const text = await r.text();
        if (r.status === 429) {
          assertOpenAIError(429, text, 'overload');
          assert.match(text, /"type":"Too Many Requests","param":null,"code":429/);
        }
        return r.status;
      }),
    );
    // every request admitted or refused (or 10 s), then the admitted ones run
    for (const deadline = Date.now() + 10_000; refused + ctx.inFlight < 40 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 2));
    gate.release();
    const results = await pending;
    clearInterval(watch);
    assert.equal(results.filter((s) => s === 429).length, 40 - MAX_PENDING, `statuses ${results.join(',')}`);
    assert.ok(results.every((s) => s === 200 || s === 429), `statuses ${results.join(',')}`);
    assert.ok(most <= MAX_PENDING, `${most} in flight`);
    assert.deepEqual(await settled(), { running: 0, waiting: 0, kv: 0 });
  });

  it('a slow reader and a slow sender do not hold up other clients', async () => {
    // a stream that is never read: its socket stays paused
    const reader = connect(port, '127.0.0.1');
    const long = JSON.stringify({ model: 'fixture', prompt: 'read me slowly', max_tokens: 400, ignore_eos: true, stream: true, logprobs: 5 });
    reader.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(long)}\r\n\r\n${long}`);
    reader.pause();
    // a body sent a byte every 50 ms
    const slowBody = JSON.stringify({ model: 'fixture', prompt: 'slow', max_tokens: 2 });
    const sender = connect(port, '127.0.0.1');
    sender.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${slowBody.length}\r\n\r\n`);
    let sent = 0;
    const drip = setInterval(() => sent < slowBody.length && sender.write(slowBody[sent++]!), 50);
    try {
      await sleep(100);
      for (let i = 0; i < 10; i++) {
        const r = await post('/v1/completions', JSON.stringify({ model: 'fixture', prompt: `quick ${i}`, max_tokens: 4 }));
        assert.equal(r.status, 200);
        await r.text();
      }
      assert.ok(sent < slowBody.length, 'the others finished while the slow sender was still sending');
      assert.ok(!reader.destroyed, 'and while the slow reader was still connected');
    } finally {
      clearInterval(drip);
      reader.destroy();
      sender.destroy();
    }
    assert.deepEqual(await settled(), { running: 0, waiting: 0, kv: 0 });
  });
});
