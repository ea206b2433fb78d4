// The server as users meet it: driven by the official `openai` client (and raw HTTP where
// the client hides what we check), on a fixture model whose greedy tokens llama.cpp wrote.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { WorkerEngineClient } from '../../src/engine/worker-client.js';
import { loadModel } from '../../src/model/load.js';
import { buildApp } from '../../src/server/app.js';
import type { ServerOptions } from '../../src/server/context.js';
import { GOLDEN_DIR, ggufFixturePath } from '../fixtures/index.js';
import { readGolden } from '../fixtures/golden.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const FIXTURE = 'qwen3-q8_0'; // ChatML template, byte-level BPE
const MODEL = 'fixture';
const path = () => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === FIXTURE)!);

async function startServer(overrides: Partial<ServerOptions> = {}) {
  const engine = await WorkerEngineClient.start({ model: path(), backend: 'reference', kvCacheMemory: '32MiB' });
  const { app } = buildApp({
    engine,
    tokenizer: loadModel(path()).tokenizer,
    options: { servedModelName: MODEL, maxModelLen: engine.info.maxModelLen, maxPendingRequests: 64, slowClientTimeoutMs: 5_000, bodyLimitBytes: 1 << 20, ...overrides },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: overrides.apiKey ?? 'none', maxRetries: 0 });
  return { engine, app, port, client, close: async () => (await app.close(), await engine.close()) };
}

type Server = Awaited<ReturnType<typeof startServer>>;
// vLLM extensions the openai client passes through in the body
const greedy = { temperature: 0, ignore_eos: true } as Record<string, unknown>;

describe('OpenAI API through the openai client', () => {
  let s: Server;
  const golden = () => readGolden(GOLDEN_DIR, FIXTURE).prompts[0]!;
  const goldenText = () => loadModel(path()).tokenizer.decode(golden().tokens);
  before(async () => {
    s = await startServer();
  });
  after(() => s.close());

  it('completions: llama.cpp greedy text, usage', async () => {
    const r = await s.client.completions.create({ model: MODEL, prompt: golden().prompt, max_tokens: 32, ...greedy });
    assert.equal(r.choices[0]!.text, goldenText());
    assert.equal(r.choices[0]!.finish_reason, 'length');
    assert.deepEqual(r.usage && [r.usage.prompt_tokens, r.usage.completion_tokens], [golden().promptIds.length, 32]);
  });

  it('completions streaming: the same text in pieces, usage last', async () => {
    const stream = await s.client.completions.create({ model: MODEL, prompt: golden().prompt, max_tokens: 32, stream: true, stream_options: { include_usage: true }, ...greedy });
    let text = '';
    let pieces = 0;
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      if (chunk.choices[0]) {
        text += chunk.choices[0].text;
        pieces++;
      }
      usage = chunk.usage ?? usage;
    }
    assert.equal(text, goldenText());
    assert.ok(pieces > 5);
    assert.equal(usage?.completion_tokens, 32);
  });

  it('stop strings end the text before them, streaming or not', async () => {
    const full = goldenText();
    const stop = full.slice(20, 24);
    const cut = full.indexOf(stop);
    const r = await s.client.completions.create({ model: MODEL, prompt: golden().prompt, max_tokens: 32, stop: [stop], ...greedy });
    assert.equal(r.choices[0]!.text, full.slice(0, cut));
    assert.equal(r.choices[0]!.finish_reason, 'stop');
    const stream = await s.client.completions.create({ model: MODEL, prompt: golden().prompt, max_tokens: 32, stop, stream: true, ...greedy });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    assert.equal(text, full.slice(0, cut));
  });

  it('chat: template applied, streamed as role, content and finish chunks', async () => {
    const messages = [{ role: 'user' as const, content: 'Say something.' }];
    const whole = await s.client.chat.completions.create({ model: MODEL, messages, max_tokens: 10, ...greedy });
    assert.equal(whole.choices[0]!.message.role, 'assistant');
    assert.equal(whole.choices[0]!.finish_reason, 'length');
    const stream = await s.client.chat.completions.create({ model: MODEL, messages, max_tokens: 10, stream: true, ...greedy });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
    assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, 'length');
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), whole.choices[0]!.message.content);
    const tokenized = await fetch(`http://127.0.0.1:${s.port}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages }) });
    const ids = ((await tokenized.json()) as { tokens: number[] }).tokens;
    assert.equal(whole.usage?.prompt_tokens, ids.length);
    const text = loadModel(path()).tokenizer.decode(ids, { skipSpecial: false });
    assert.equal(text, '<|im_start|>user\nSay something.<|im_end|>\n<|im_start|>assistant\n');
  });

  it('n > 1 and logprobs', async () => {
    const r = await s.client.completions.create({ model: MODEL, prompt: 'hello', max_tokens: 5, n: 3, temperature: 1, seed: 3, logprobs: 2 });
    assert.equal(r.choices.length, 3);
    for (const c of r.choices) {
      assert.equal(c.logprobs!.tokens!.length, 5);
      assert.ok(c.logprobs!.token_logprobs!.every((lp) => lp <= 0));
      assert.ok(c.logprobs!.top_logprobs!.every((top) => Object.keys(top).length <= 2));
    }
    const chat = await s.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, logprobs: true, top_logprobs: 2, ...greedy });
    const content = chat.choices[0]!.logprobs!.content!;
    assert.equal(content.length, 4);
    for (const t of content) {
      assert.equal(t.top_logprobs.length, 2);
      assert.ok(t.top_logprobs[0]!.logprob >= t.top_logprobs[1]!.logprob);
      assert.equal(t.top_logprobs[0]!.logprob, t.logprob, 'greedy: the chosen token is the top one');
    }
  });

  it('echo with logprobs reports the prompt tokens too; prompt_logprobs as vLLM', async () => {
    const g = golden();
    const r = await s.client.completions.create({ model: MODEL, prompt: g.promptIds, max_tokens: 2, echo: true, logprobs: 1, ...greedy });
    const lp = r.choices[0]!.logprobs!;
    assert.equal(lp.tokens!.length, g.promptIds.length + 2);
    assert.equal(lp.token_logprobs![0], null);
    assert.ok(lp.token_logprobs!.slice(1).every((x) => typeof x === 'number' && x <= 0));
    assert.ok(r.choices[0]!.text.startsWith(loadModel(path()).tokenizer.decode(g.promptIds, { skipSpecial: false })));
    const v = (await s.client.completions.create({ model: MODEL, prompt: g.promptIds, max_tokens: 1, ...greedy, prompt_logprobs: 0 } as never)) as unknown as {
      choices: { prompt_logprobs: (Record<string, { logprob: number }> | null)[] }[];
    };
    const plp = v.choices[0]!.prompt_logprobs;
    assert.equal(plp.length, g.promptIds.length);
    assert.equal(plp[0], null);
    assert.equal(plp[1]![String(g.promptIds[1])]!.logprob, lp.token_logprobs![1]);
  });

  it('errors surface as the client’s typed errors', async () => {
    await assert.rejects(s.client.completions.create({ model: 'nope', prompt: 'x' }), OpenAI.NotFoundError);
    await assert.rejects(s.client.completions.create({ model: MODEL, prompt: 'x', max_tokens: 'many' as unknown as number }), (e: unknown) => {
      assert.ok(e instanceof OpenAI.BadRequestError);
      assert.equal((e.error as { param?: string }).param, 'max_tokens');
      return true;
    });
    await assert.rejects(s.client.completions.create({ model: MODEL, prompt: 'x', max_tokens: 100_000 }), /maximum context length/);
    // vLLM accepts fields it does not know (and logs them): see test/server/routes/openai-conformance.test.ts
    await assert.rejects(s.client.completions.create({ model: MODEL, prompt: 'x', temperature: 7 }), OpenAI.BadRequestError);
  });

  it('raw HTTP: invalid JSON, oversized body, unknown route, health, metrics', async () => {
    const post = (p: string, body: string) => fetch(`http://127.0.0.1:${s.port}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const bad = await post('/v1/completions', '{"model": ');
    assert.equal(bad.status, 400);
    assert.ok(((await bad.json()) as { error: { message: string } }).error.message);
    assert.equal((await post('/v1/completions', JSON.stringify({ model: MODEL, prompt: 'x'.repeat(2 << 20) }))).status, 413);
    assert.equal((await fetch(`http://127.0.0.1:${s.port}/nope`)).status, 404);
    assert.equal((await fetch(`http://127.0.0.1:${s.port}/health`)).status, 200);
    const metrics = await (await fetch(`http://127.0.0.1:${s.port}/metrics`)).text();
    for (const name of ['time_to_first_token_seconds', 'inter_token_latency_seconds', 'e2e_request_latency_seconds', 'request_queue_time_seconds', 'num_requests_running', 'kv_cache_usage_perc', 'generation_tokens_total', 'request_success_total', 'prefix_cache_hits_total', 'num_preemptions_total']) {
      assert.match(metrics, new RegExp(`^vllm:${name}`, 'm'));
      assert.match(metrics, new RegExp(`^loom:${name}`, 'm'));
    }
    assert.match(metrics, /vllm:request_success_total\{model_name="fixture",engine="0",finished_reason="length"\} [1-9]/);
  });

  it('/generate, /tokenize and /detokenize', async () => {
    const g = golden();
    const r = await fetch(`http://127.0.0.1:${s.port}/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input_ids: g.promptIds, max_tokens: 8, temperature: 0, ignore_eos: true, return_logprob: true }),
    });
    const out = (await r.json()) as { text: string; output_ids: number[]; meta_info: { finish_reason: { type: string }; output_token_logprobs: [number, number][] } };
    assert.deepEqual(out.output_ids, g.tokens.slice(0, 8));
    assert.equal(out.meta_info.finish_reason.type, 'length');
    assert.deepEqual(out.meta_info.output_token_logprobs.map(([, id]) => id), out.output_ids);
    const detok = await fetch(`http://127.0.0.1:${s.port}/detokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tokens: out.output_ids }) });
    assert.equal(((await detok.json()) as { prompt: string }).prompt, out.text);
  });

  it('a client that leaves mid-stream has its request aborted and its blocks freed', async () => {
    const baseline = s.engine.stats?.kvCacheUsage ?? 0;
    for (let i = 0; i < 3; i++) {
      await new Promise<void>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: s.port, path: '/v1/completions', method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
          res.once('data', () => {
            req.destroy(); // mid-stream
            resolve();
          });
        });
        req.on('error', () => resolve());
        req.end(JSON.stringify({ model: MODEL, prompt: 'tell me a long story', max_tokens: 400, stream: true, ...greedy }));
        req.on('timeout', reject);
      });
    }
    for (let i = 0; i < 200 && (s.engine.stats?.numRunning ?? 1) > 0; i++) await sleep(10);
    assert.equal(s.engine.stats?.numRunning, 0);
    assert.equal(s.engine.stats?.kvCacheUsage, baseline);
  });
});

describe('server limits', () => {
  it('401 without the API key, 429 when full, 503 when the engine is gone', async () => {
    const s = await startServer({ apiKey: 'secret', maxPendingRequests: 1 });
    try {
      const noKey = new OpenAI({ baseURL: s.client.baseURL, apiKey: 'wrong', maxRetries: 0 });
      await assert.rejects(noKey.completions.create({ model: MODEL, prompt: 'x', max_tokens: 1 }), OpenAI.AuthenticationError);
      assert.equal((await fetch(`http://127.0.0.1:${s.port}/health`)).status, 200, '/health needs no key');
      const long = s.client.completions.create({ model: MODEL, prompt: 'x', max_tokens: 200, ...greedy });
      await sleep(50);
      await assert.rejects(s.client.completions.create({ model: MODEL, prompt: 'y', max_tokens: 1 }), OpenAI.RateLimitError);
      await long;
      await s.engine.close();
      assert.equal((await fetch(`http://127.0.0.1:${s.port}/health`)).status, 503);
      await assert.rejects(s.client.completions.create({ model: MODEL, prompt: 'x', max_tokens: 1 }), OpenAI.InternalServerError);
    } finally {
      await s.app.close();
    }
  });
});
