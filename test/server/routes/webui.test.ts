// The chat page at / in a real browser: Debian's chromium, headless, driven by puppeteer-core.
// It loads with no key, asks for the API key, shows the model, streams a reply (falling back
// to plain completion for stories260K, which has no chat template), stops it with the Stop
// button, and keeps the conversation across a reload. Skips when no browser is installed.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import puppeteer from 'puppeteer-core';
import type { Browser, Page } from 'puppeteer-core';
import { WorkerEngineClient } from '../../../src/engine/worker-client.js';
import { loadModel } from '../../../src/model/load.js';
import { DEFAULT_MODEL_PATH } from '../../../src/model/model-arg.js';
import { buildApp } from '../../../src/server/app.js';
import type { ServerOptions } from '../../../src/server/context.js';
import { PNG_1X1, bytesOf, pngDataUrl } from '../../fixtures/api-images.js';
import { ggufFixturePath } from '../../fixtures/index.js';
import { GGUF_FIXTURES } from '../../fixtures/recipe.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const noBrowser = existsSync(CHROMIUM) ? false : `no browser at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;
const KEY = 'sesame';

async function startServer(webui: boolean, model = DEFAULT_MODEL_PATH, name = 'stories260K', apiKey: string | null = KEY) {
  const engine = await WorkerEngineClient.start({ model, backend: 'reference', kvCacheMemory: '16MiB' });
  const options: ServerOptions = { servedModelName: name, maxModelLen: engine.info.maxModelLen, maxPendingRequests: 8, slowClientTimeoutMs: 30_000, bodyLimitBytes: 1 << 20, apiKey: apiKey ?? undefined, webui };
  const { app } = buildApp({ engine, tokenizer: loadModel(model).tokenizer, options });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: async () => (await app.close(), await engine.close()) };
}

describe('web chat page', { skip: noBrowser }, () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let browser: Browser;
  let page: Page;
  before(async () => {
    server = await startServer(true);
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    page = await browser.newPage();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('is served without the key, from this server alone, and asks for the key', async () => {
    const res = await fetch(`${server.url}/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const html = await res.text();
    assert.doesNotMatch(html, /(src|href)=["']?(https?:)?\/\//, 'nothing from another origin');
    assert.equal((await fetch(`${server.url}/v1/models`)).status, 401);
    const outside: string[] = [];
    page.on('request', (r) => void (r.url().startsWith(server.url) || outside.push(r.url())));
    await page.goto(`${server.url}/`);
    // (page code as strings: the browser's globals are not in this file's types)
    await page.waitForFunction(`document.getElementById('model').textContent === 'this server needs an API key'`);
    await page.evaluate(`localStorage.setItem('loom.apiKey', ${JSON.stringify(KEY)})`);
    await page.reload();
    await page.waitForFunction(`document.getElementById('model').textContent === 'stories260K'`);
    assert.deepEqual(outside, []);
  });

  it('streams a reply, and Stop aborts it', async () => {
    // a slow line, so the reply is still arriving when Stop is pressed
    const cdp = await page.createCDPSession();
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: 2_000, uploadThroughput: 100_000 });
    // every length the reply's bubble goes through
    await page.evaluate(`window.lengths = [];
      new MutationObserver(() => {
        const bubble = document.querySelector('.assistant');
        if (bubble) window.lengths.push(bubble.textContent.length);
      }).observe(document.getElementById('log'), { childList: true, subtree: true, characterData: true });`);
    await page.type('#input', 'Once upon a time');
    await page.keyboard.press('Enter');
    await page.waitForFunction(`document.querySelector('.user')?.textContent === 'Once upon a time'`);
    await page.waitForFunction(`new Set(window.lengths).size >= 3`, { timeout: 60_000 });
    assert.equal(await page.$eval('#stop', (b) => (b as unknown as { hidden: boolean }).hidden), false, 'Stop shows while the reply streams');
    await page.click('#stop');
    await page.waitForFunction(`/stopped/.test(document.querySelector('.assistant .stats')?.textContent ?? '')`, { timeout: 10_000 });
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    assert.equal(await page.$eval('#send', (b) => (b as unknown as { hidden: boolean }).hidden), false);
    const note = await page.$eval('.note', (n) => n.textContent);
    assert.match(note!, /no chat template/);
    const reply = await page.$eval('.assistant', (n) => n.firstChild!.textContent!);
    assert.ok(reply.length > 0 && reply.length < 2000, reply);
  });

  it('keeps the conversation across a reload, and New chat forgets it', async () => {
    await page.reload();
    await page.waitForFunction(`document.querySelectorAll('.msg.user, .msg.assistant').length === 2`);
    assert.equal(await page.$eval('.user', (n) => n.textContent), 'Once upon a time');
    await page.click('#clear');
    assert.equal(await page.$$eval('.msg.user, .msg.assistant', (n) => n.length), 0);
  });

  it('chats through /v1/chat/completions on a model with a chat template', async () => {
    const other = await startServer(true, ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'qwen3-q8_0')!), 'fixture', null);
    const context = await browser.createBrowserContext();
    try {
      const page = await context.newPage();
      const chats: string[] = [];
      page.on('request', (r) => void (r.url().endsWith('/v1/chat/completions') && chats.push(r.postData() ?? '')));
      await page.goto(`${other.url}/`);
      await page.waitForFunction(`document.getElementById('model').textContent === 'fixture'`, { timeout: 5000 }).catch(async (e: Error) => {
        throw new Error(`${e.message}: ${await page.$eval('#model', (n) => n.textContent)}`);
      });
      await page.type('#input', 'Hello');
      await page.keyboard.press('Enter');
      // a random model talks until its context is full: stop it once the reply streams
      await page.waitForFunction(`(document.querySelector('.assistant')?.textContent ?? '').length > 0`, { timeout: 60_000 });
      await page.click('#stop');
      await page.waitForFunction(`/stopped/.test(document.querySelector('.assistant .stats')?.textContent ?? '')`, { timeout: 10_000 });
      assert.equal(await page.$$eval('.note', (n) => n.length), 0, 'no fallback, no error');
      assert.equal(chats.length, 1);
      assert.deepEqual((JSON.parse(chats[0]!) as { messages: unknown[] }).messages, [{ role: 'user', content: 'Hello' }]);
    } finally {
      // a browser context of its own: closing it closes the sockets Chromium opened ahead
      // (a socket without a request would hold the server's close for its 60 s headers timeout)
      await context.close();
      await other.close();
    }
  });
});

describe('web chat page: images', { skip: noBrowser }, () => {
  it('attaches an image (file input) sent as an image_url data URL before the text; a refusal drops the message and the chat goes on', async () => {
    const other = await startServer(true, ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'qwen3-q8_0')!), 'fixture', null);
    const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
    const dir = mkdtempSync(join(tmpdir(), 'loom-webui-'));
    const png = join(dir, 'dot.png');
    const txt = join(dir, 'notes.txt');
    writeFileSync(png, bytesOf(PNG_1X1));
    writeFileSync(txt, 'not an image');
    try {
      const page = await browser.newPage();
      const chats: string[] = [];
      page.on('request', (r) => void (r.url().endsWith('/v1/chat/completions') && chats.push(r.postData() ?? '')));
      await page.goto(`${other.url}/`);
      await page.waitForFunction(`document.getElementById('model').textContent === 'fixture'`, { timeout: 5000 });
      const input = (await page.$('#file'))!;
      await input.uploadFile(txt);
      await page.waitForFunction(`/notes\.txt is not a PNG, JPEG, GIF or WebP image/.test(document.querySelector('.note')?.textContent ?? '')`);
      await input.uploadFile(png);
      await page.waitForFunction(`document.querySelectorAll('#attachments img').length === 1`);
      await page.type('#input', 'What is this?');
      await page.keyboard.press('Enter');
      // no projector on this server: the pipeline's refusal, shown; the message leaves the conversation
      await page.waitForFunction(`/vision projector/.test([...document.querySelectorAll('.note')].map((n) => n.textContent).join(' '))`, { timeout: 30_000 });
      assert.equal(chats.length, 1);
      const sent = (JSON.parse(chats[0]!) as { messages: unknown[] }).messages;
      assert.deepEqual(sent, [{ role: 'user', content: [{ type: 'image_url', image_url: { url: pngDataUrl } }, { type: 'text', text: 'What is this?' }] }]);
      assert.equal(await page.$$eval('.msg.user.failed img', (n) => n.length), 1, 'the refused message is shown with its image, faded');
      assert.equal(await page.$$eval('#attachments img', (n) => n.length), 0, 'the attachment went with the message');
      await page.type('#input', 'Hello');
      await page.keyboard.press('Enter');
      await page.waitForFunction(`(document.querySelector('.assistant')?.textContent ?? '').length > 0`, { timeout: 60_000 });
      await page.click('#stop');
      await page.waitForFunction(`/stopped/.test(document.querySelector('.assistant .stats')?.textContent ?? '')`, { timeout: 10_000 });
      assert.deepEqual((JSON.parse(chats[1]!) as { messages: unknown[] }).messages, [{ role: 'user', content: 'Hello' }]);
    } finally {
      await browser.close();
      await other.close();
    }
  });
});

describe('--no-webui', () => {
  it('serves no page at /', async () => {
    const server = await startServer(false);
    try {
      assert.equal((await fetch(`${server.url}/`, { headers: { authorization: `Bearer ${KEY}` } })).status, 404);
    } finally {
      await server.close();
    }
  });
});
