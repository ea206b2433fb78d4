// Ollama's API through the official `ollama` npm client: /api/generate and /api/chat,
// streamed and whole, against llama.cpp's greedy text (stories260K's story from
// ../shared/models/README.md; a fixture's golden tokens), plus tags/show/ps/version and
// Ollama's error shape.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { WorkerEngineClient } from '../../../src/engine/worker-client.js';
import { describeModel } from '../../../src/model/describe.js';
import { loadModel } from '../../../src/model/load.js';
import { DEFAULT_MODEL_PATH } from '../../../src/model/model-arg.js';
import type { ServerOptions } from '../../../src/server/context.js';
import { buildApp } from '../../../src/server/app.js';
import { GOLDEN_DIR, ggufFixturePath } from '../../fixtures/index.js';
import { readGolden } from '../../fixtures/golden.js';
import { GGUF_FIXTURES } from '../../fixtures/recipe.js';

const STORY =
  ', there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily';
const FIXTURE = 'qwen3-q8_0'; // ChatML template

async function startServer(path: string, name: string, extra: Partial<ServerOptions> = {}) {
  const model = loadModel(path);
  const engine = await WorkerEngineClient.start({ model: path, backend: 'reference', kvCacheMemory: '16MiB' });
  const { app } = buildApp({
    engine,
    tokenizer: model.tokenizer,
    options: { servedModelName: name, maxModelLen: engine.info.maxModelLen, maxPendingRequests: 8, slowClientTimeoutMs: 5_000, bodyLimitBytes: 1 << 20, description: describeModel(model), log: () => {}, ...extra },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return { url, client: new Ollama({ host: url }), close: async () => (await app.close(), await engine.close()) };
}

type Server = Awaited<ReturnType<typeof startServer>>;
const greedy = (n: number) => ({ temperature: 0, num_predict: n });

describe('Ollama API: /api/generate on stories260K', () => {
  let s: Server;
  before(async () => {
    s = await startServer(DEFAULT_MODEL_PATH, 'stories260K');
  });
  after(() => s.close());

  it("gives llama.cpp's greedy story, whole, with Ollama's statistics and context", async () => {
    const r = await s.client.generate({ model: 'stories260K', prompt: 'Once upon a time', stream: false, options: greedy(60) });
    assert.equal(r.response, STORY);
    assert.equal(r.done, true);
    assert.equal(r.done_reason, 'length');
    assert.equal(r.prompt_eval_count, 5);
    assert.equal(r.eval_count, 60);
    assert.deepEqual(r.context.slice(0, 5), [1, 403, 407, 261, 378]);
    assert.equal(r.context.length, 65);
    assert.ok(r.total_duration >= r.eval_duration && r.eval_duration > 0);
  });

  it('streams the same story piece by piece, statistics last; context continues it', async () => {
    let text = '';
    let pieces = 0;
    let last;
    for await (const part of await s.client.generate({ model: 'stories260K:latest', prompt: 'Once upon a time', stream: true, options: greedy(30) })) {
      text += part.response;
      if (!part.done) pieces++;
      last = part;
    }
    assert.equal(text, STORY.slice(0, text.length));
    assert.ok(pieces > 10, `${pieces} pieces`);
    assert.equal(last?.done, true);
    assert.equal(last?.eval_count, 30);
    // the deprecated context: the next request continues where the last one stopped
    const next = await s.client.generate({ model: 'stories260K', prompt: '', context: last!.context, stream: false, options: greedy(30) });
    assert.equal(text + next.response, STORY.slice(0, (text + next.response).length));
  });

  it('stop strings and the empty "load" request', async () => {
    const r = await s.client.generate({ model: 'stories260K', prompt: 'Once upon a time', stream: false, options: { ...greedy(60), stop: ['Lily'] } });
    assert.equal(r.response, ', there was a little girl named ');
    assert.equal(r.done_reason, 'stop');
    const load = await s.client.generate({ model: 'stories260K', prompt: '', stream: false });
    assert.deepEqual([load.done, load.done_reason, load.response], [true, 'load', '']);
  });

  it("errors come as Ollama's {error}: unknown model, bad option", async () => {
    await assert.rejects(s.client.generate({ model: 'llama3', prompt: 'hi', stream: false }), (e: Error & { status_code?: number }) => e.status_code === 404 && /model "llama3" not found/.test(e.message));
    const bad = await fetch(`${s.url}/api/generate`, { method: 'POST', body: JSON.stringify({ model: 'stories260K', prompt: 'hi', options: { temperature: 'hot' } }) });
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { error: 'option "temperature" must be a number' });
  });

  it('chat on a model without a template continues the conversation as plain text (as Ollama\'s default template and `loom chat`)', async () => {
    const messages = [
      { role: 'system', content: 'A story.' },
      { role: 'user', content: 'Once upon a time' },
    ];
    const chat = await s.client.chat({ model: 'stories260K', messages, stream: false, options: greedy(8) });
    const gen = await s.client.generate({ model: 'stories260K', prompt: 'A story.\nOnce upon a time', raw: true, stream: false, options: greedy(8) });
    assert.equal(chat.message.content, gen.response);
    assert.equal(chat.prompt_eval_count, gen.prompt_eval_count);
  });

  it('chat on a model without a template works with --chat-template', async () => {
    const t = await startServer(DEFAULT_MODEL_PATH, 'stories260K', { chatTemplate: '{% for m in messages %}{{ m.content }}{% endfor %}' });
    try {
      const r = await t.client.chat({ model: 'stories260K', messages: [{ role: 'user', content: 'Once upon a time' }], stream: false, options: greedy(8) });
      assert.equal(r.done, true);
      assert.ok(r.message.content.length > 0 && r.prompt_eval_count > 0, JSON.stringify(r));
    } finally {
      await t.close();
    }
  });

  it('tags, show, ps and version describe the served model', async () => {
    const { models } = await s.client.list();
    assert.equal(models.length, 1);
    assert.equal(models[0]!.name, 'stories260K:latest');
    assert.equal(models[0]!.size, 1185504);
    assert.deepEqual([models[0]!.details.format, models[0]!.details.family, models[0]!.details.quantization_level], ['gguf', 'llama', 'F32']);
    const show = await s.client.show({ model: 'stories260K' });
    assert.equal((show.model_info as unknown as Record<string, unknown>)['llama.context_length'], 512);
    assert.equal((show.model_info as unknown as Record<string, unknown>)['llama.block_count'], 5);
    assert.equal((await s.client.ps()).models[0]!.name, 'stories260K:latest');
    assert.match((await s.client.version()).version, /^\d+\.\d+\.\d+/);
  });
});

describe('Ollama API: /api/chat on a fixture with a chat template', () => {
  let s: Server;
  const path = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === FIXTURE)!);
  const tokenizer = loadModel(path).tokenizer;
  before(async () => {
    s = await startServer(path, 'fixture');
  });
  after(() => s.close());

  it("raw generate gives llama.cpp's greedy tokens", async () => {
    const g = readGolden(GOLDEN_DIR, FIXTURE).prompts[0]!;
    const stopAt = g.tokens.findIndex((t) => tokenizer.stopIds.has(t));
    const expected = stopAt < 0 ? g.tokens : g.tokens.slice(0, stopAt);
    const r = await s.client.generate({ model: 'fixture', prompt: g.prompt, raw: true, stream: false, options: greedy(expected.length) });
    assert.equal(r.response, tokenizer.decode(expected));
    assert.equal(r.prompt_eval_count, g.promptIds.length);
  });

  it('chat, whole and streamed, answers through the template the same as /v1/chat/completions', async () => {
    const messages = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Hello there' },
    ];
    const whole = await s.client.chat({ model: 'fixture', messages, stream: false, options: { ...greedy(12), seed: 1 } });
    assert.equal(whole.message.role, 'assistant');
    assert.equal(whole.done, true);
    let streamed = '';
    for await (const part of await s.client.chat({ model: 'fixture', messages, stream: true, options: greedy(12) })) streamed += part.message.content;
    assert.equal(streamed, whole.message.content);
    const openai = (await (
      await fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fixture', messages, max_tokens: 12, temperature: 0 }) })
    ).json()) as { choices: { message: { content: string } }[]; usage: { prompt_tokens: number; completion_tokens: number } };
    assert.equal(whole.message.content, openai.choices[0]!.message.content);
    assert.equal(whole.prompt_eval_count, openai.usage.prompt_tokens);
    assert.equal(whole.eval_count, openai.usage.completion_tokens);
  });
});
