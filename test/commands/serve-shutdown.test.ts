// `loom serve` shuts down on time whatever its clients do: an idle connection, half a
// request head (slowloris), a stream and a plain request held up by an engine that never
// finishes a step (the test fault switch, with the watchdog off). SIGTERM ends them all at
// --shutdown-timeout and the process exits 0; a second signal exits at once. No wall time is
// asserted (a loaded machine is slow): "at once" is shown by a timeout of an hour that the
// process does not wait for, and every wait is on a condition (a log line, a metric, a socket).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FAULT_ENV } from '../../src/engine/fault.js';
import { PROJECT_ROOT, ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';
import { metricValue, waitUntil } from '../fixtures/wait.js';

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

async function exitAfterSignal(child: ChildProcess, signals: NodeJS.Signals[]): Promise<number | null> {
  const exited = once(child, 'exit') as Promise<[number | null]>;
  for (const s of signals) child.kill(s);
  const [code] = await exited;
  return code;
}

/** until the engine reports `n` sequences running (its gauge, set after every step) */
async function running(port: number, n: number): Promise<void> {
  await waitUntil(async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return metricValue(text, 'loom:num_requests_running') === n;
  }, `${n} requests running`);
}

/** a socket connected, and what it was given to send written */
async function rawSocketReady(port: number, bytes: string): Promise<Socket> {
  const socket = rawSocket(port, '');
  await once(socket, 'connect');
  if (bytes) await new Promise<void>((resolve) => socket.write(bytes, () => resolve()));
  return socket;
}

/** an hour: a process that waited for it would hang the test (its own timeout fails it) */
const HOUR = '3600';
const GUARD = { timeout: 300_000 };

describe('loom serve shutdown', () => {
  it('ends idle, half-sent, streaming and plain requests at --shutdown-timeout and exits 0', GUARD, async () => {
    // the engine hangs in its 60th step, before either request's 100 tokens: both stay
    // in flight until the deadline
    const s = await startServe(['--shutdown-timeout', '1', '--engine-step-timeout', '0'], { [FAULT_ENV]: 'hang@60' });
    const idle = await rawSocketReady(s.port, '');
    const slowloris = await rawSocketReady(s.port, 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: appl');
    const streamed = await request(s.port, true);
    const reader = streamed.body!.getReader();
    const plain = request(s.port, false);
    await reader.read(); // the stream is under way
    await running(s.port, 2); // and the plain request is in the engine too
    const exit = exitAfterSignal(s.child, ['SIGTERM']);
    let body = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) body += new TextDecoder().decode(r.value);
    assert.match(body, /data: \{"error":\{"message":"the engine was shut down","type":"server_error".*\n\ndata: \[DONE\]\n\n$/s);
    const p = await plain;
    assert.equal(p.status, 503);
    assert.match(await p.text(), /"code":"engine_unavailable"/);
    assert.equal(await exit, 0, s.log());
    assert.ok(idle.destroyed || (await once(idle, 'close'), true));
    assert.ok(slowloris.destroyed || (await once(slowloris, 'close'), true));
    assert.match(s.log(), /SIGTERM: no new requests; 2 in flight get 1s to finish/);
    assert.match(s.log(), /2 requests still in flight after 1s: ending them/);
  });

  it('with nothing in flight, exits at once even with idle and half-open connections', GUARD, async () => {
    const s = await startServe(['--shutdown-timeout', HOUR]);
    assert.equal((await fetch(`http://127.0.0.1:${s.port}/health`)).status, 200); // a keep-alive connection, now idle
    const sockets = [await rawSocketReady(s.port, ''), await rawSocketReady(s.port, 'GET /health HTTP/1.1\r\nHo')];
    assert.equal(await exitAfterSignal(s.child, ['SIGTERM']), 0, s.log());
    assert.match(s.log(), /SIGTERM: no new requests; 0 in flight get 3600s to finish/);
    assert.doesNotMatch(s.log(), /still in flight|overran/);
    for (const socket of sockets) assert.ok(socket.destroyed || (await once(socket, 'close'), true));
  });

  it('a second signal exits at once', GUARD, async () => {
    const s = await startServe(['--shutdown-timeout', HOUR, '--engine-step-timeout', '0'], { [FAULT_ENV]: 'hang@4' });
    const pending = request(s.port, false).catch(() => undefined);
    await running(s.port, 1);
    s.child.kill('SIGTERM');
    await waitUntil(() => /SIGTERM: no new requests; 1 in flight/.test(s.log()), 'the first signal to be seen');
    assert.equal(await exitAfterSignal(s.child, ['SIGINT']), 1);
    assert.match(s.log(), /SIGINT again: exiting now/);
    await pending;
  });
});
