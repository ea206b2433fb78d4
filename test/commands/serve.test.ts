// `loom serve` as a process: it starts, serves, and on SIGTERM stops taking requests,
// lets the one in flight finish, and exits 0.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PROJECT_ROOT, ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

describe('loom serve', () => {
  it('finishes in-flight requests on SIGTERM and exits 0', async () => {
    const model = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'gpt2-q8_0')!);
    const child = spawn(process.execPath, [join(PROJECT_ROOT, 'dist', 'src', 'cli.js'), 'serve', '--model', model, '--port', '0', '--backend', 'reference', '--kv-cache-memory', '16MiB'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    child.stderr.setEncoding('utf8');
    const port = await new Promise<number>((resolve, reject) => {
      child.stderr.on('data', (chunk: string) => {
        log += chunk;
        const m = /on http:\/\/[^:]+:(\d+)/.exec(log);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', () => reject(new Error(`serve exited early: ${log}`)));
    });
    const url = `http://127.0.0.1:${port}`;
    assert.equal((await fetch(`${url}/health`)).status, 200);
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt2-q8_0', prompt: 'hello', max_tokens: 60, temperature: 0, ignore_eos: true, stream: true }),
    });
    const reader = res.body!.getReader();
    await reader.read(); // the stream is under way
    child.kill('SIGTERM');
    let body = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) body += new TextDecoder().decode(r.value);
    assert.match(body, /"finish_reason":"length"/, 'the in-flight request finished');
    assert.match(body, /data: \[DONE\]/);
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0, log);
    await assert.rejects(fetch(`${url}/health`), 'no longer listening');
  });

  it('a busy port is one line naming the address, and exit 1', async () => {
    const model = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'gpt2-q8_0')!);
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const child = spawn(process.execPath, [join(PROJECT_ROOT, 'dist', 'src', 'cli.js'), 'serve', '--model', model, '--port', String(port), '--backend', 'reference', '--kv-cache-memory', '16MiB'], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let log = '';
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk: string) => (log += chunk));
      const [code] = (await once(child, 'exit')) as [number | null];
      assert.equal(code, 1);
      assert.equal(log.trim().split('\n').length, 1, log);
      assert.match(log, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`));
    } finally {
      blocker.close();
    }
  });

  it('option errors name the option', () => {
    const model = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'gpt2-q8_0')!);
    const r = spawnSync(process.execPath, [join(PROJECT_ROOT, 'dist', 'src', 'cli.js'), 'generate', '-m', model, '-p', 'hello', '--max-tokens', '0'], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /--max-tokens must be at least 1, got 0/);
  });
});
