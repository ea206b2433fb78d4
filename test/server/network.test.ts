// The server on a network: HTTPS with a self-signed certificate made here (openssl CLI),
// CORS only for the origins allowed, the API key only as a Bearer header, a log line per
// request without its text, the header size limit and the header read timeout.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WorkerEngineClient } from '../../src/engine/worker-client.js';
import { loadModel } from '../../src/model/load.js';
import { buildApp } from '../../src/server/app.js';
import type { ServerOptions } from '../../src/server/context.js';
import { sameSecret } from '../../src/server/security.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const path = () => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'gpt2-q8_0')!);
let engine: WorkerEngineClient;

async function serve(overrides: Partial<ServerOptions> = {}) {
  const { app } = buildApp({
    engine,
    tokenizer: loadModel(path()).tokenizer,
    options: { servedModelName: 'fixture', maxModelLen: engine.info.maxModelLen, maxPendingRequests: 64, slowClientTimeoutMs: 5_000, bodyLimitBytes: 1 << 20, ...overrides },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  return { app, port, url: `${overrides.network?.tls ? 'https' : 'http'}://127.0.0.1:${port}` };
}

const completion = (prompt: string) => JSON.stringify({ model: 'fixture', prompt, max_tokens: 4, temperature: 0 });

/** raw bytes out, the whole reply back (until the server closes) */
async function rawExchange(port: number, bytes: string): Promise<{ reply: string; closedAfterMs: number }> {
  const socket = connect(port, '127.0.0.1');
  const start = Date.now();
  let reply = '';
  socket.setEncoding('utf8').on('data', (d: string) => (reply += d));
  socket.write(bytes);
  await once(socket, 'close');
  return { reply, closedAfterMs: Date.now() - start };
}

describe('server on a network', () => {
  before(async () => {
    engine = await WorkerEngineClient.start({ model: path(), backend: 'reference', kvCacheMemory: '16MiB' });
  });
  after(() => engine.close());

  it('serves HTTPS with a self-signed certificate, and nothing in plain HTTP there', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-tls-'));
    try {
      const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
      const s = await serve({ network: { tls: { key: readFileSync(key), cert: readFileSync(cert) } } });
      try {
        const get = (ca?: Buffer) =>
          new Promise<{ status: number; body: string }>((resolve, reject) => {
            const req = httpsRequest(`${s.url}/v1/completions`, { method: 'POST', ca, headers: { 'content-type': 'application/json' } }, (res) => {
              let body = '';
              res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
            });
            req.on('error', reject);
            req.end(completion('hello'));
          });
        const ok = await get(readFileSync(cert));
        assert.equal(ok.status, 200);
        assert.equal((JSON.parse(ok.body) as { object: string }).object, 'text_completion');
        await assert.rejects(get(), /self[- ]signed/, 'a client that does not trust the certificate refuses it');
        await assert.rejects(fetch(`http://127.0.0.1:${s.port}/health`), 'no plain HTTP on the TLS port');
      } finally {
        await s.app.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('CORS: no headers by default, the allowed origins only, or any with "*"', async () => {
    const preflight = async (url: string, origin: string) =>
      fetch(`${url}/v1/completions`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' } });
    const closed = await serve();
    const listed = await serve({ allowedOrigins: ['https://app.example'], apiKey: 'k' });
    const any = await serve({ allowedOrigins: ['*'] });
    try {
      const plain = await fetch(`${closed.url}/health`, { headers: { origin: 'https://app.example' } });
      assert.equal(plain.headers.get('access-control-allow-origin'), null);
      const allowed = await preflight(listed.url, 'https://app.example');
      assert.equal(allowed.status, 204, 'a preflight needs no API key');
      assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://app.example');
      assert.match(allowed.headers.get('access-control-allow-headers') ?? '', /authorization/);
      assert.equal((await preflight(listed.url, 'https://evil.example')).headers.get('access-control-allow-origin'), null);
      const models = await fetch(`${listed.url}/v1/models`, { headers: { origin: 'https://app.example', authorization: 'Bearer k' } });
      assert.equal(models.headers.get('access-control-allow-origin'), 'https://app.example');
      assert.equal((await preflight(any.url, 'https://whoever.example')).headers.get('access-control-allow-origin'), '*');
    } finally {
      await Promise.all([closed.app.close(), listed.app.close(), any.app.close()]);
    }
  });

  it('takes the API key only as Authorization: Bearer (x-api-key only on Anthropic\'s /v1/messages), compared in constant time', async () => {
    const s = await serve({ apiKey: 'sekret-key' });
    try {
      const post = (headers: Record<string, string>, query = '') =>
        fetch(`${s.url}/v1/completions${query}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: completion('hi') });
      assert.equal((await post({ authorization: 'Bearer sekret-key' })).status, 200);
      assert.equal((await post({ authorization: 'bearer sekret-key' })).status, 200, 'the scheme is case-insensitive (RFC 7235)');
      for (const [headers, query] of [
        [{}, ''],
        [{ authorization: 'Bearer sekret-kez' }, ''],
        [{ authorization: 'Bearer sekret-key-and-more' }, ''],
        [{ authorization: 'Basic sekret-key' }, ''],
        [{ authorization: 'sekret-key' }, ''],
        [{ 'x-api-key': 'sekret-key' }, ''],
        [{ 'api-key': 'sekret-key' }, ''],
        [{}, '?api_key=sekret-key'],
      ] as const) {
        const r = await post(headers, query);
        assert.equal(r.status, 401, JSON.stringify([headers, query]));
        const body = (await r.json()) as { error: { type: string; code: string } };
        assert.deepEqual([body.error.type, body.error.code], ['authentication_error', 'invalid_api_key']);
      }
      assert.equal((await fetch(`${s.url}/health`)).status, 200, '/health is open');
      assert.ok(sameSecret('abc', 'abc') && !sameSecret('abc', 'abd') && !sameSecret('abc', 'abcd') && !sameSecret('', 'abc'));
    } finally {
      await s.app.close();
    }
  });

  it('logs one line per request without prompt text, or none with logRequests off', async () => {
    const lines: string[] = [];
    const error = console.error;
    console.error = (...args: unknown[]) => void lines.push(args.join(' '));
    try {
      for (const logRequests of [true, false]) {
        const s = await serve({ logRequests });
        await (await fetch(`${s.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: completion('the secret prompt text') })).text();
        await s.app.close();
      }
    } finally {
      console.error = error;
    }
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0]!, /^loom: POST \/v1\/completions 200 \d+ms$/);
  });

  it('limits n, stop strings and logit_bias entries per request, configurably', async () => {
    const tight = await serve({ limits: { maxN: 2, maxStopStrings: 2, maxLogitBias: 3 } });
    const loose = await serve();
    try {
      const post = async (url: string, extra: object) => {
        const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fixture', prompt: 'hi', max_tokens: 2, ...extra }) });
        return { status: r.status, text: await r.text() };
      };
      const bias = (k: number) => Object.fromEntries(Array.from({ length: k }, (_, i) => [String(i + 3), 1]));
      assert.equal((await post(tight.url, { n: 2, stop: ['a', 'b'], logit_bias: bias(3) })).status, 200);
      for (const [extra, param, flag] of [[{ n: 3 }, 'n', '--max-n'], [{ stop: ['a', 'b', 'c'] }, 'stop', '--max-stop-strings'], [{ logit_bias: bias(4) }, 'logit_bias', '--max-logit-bias']] as const) {
        const r = await post(tight.url, extra);
        assert.equal(r.status, 400, r.text);
        assert.ok(r.text.includes(`"param":"${param}"`) && r.text.includes(flag), r.text);
      }
      assert.match((await post(loose.url, { n: 17 })).text, /n must be at most 16 on this server \(--max-n\)/);
      assert.match((await post(loose.url, { stop: Array.from({ length: 17 }, (_, i) => `s${i}`) })).text, /at most 16 stop strings/);
      assert.equal((await post(loose.url, { logit_bias: bias(100) })).status, 200);
      assert.match((await post(loose.url, { logit_bias: bias(1025) })).text, /at most 1024 logit_bias entries/);
    } finally {
      await Promise.all([tight.app.close(), loose.app.close()]);
    }
  });

  it('refuses an oversized request head with 431 and closes a slow one after the header timeout', async () => {
    const s = await serve({ network: { maxHeaderBytes: 4096, headersTimeoutMs: 400 } });
    try {
      const big = await fetch(`${s.url}/health`, { headers: { 'x-filler': 'a'.repeat(8192) } });
      assert.equal(big.status, 431);
      assert.equal((await fetch(`${s.url}/health`, { headers: { 'x-filler': 'a'.repeat(2048) } })).status, 200);
      const slow = await rawExchange(s.port, 'POST /v1/completions HTTP/1.1\r\nHost: x\r\n'); // and then nothing
      assert.match(slow.reply, /^HTTP\/1\.1 408/);
      assert.ok(slow.closedAfterMs < 5_000, `closed after ${slow.closedAfterMs} ms`);
    } finally {
      await s.app.close();
    }
  });
});
