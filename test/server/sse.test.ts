// SSE framing over real HTTP: each event is `data: <json>\n\n`, the stream ends with
// `data: [DONE]`; a failure before the first event is a plain HTTP error (status + JSON),
// after it an error event then [DONE]; a client that leaves fires the disconnect signal.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import { SseWriter, disconnectSignal, runStream } from '../../src/server/sse.js';

class Refused extends Error {}
const toError = (err: unknown) => ({ status: err instanceof Refused ? 400 : 500, body: { error: { message: (err as Error).message } } });

describe('SSE', () => {
  let app: FastifyInstance;
  let url: string;
  let disconnected: Promise<void>;
  before(async () => {
    app = Fastify();
    app.get('/ok', async (_req, reply) => {
      const sse = new SseWriter(reply, 1000);
      await runStream(sse, async () => {
        await sse.send({ a: 1 });
        await sse.send({ b: 'x\ny' });
      }, toError);
      return reply;
    });
    app.get('/named', async (_req, reply) => {
      const sse = new SseWriter(reply, 1000);
      await sse.send({ type: 'ping' }, 'ping');
      sse.end();
      return reply;
    });
    app.get('/refused', async (_req, reply) => {
      const sse = new SseWriter(reply, 1000);
      await runStream(sse, async () => {
        throw new Refused('no such token');
      }, toError);
      return reply;
    });
    app.get('/late', async (_req, reply) => {
      const sse = new SseWriter(reply, 1000);
      await runStream(sse, async () => {
        await sse.send({ a: 1 });
        throw new Error('engine died');
      }, toError);
      return reply;
    });
    let fired: () => void;
    disconnected = new Promise((resolve) => (fired = resolve));
    app.get('/forever', async (_req, reply) => {
      const signal = disconnectSignal(reply);
      signal.addEventListener('abort', () => fired());
      const sse = new SseWriter(reply, 1000);
      await runStream(sse, async () => {
        await sse.send({ started: true });
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      }, toError);
      return reply;
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  after(() => app.close());

  it('frames events and ends with [DONE]', async () => {
    const res = await fetch(`${url}/ok`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/event-stream/);
    assert.equal(await res.text(), 'data: {"a":1}\n\ndata: {"b":"x\\ny"}\n\ndata: [DONE]\n\n');
  });

  it('names an event when asked (Anthropic\'s `event: NAME` line before its data)', async () => {
    assert.equal(await (await fetch(`${url}/named`)).text(), 'event: ping\ndata: {"type":"ping"}\n\n');
  });

  it('a failure before the first event is a plain HTTP error', async () => {
    const res = await fetch(`${url}/refused`);
    assert.equal(res.status, 400);
    assert.match(res.headers.get('content-type')!, /^application\/json/);
    assert.deepEqual(await res.json(), { error: { message: 'no such token' } });
  });

  it('a failure after the first event is an error event, then [DONE]', async () => {
    const res = await fetch(`${url}/late`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'data: {"a":1}\n\ndata: {"error":{"message":"engine died"}}\n\ndata: [DONE]\n\n');
  });

  it('a client that leaves fires the disconnect signal', async () => {
    await new Promise<void>((resolve) => {
      const req = request(`${url}/forever`, (res) => res.once('data', () => (req.destroy(), resolve())));
      req.end();
    });
    await disconnected;
  });
});
