// Gemma's tokenizer and chat templates as a client meets them: the gemma2 fixture (Gemma's
// SentencePiece layout, add_space_prefix false, Gemma 2's real template) served over HTTP.
// Gemma 2's template raises on a system message: the client gets a 400 saying so. Gemma 3's
// template folds the system message into the first user turn.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { WorkerEngineClient } from '../../../src/engine/worker-client.js';
import { loadModel } from '../../../src/model/load.js';
import { buildApp } from '../../../src/server/app.js';
import { renderChat } from '../../../src/tokenizer/chat-template.js';
import { ggufFixturePath } from '../../fixtures/index.js';
import { GGUF_FIXTURES } from '../../fixtures/recipe.js';

const path = (name: string) => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === name)!);

describe('Gemma chat', () => {
  let close: () => Promise<void>;
  let client: OpenAI;
  before(async () => {
    const engine = await WorkerEngineClient.start({ model: path('gemma2-q8_0'), backend: 'auto', kvCacheMemory: '16MiB' });
    const { app } = buildApp({
      engine,
      tokenizer: loadModel(path('gemma2-q8_0')).tokenizer,
      options: { servedModelName: 'gemma', maxModelLen: engine.info.maxModelLen, maxPendingRequests: 8, slowClientTimeoutMs: 5_000, bodyLimitBytes: 1 << 20 },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    client = new OpenAI({ baseURL: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1`, apiKey: 'none', maxRetries: 0 });
    close = async () => (await app.close(), await engine.close());
  });
  after(() => close());

  it('a user turn renders as <bos><start_of_turn>user … <start_of_turn>model and is answered', async () => {
    const tokenizer = loadModel(path('gemma2-q8_0')).tokenizer;
    const text = renderChat(tokenizer, [{ role: 'user', content: ' Hi there ' }]);
    assert.equal(text, '<bos><start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n');
    const ids = tokenizer.encode(text, { addSpecial: false });
    // the markers are single control tokens; no space is put before the first word
    assert.deepEqual(ids.slice(0, 2), [2, 4]);
    assert.ok(tokenizer.decode(ids.slice(2)).startsWith('user\nHi there'), tokenizer.decode(ids.slice(2)));
    const r = await client.chat.completions.create({ model: 'gemma', messages: [{ role: 'user', content: 'Hi there' }], max_tokens: 4, temperature: 0 });
    assert.equal(r.usage?.prompt_tokens, ids.length);
    assert.equal(r.usage?.completion_tokens, 4);
  });

  it("Gemma 2's template refuses a system message: 400 with the template's own words", async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'gemma', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }], max_tokens: 4 }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && /System role not supported/.test(e.message),
    );
  });

  it("Gemma 3's template puts the system message at the start of the first user turn", () => {
    const tokenizer = loadModel(path('gemma3-q8_0')).tokenizer;
    const text = renderChat(tokenizer, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'Bye' },
    ]);
    assert.equal(text, '<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n');
    assert.ok(tokenizer.stopIds.has(5), '<end_of_turn> ends generation');
  });
});
