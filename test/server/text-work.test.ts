// The serving thread never blocks on a long text (issue #20, item 2): the tokenizer pool
// gives the ids, texts and chat renderings the tokenizer gives inline (GGUF SentencePiece and
// HF tokenizer.json), fails a dead worker's jobs and replaces it; /health answers while a
// long prompt is tokenized for /tokenize and for a completion; a long prompt list is
// refused before it is tokenized; Ollama's /api/generate refuses a prompt by its bytes.
// No wall time is asserted: only the order in which responses arrive.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Worker } from 'node:worker_threads';
import { createEngineCore } from '../../src/engine/create.js';
import { InProcessEngineClient } from '../../src/engine/in-process-client.js';
import { Rng } from '../../src/engine/rng.js';
import { loadModel } from '../../src/model/load.js';
import { buildApp } from '../../src/server/app.js';
import { mergeAsync } from '../../src/server/merge.js';
import { Slicer } from '../../src/pipeline/slicer.js';
import { BUSY_BACKLOG, INLINE_WHEN_BUSY_CHARS, OFFLOAD_CHARS, TextWork } from '../../src/server/text-work.js';
import { TokenizerPool } from '../../src/server/tokenizer-pool.js';
import { ChatTemplateError, renderChat } from '../../src/tokenizer/chat-template.js';
import type { Tokenizer } from '../../src/tokenizer/tokenizer.js';
import { ggufFixturePath, hfFixturePaths } from '../fixtures/index.js';
import { GGUF_FIXTURES, HF_FIXTURES } from '../fixtures/recipe.js';

const GGUF = () => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q8_0')!);
const HF = () => hfFixturePaths(HF_FIXTURES.find((f) => f.name === 'hf-qwen3')!).folder;

/** seeded prose with the tokenizer's special tokens, accents, CJK and emoji mixed in */
function longText(tok: Tokenizer, chars: number, seed: number): string {
  const rng = new Rng(seed);
  const specials = [tok.bosToken, tok.eosToken].filter((s): s is string => s !== undefined);
  const words = ['Once', 'upon', 'a', 'time', 'there', 'was', 'naïve', '日本語', '🌸', 'flowers', '  ', '\n', 'don\'t', '42', ...specials];
  let out = '';
  while (out.length < chars) out += words[Math.floor(rng.next() * words.length)]! + (rng.next() < 0.8 ? ' ' : '');
  return out.slice(0, chars);
}

for (const [kind, path] of [['GGUF SentencePiece', GGUF], ['HF tokenizer.json', HF]] as const) {
  describe(`tokenizer pool: ${kind}`, () => {
    let pool: TokenizerPool;
    let tok: Tokenizer;
    before(async () => {
      tok = loadModel(path()).tokenizer;
      pool = await TokenizerPool.start({ modelPath: path(), size: 2 });
    });
    after(() => pool.close());

    it('encodes to the ids the tokenizer gives inline, for every special-token setting', async () => {
      const text = longText(tok, 3 * OFFLOAD_CHARS, 7);
      for (const addSpecial of [true, false]) {
        for (const parseSpecial of [true, false]) {
          const inline = tok.encode(text, { addSpecial, parseSpecial });
          assert.deepEqual([...(await pool.encode(text, addSpecial, parseSpecial))], inline, `addSpecial ${addSpecial}, parseSpecial ${parseSpecial}`);
        }
      }
    });

    it('decodes and renders as inline; jobs spread over both workers at once give the same', async () => {
      const text = longText(tok, 2 * OFFLOAD_CHARS, 11);
      const ids = tok.encode(text);
      for (const skipSpecial of [true, false]) assert.equal(await pool.decode(Int32Array.from(ids), skipSpecial), tok.decode(ids, { skipSpecial }));
      const messages = [{ role: 'user', content: text }, { role: 'assistant', content: 'Hi' }, { role: 'user', content: text.slice(0, 100) }];
      assert.equal(await pool.render(messages, true), renderChat(tok, messages, { addGenerationPrompt: true }));
      const extra = { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }], enable_thinking: false };
      assert.equal(await pool.render(messages, false, extra), renderChat(tok, messages, { addGenerationPrompt: false, extra }));
      const texts = Array.from({ length: 6 }, (_, i) => longText(tok, 5000, 100 + i));
      const got = await Promise.all(texts.map((t) => pool.encode(t, true, true)));
      got.forEach((g, i) => assert.deepEqual([...g], tok.encode(texts[i]!)));
    });

    it('TextWork sends long texts to the pool and keeps short ones inline, with the same results', async () => {
      const work = new TextWork(tok, pool, undefined);
      assert.equal(work.offloads(OFFLOAD_CHARS), false);
      assert.equal(work.offloads(OFFLOAD_CHARS + 1), true);
      assert.equal(new TextWork(tok, undefined, undefined).offloads(10 * OFFLOAD_CHARS), false);
      // behind a long job, a page of text runs inline; a long one still queues
      const long = pool.encode(longText(tok, 2 * BUSY_BACKLOG, 5), true, true);
      const long2 = pool.encode(longText(tok, 2 * BUSY_BACKLOG, 6), true, true); // both workers busy
      assert.ok(pool.backlog > BUSY_BACKLOG);
      assert.equal(work.offloads(INLINE_WHEN_BUSY_CHARS), false);
      assert.equal(work.offloads(INLINE_WHEN_BUSY_CHARS + 1), true);
      await Promise.all([long, long2]);
      assert.equal(pool.backlog, 0);
      assert.equal(work.offloads(INLINE_WHEN_BUSY_CHARS), true);
      for (const chars of [100, 2 * OFFLOAD_CHARS]) {
        const text = longText(tok, chars, chars);
        assert.deepEqual(await work.encode(text, { addSpecial: false }), tok.encode(text, { addSpecial: false }));
        const { json, count } = await work.encodeJson(text);
        assert.deepEqual(JSON.parse(json), tok.encode(text));
        assert.equal(count, tok.encode(text).length);
      }
    });
  });
}

describe('tokenizer pool: failures', () => {
  it('a template that raises is a ChatTemplateError from the worker, as inline', async () => {
    const pool = await TokenizerPool.start({ modelPath: GGUF(), size: 1, chatTemplate: "{{ raise_exception('roles must alternate') }}" });
    try {
      await assert.rejects(pool.render([{ role: 'user', content: 'x'.repeat(OFFLOAD_CHARS * 2) }], true), (e: unknown) => e instanceof ChatTemplateError && /roles must alternate/.test(e.message));
    } finally {
      await pool.close();
    }
  });

  it('a model it cannot load fails at start, naming the file', async () => {
    await assert.rejects(TokenizerPool.start({ modelPath: '/nonexistent/model.gguf', size: 1 }), /\/nonexistent\/model\.gguf/);
  });

  it('a worker that dies fails its jobs and is replaced', async () => {
    const pool = await TokenizerPool.start({ modelPath: GGUF(), size: 1 });
    try {
      const tok = loadModel(GGUF()).tokenizer;
      const text = longText(tok, 200_000, 3);
      const job = pool.encode(text, true, true);
      const worker = (pool as unknown as { slots: { worker: Worker }[] }).slots[0]!.worker;
      await worker.terminate();
      await assert.rejects(job, /tokenizer worker exited/);
      for (let i = 0; i < 200 && !pool.running; i++) await new Promise((r) => setTimeout(r, 25));
      assert.equal(pool.running, true, 'a replacement worker runs');
      const small = text.slice(0, 5000);
      assert.deepEqual([...(await pool.encode(small, true, true))], tok.encode(small));
    } finally {
      await pool.close();
    }
  });
});

describe('Slicer', () => {
  it('a long loop of ticks lets a timer set before it run before it ends', async () => {
    const order: string[] = [];
    setTimeout(() => order.push('timer'), 0);
    const slicer = new Slicer(2);
    // busy (only the ticks yield) until the timer has run; without yields it never would, and the
    // loop ends at the guard. (Was: busy for 40 ms, which a loaded machine can spend descheduled,
    // leaving one tick or none.)
    const guard = performance.now() + 10_000;
    while (!order.includes('timer') && performance.now() < guard) await slicer.tick();
    order.push('loop');
    assert.deepEqual(order, ['timer', 'loop']);
  });
});

describe('mergeAsync', () => {
  async function* source(tag: number, count: number, delayMs: number): AsyncGenerator<string> {
    for (let i = 0; i < count; i++) {
      await new Promise((r) => setTimeout(r, delayMs));
      yield `${tag}:${i}`;
    }
  }

  it('yields every value of every source, each source in order', async () => {
    const got: string[] = [];
    for await (const v of mergeAsync([source(0, 5, 1), source(1, 3, 2), source(2, 0, 0), ...Array.from({ length: 200 }, (_, i) => source(3 + i, 2, 0))])) got.push(v);
    assert.equal(got.length, 5 + 3 + 400);
    for (const tag of [0, 1, 7]) {
      const mine = got.filter((v) => v.startsWith(`${tag}:`));
      assert.deepEqual(mine, [...mine].sort());
    }
  });

  it('a failing source fails the merge and every source is returned', async () => {
    let returned = 0;
    const tracked = (g: AsyncGenerator<string>): AsyncIterator<string> => ({ next: () => g.next(), return: async () => (returned++, g.return(undefined)) });
    async function* failing(): AsyncGenerator<string> {
      yield 'x';
      throw new Error('boom');
    }
    await assert.rejects(async () => {
      for await (const _ of mergeAsync([tracked(source(0, 100, 5)), tracked(failing())]));
    }, /boom/);
    assert.equal(returned, 2);
  });
});

describe('the serving thread while a long prompt is tokenized', () => {
  let url = '';
  let tok: Tokenizer;
  let close: () => Promise<void>;
  before(async () => {
    const model = loadModel(GGUF());
    tok = model.tokenizer;
    const engine = new InProcessEngineClient(createEngineCore({ model: GGUF(), backend: 'reference', kvCacheMemory: '16MiB' }, model));
    const { app } = buildApp({
      engine,
      tokenizer: tok,
      tokenizerPool: await TokenizerPool.start({ modelPath: GGUF(), size: 1 }),
      options: { servedModelName: 'fixture', maxModelLen: engine.info.maxModelLen, maxPendingRequests: 16, slowClientTimeoutMs: 5_000, bodyLimitBytes: 8 << 20 },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    close = async () => (await app.close(), await engine.close());
  });
  after(() => close());

  const post = (p: string, body: unknown) => fetch(url + p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  /** /health probed one after another until `work` answers: how many answered 200 before it */
  async function healthDuring(work: Promise<Response>): Promise<{ res: Response; answered: number }> {
    let done = false;
    let answered = 0;
    const res = work.finally(() => (done = true));
    while (!done) {
      const h = await fetch(`${url}/health`);
      await h.text();
      if (h.status === 200 && !done) answered++;
    }
    return { res: await res, answered };
  }

  it('/tokenize of a 256 KiB prompt: /health keeps answering, and the ids are the inline ids', async () => {
    const text = longText(tok, 256 * 1024, 21);
    const { res, answered } = await healthDuring(post('/tokenize', { model: 'fixture', prompt: text }));
    assert.equal(res.status, 200);
    const body = (await res.json()) as { tokens: number[]; count: number };
    assert.ok(answered >= 5, `only ${answered} /health answers came before /tokenize's`);
    assert.deepEqual(body.tokens, tok.encode(text));
  });

  it('a completion of a 256 KiB prompt kept to its last 8 tokens: /health keeps answering while it is tokenized', async () => {
    const text = longText(tok, 256 * 1024, 22);
    const work = post('/v1/completions', { model: 'fixture', prompt: text, truncate_prompt_tokens: 8, max_tokens: 2, temperature: 0, return_token_ids: true });
    const { res, answered } = await healthDuring(work);
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { usage: { prompt_tokens: number }; choices: { prompt_token_ids: number[] }[] };
    assert.ok(answered >= 5, `only ${answered} /health answers came before the completion`);
    assert.equal(body.usage.prompt_tokens, 8);
    assert.deepEqual(body.choices[0]!.prompt_token_ids, tok.encode(text).slice(-8));
  });

  it('a prompt list longer than the server admits is refused before any prompt is tokenized', async () => {
    const res = await post('/v1/completions', { model: 'fixture', prompt: Array.from({ length: 17 }, () => 'x'.repeat(OFFLOAD_CHARS * 4)), max_tokens: 1 });
    assert.equal(res.status, 400);
    const e = ((await res.json()) as { error: { param: string; message: string } }).error;
    assert.equal(e.param, 'n');
    assert.match(e.message, /17 sequences .*--max-pending-requests 16/);
  });

  it("Ollama's /api/generate refuses a prompt its bytes prove longer than the context", async () => {
    const res = await post('/api/generate', { model: 'fixture', prompt: 'x'.repeat(4 << 20), raw: true, stream: false });
    assert.equal(res.status, 400);
    assert.match(await res.text(), /maximum context length is \d+ tokens.*at least \d+ input tokens/);
  });
});
