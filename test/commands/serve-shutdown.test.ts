// `loom serve` shuts down on time whatever its clients do: an idle connection, half a
// request head (slowloris), a stream and a plain request held up by an engine that never
// finishes a step (the test fault switch, with the watchdog off). SIGTERM ends them all and
// the process exits 0 well within --shutdown-timeout + 1 s; a second signal exits at once.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { FAULT_ENV } from '../../src/engine/fault.js';
import { PROJECT_ROOT, ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const model = () => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'gpt2-q8_0')!);

async function startServe(args: string[], env: Record<string, string> = {}): Promise<{ child: ChildProcess; port: number; log: () => string }> {
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'dist', 'src', 'cli.js'), 'serve', '--model', model(), '--port', '0', '--backend', 'reference', '--kv-cache-memory', '16MiB', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  let log = '';
  child.stderr!.setEncoding('utf8');
  const port = await new Promise<number>((resolve, reject) => {
    child.stderr!.on('data', (chunk: string) => {
      log += chunk;
      const m = /on http:\/\/[^:]+:(\d+)/.exec(log);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', () => reject(new Error(`serve exited early: ${log}`)));
  });
  return { child, port, log: () => log };
}

function rawSocket(port: number, bytes: string): Socket {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  if (bytes) socket.write(bytes);
  return socket;
}

const request = (port: number, stream: boolean) =>
  fetch(`http://127.0.0.1:${port}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt2-q8_0', prompt: 'hello', max_tokens: 100, temperature: 0, ignore_eos: true, stream }),
  });

async function exitAfterSignal(child: ChildProcess, signals: NodeJS.Signals[]): Promise<{ code: number | null; ms: number }> {
  const start = Date.now();
  const exited = once(child, 'exit') as Promise<[number | null]>;
  for (const s of signals) child.kill(s);
  const [code] = await exited;
  return { code, ms: Date.now() - start };
}

describe('loom serve shutdown', () => {
  it('ends idle, half-sent, streaming and plain requests at --shutdown-timeout and exits 0', async () => {
    // the engine hangs in its third step: both requests stay in flight until the deadline
    const s = await startServe(['--shutdown-timeout', '1', '--engine-step-timeout', '0'], { [FAULT_ENV]: 'hang@3' });
    const idle = rawSocket(s.port, '');
    const slowloris = rawSocket(s.port, 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: appl');
    const streamed = await request(s.port, true);
    const reader = streamed.body!.getReader();
    const plain = request(s.port, false);
    await reader.read(); // the stream is under way
    await sleep(200);
    const exit = exitAfterSignal(s.child, ['SIGTERM']);
    let body = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) body += new TextDecoder().decode(r.value);
    assert.match(body, /data: \{"error":\{"message":"the engine was shut down","type":"server_error".*\n\ndata: \[DONE\]\n\n$/s);
    const p = await plain;
    assert.equal(p.status, 503);
    assert.match(await p.text(), /"code":"engine_unavailable"/);
    const { code, ms } = await exit;
    assert.equal(code, 0, s.log());
    // the bound is timeout + 1 s; the slack is for a loaded CI machine (it took 28-40 s before)
    assert.ok(ms < 1_000 + 1_000 + 1_500, `exited ${ms} ms after SIGTERM`);
    assert.ok(idle.destroyed || (await once(idle, 'close'), true));
    assert.ok(slowloris.destroyed || (await once(slowloris, 'close'), true));
    assert.match(s.log(), /SIGTERM: no new requests; 2 in flight get 1s to finish/);
    assert.match(s.log(), /2 requests still in flight after 1s: ending them/);
  });

  it('with nothing in flight, exits at once even with idle and half-open connections', async () => {
    const s = await startServe(['--shutdown-timeout', '20']);
    assert.equal((await fetch(`http://127.0.0.1:${s.port}/health`)).status, 200); // a keep-alive connection, now idle
    const sockets = [rawSocket(s.port, ''), rawSocket(s.port, 'GET /health HTTP/1.1\r\nHo')];
    await sleep(200);
    const { code, ms } = await exitAfterSignal(s.child, ['SIGTERM']);
    assert.equal(code, 0, s.log());
    assert.ok(ms < 5_000, `exited ${ms} ms after SIGTERM (the timeout was 20 s)`);
    for (const socket of sockets) assert.ok(socket.destroyed || (await once(socket, 'close'), true));
  });

  it('a second signal exits at once', async () => {
    const s = await startServe(['--shutdown-timeout', '60', '--engine-step-timeout', '0'], { [FAULT_ENV]: 'hang@2' });
    const pending = request(s.port, false).catch(() => undefined);
    await sleep(300);
    s.child.kill('SIGTERM');
    await sleep(200);
    const { code, ms } = await exitAfterSignal(s.child, ['SIGINT']);
    assert.equal(code, 1);
    assert.ok(ms < 5_000, `exited ${ms} ms after the second signal (the timeout was 60 s)`);
    assert.match(s.log(), /SIGINT again: exiting now/);
    await pending;
  });
});
