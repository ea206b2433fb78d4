// Images through every API with its official client (openai, @anthropic-ai/sdk, ollama): until
// the engine reads images (#43's engine part), a request whose images were parsed reaches the
// pipeline and is refused there ("start loom with a vision projector (--mmproj)"), in each API's
// 400 shape: that refusal is only made for a prompt that carries images, so it shows they got
// through. Hostile inputs (bad base64, a non-image data URL, an image over the bound, a URL from
// a host not allowed) are 4xx in each API's own error shape. (The parsed prompts themselves,
// markers and bytes: test/server/image-requests.test.ts.)
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import { PNG_1X1, bytesOf, pngDataUrl } from '../../fixtures/api-images.js';
import { HERMES_CHATML_TEMPLATE } from '../../fixtures/hermes-template.js';
import { MODEL, fixtureBy, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

const NO_PROJECTOR = /cannot read images: start loom with a vision projector \(--mmproj\)/;
/** bigger than the server's --max-image-bytes below, and a PNG by its first bytes */
const HUGE = Buffer.concat([Buffer.from(bytesOf(PNG_1X1)), Buffer.alloc(8192)]).toString('base64');

describe('images through every API (qwen3 fixture without a projector)', () => {
  let s: TestServer;
  let media: Server;
  let imageUrl: string;
  let openai: OpenAI;
  let anthropic: Anthropic;
  let ollama: Ollama;
  let fetched = 0;
  before(async () => {
    media = createServer((req, res) => {
      fetched++;
      if (req.url === '/dot.png') res.writeHead(200, { 'content-type': 'image/png' }).end(bytesOf(PNG_1X1));
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => media.listen(0, '127.0.0.1', r));
    imageUrl = `http://127.0.0.1:${(media.address() as AddressInfo).port}/dot.png`;
    s = await startTestServer(fixtureBy((f) => f.name === 'qwen3-q8_0'), { chatTemplate: HERMES_CHATML_TEMPLATE, images: { maxImageBytes: 4096, allowedMediaDomains: ['127.0.0.1'], fetchTimeoutMs: 5_000 } });
    openai = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: s.url, apiKey: 'x', maxRetries: 0 });
    ollama = new Ollama({ host: s.url });
  });
  after(async () => {
    await s?.close();
    media?.close();
  });

  const openaiRefusal = (e: unknown) => e instanceof OpenAI.BadRequestError && NO_PROJECTOR.test(e.message);

  it('OpenAI chat: a data URL and a fetched URL reach the pipeline (whole and streamed)', async () => {
    const before = fetched;
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: pngDataUrl, detail: 'low' } }, { type: 'image_url', image_url: { url: imageUrl } }] },
    ];
    await assert.rejects(openai.chat.completions.create({ model: MODEL, messages, max_tokens: 2 }), openaiRefusal);
    await assert.rejects(openai.chat.completions.create({ model: MODEL, messages, max_tokens: 2, stream: true }), openaiRefusal);
    assert.equal(fetched, before + 2);
  });

  it('OpenAI Responses: input_image (data URL) reaches the pipeline; input_tokens too', async () => {
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: [{ type: 'input_image', image_url: pngDataUrl, detail: 'auto' }, { type: 'input_text', text: 'Describe.' }] }];
    await assert.rejects(openai.responses.create({ model: MODEL, input, max_output_tokens: 2 }), openaiRefusal);
    const res = await s.post('/v1/responses/input_tokens', { model: MODEL, input });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, NO_PROJECTOR);
  });

  it('Anthropic Messages: base64 and url image blocks reach the pipeline; count_tokens says the same', async () => {
    const messages: Anthropic.MessageParam[] = [
      {
        role: 'user',
        content: [
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_1X1 } },
          { type: 'image', source: { type: 'url', url: imageUrl } },
          { type: 'text', text: 'Same?' },
        ],
      },
    ];
    const refusal = (e: unknown) => e instanceof Anthropic.BadRequestError && NO_PROJECTOR.test(e.message) && (e.error as { error: { type: string } }).error.type === 'invalid_request_error';
    await assert.rejects(anthropic.messages.create({ model: MODEL, max_tokens: 2, messages }), refusal);
    await assert.rejects(anthropic.messages.create({ model: MODEL, max_tokens: 2, messages, stream: true }), refusal);
    await assert.rejects(anthropic.messages.countTokens({ model: MODEL, messages }), refusal);
  });

  it('Ollama: images on /api/chat and /api/generate reach the pipeline', async () => {
    const refusal = (e: unknown) => (e as { status_code?: number }).status_code === 400 && NO_PROJECTOR.test((e as Error).message);
    await assert.rejects(ollama.chat({ model: MODEL, messages: [{ role: 'user', content: 'What is this?', images: [PNG_1X1] }], stream: false }), refusal);
    await assert.rejects(ollama.generate({ model: MODEL, prompt: 'What is this?', images: [bytesOf(PNG_1X1)], stream: false }), refusal);
  });

  it('hostile images: each a 4xx in the API\'s own error shape, naming the problem', async () => {
    const disallowed = imageUrl.replace('127.0.0.1', 'localhost');
    const cases: [string, RegExp, number][] = [
      ['!!!notbase64', /not valid base64/, 400],
      [Buffer.from('<html>hello</html>').toString('base64'), /not an image loom reads/, 400],
      [HUGE, /over the limit of 4096 bytes/, 413],
    ];
    for (const [data, message, status] of cases) {
      const chat = await s.post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } }] }] });
      assert.equal(chat.status, status);
      const e = (await chat.json()) as { error: { message: string; param: string; code: number } };
      assert.match(e.error.message, message);
      assert.equal(e.error.param, 'messages[0].content[0].image_url');
      assert.equal(e.error.code, status);

      const msg = await s.post('/v1/messages', { model: MODEL, max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data } }] }] });
      assert.equal(msg.status, status);
      const a = (await msg.json()) as { type: string; error: { type: string; message: string } };
      assert.equal(a.type, 'error');
      assert.equal(a.error.type, status === 413 ? 'request_too_large' : 'invalid_request_error');
      assert.match(a.error.message, message);

      const resp = await s.post('/v1/responses', { model: MODEL, input: [{ role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${data}` }] }] });
      assert.equal(resp.status, status);
      assert.match(((await resp.json()) as { error: { message: string } }).error.message, message);

      const ol = await s.post('/api/chat', { model: MODEL, messages: [{ role: 'user', content: 'x', images: [data] }] });
      assert.equal(ol.status, status);
      const o = (await ol.json()) as { error: string };
      assert.equal(typeof o.error, 'string');
      assert.match(o.error, message);
    }
    // a non-image data URL, and a URL from a host the operator did not allow
    await assert.rejects(
      openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:text/plain;base64,aGVsbG8=' } }] }] }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && /"text\/plain" is not an image/.test(e.message),
    );
    const before = fetched;
    await assert.rejects(
      openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: disallowed } }] }] }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && /fetching images from localhost is not allowed/.test(e.message),
    );
    await assert.rejects(
      anthropic.messages.create({ model: MODEL, max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: disallowed } }] }] }),
      (e: unknown) => e instanceof Anthropic.BadRequestError && /not allowed/.test(e.message),
    );
    assert.equal(fetched, before);
    // the same two through raw requests on every API that takes URLs, in each one's shape
    for (const [url, message] of [['data:text/plain;base64,aGVsbG8=', /"text\/plain" is not an image/], [disallowed, /fetching images from localhost is not allowed/]] as const) {
      const chat = await s.post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: url }] }] });
      assert.equal(chat.status, 400);
      assert.match(((await chat.json()) as { error: { message: string } }).error.message, message);
      const resp = await s.post('/v1/responses', { model: MODEL, input: [{ role: 'user', content: [{ type: 'input_image', image_url: url }] }] });
      assert.equal(resp.status, 400);
      assert.match(((await resp.json()) as { error: { message: string } }).error.message, message);
      if (url.startsWith('http')) {
        const msg = await s.post('/v1/messages', { model: MODEL, max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url } }] }] });
        assert.equal(msg.status, 400);
        const a = (await msg.json()) as { type: string; error: { type: string; message: string } };
        assert.deepEqual([a.type, a.error.type], ['error', 'invalid_request_error']);
        assert.match(a.error.message, message);
      }
    }
    assert.equal(fetched, before);
    // audio: refused by name
    await assert.rejects(
      openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }] }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && /input_audio parts are not supported/.test(e.message),
    );
  });

  it('text-only requests are unchanged: text parts joined, a reply', async () => {
    const r = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }, { type: 'text', text: ' there' }] }], max_tokens: 2, temperature: 0 });
    assert.equal(r.choices[0]!.finish_reason, 'length');
  });
});
