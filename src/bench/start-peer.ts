// `loom bench start-peer`: how long a server takes from its start to the first token, and the
// memory it holds, loom serve against llama-server on the same GGUF file (issue 36: a whole-size
// memory-mapped model). Each round starts one server as a child process, polls /health until it
// answers 200 (ready), reads the process's VmRSS / VmHWM / RssAnon / RssFile from
// /proc/PID/status (after load), sends one short streamed completion at once, reads them again
// when the first token arrives, and stops the server. The sides alternate which goes first, so a
// page cache warmed by one start helps both alike (the first round after writing or copying a
// file reads it from the cache too; a cold start needs the cache dropped between rounds, which
// this does not do).
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LoomError } from '../errors.js';
import { freePort, llamaServerArgs } from './llama-server.js';
import { sseData } from './sse-data.js';

const CLI = fileURLToPath(new URL('../cli.js', import.meta.url));

export type StartSide = 'loom' | 'llama.cpp';

export interface StartPeerOptions {
  readonly model: string;
  /** a llama-server binary: without one, loom alone is measured */
  readonly llamaServer?: string;
  readonly rounds: number;
  readonly threads: number;
  /** context length of both servers (loom --max-model-len, llama-server -c) */
  readonly ctxSize: number;
  /** tokens the request asks for (the first one is the measured one) */
  readonly maxTokens: number;
  readonly prompt: string;
  /** how long a start may take before the round fails, ms */
  readonly timeoutMs: number;
  readonly loomArgs?: readonly string[];
  readonly llamaArgs?: readonly string[];
}

/** /proc/PID/status memory figures, bytes */
export interface Memory {
  readonly rss: number;
  /** the high-water mark of rss */
  readonly hwm: number;
  readonly anon: number;
  readonly file: number;
}

export interface StartRound {
  readonly side: StartSide;
  readonly round: number;
  /** spawn → /health 200, ms */
  readonly readyMs: number;
  /** spawn → the first streamed token, ms */
  readonly firstTokenMs: number;
  /** request sent → its first token, ms */
  readonly ttftMs: number;
  readonly afterLoad: Memory;
  readonly afterFirstToken: Memory;
}

/** Memory figures of a running process (Linux), bytes. */
export function processMemory(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string): number => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(status);
    return m ? Number(m[1]) * 1024 : 0;
  };
  return { rss: kb('VmRSS'), hwm: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile') };
}

interface Started {
  readonly child: ChildProcess;
  readonly url: string;
  readonly t0: number;
  readonly stderr: () => string;
}

/** Spawns the side's server; resolves once it listens (loom prints its port; llama-server's is chosen here). */
async function spawnSide(side: StartSide, o: StartPeerOptions): Promise<Started> {
  const port = side === 'loom' ? 0 : await freePort();
  const [cmd, args] =
    side === 'loom'
      ? [process.execPath, [CLI, 'serve', '--model', o.model, '--port', '0', '--threads', String(o.threads), '--max-model-len', String(o.ctxSize), '--max-num-seqs', '1', ...(o.loomArgs ?? [])]]
      : [o.llamaServer!, [...llamaServerArgs(o.model, port, { threads: o.threads, parallel: 1, slotContext: o.ctxSize }), ...(o.llamaArgs ?? [])]];
  const t0 = performance.now();
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let text = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    text += chunk;
    if (text.length > 1 << 20) text = text.slice(-(1 << 19));
  });
  const started = { child, t0, stderr: () => text };
  if (side === 'llama.cpp') return { ...started, url: `http://127.0.0.1:${port}` };
  const loomPort = await until(o.timeoutMs, child, () => /on http:\/\/[^\s]*:(\d+)/.exec(text)?.[1], () => `loom serve exited before listening: ${lastLine(text)}`);
  return { ...started, url: `http://127.0.0.1:${loomPort}` };
}

function lastLine(text: string): string {
  return text.trim().split('\n').slice(-2).join(' | ');
}

/** Polls `probe` every 20 ms until it gives a value; fails when the child exits or the time is up. */
async function until<T>(timeoutMs: number, child: ChildProcess, probe: () => T | undefined | Promise<T | undefined>, exited: () => string): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (child.exitCode !== null || child.signalCode !== null) throw new LoomError(exited());
    if (performance.now() > deadline) throw new LoomError(`no answer within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function healthy(url: string): Promise<true | undefined> {
  try {
    return (await fetch(`${url}/health`)).ok ? true : undefined;
  } catch {
    return undefined; // not listening yet
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

/** One streamed /v1/completions request; calls onFirst when the first token's event arrives. */
async function firstToken(url: string, o: StartPeerOptions, onFirst: () => void): Promise<void> {
  const list = (await (await fetch(`${url}/v1/models`)).json()) as { data?: { id: string }[] };
  const body = { model: list.data?.[0]?.id ?? 'default', prompt: o.prompt, max_tokens: o.maxTokens, temperature: 0, stream: true };
  const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok || !res.body) throw new LoomError(`${url}/v1/completions: HTTP ${res.status}: ${await res.text()}`);
  let first = false;
  for await (const data of sseData(res.body)) {
    if (first || data === '[DONE]') continue;
    // neither server sends an event before the first token: the first choice is it (its text may be part of a character)
    const event = JSON.parse(data) as { choices?: unknown[] };
    if (event.choices?.length) {
      first = true;
      onFirst();
    }
  }
  if (!first) throw new LoomError(`${url}: the stream ended without a token`);
}

/** One start of a side: ready, memory after load, the first token, memory then; stopped after. */
export async function measureStart(side: StartSide, round: number, o: StartPeerOptions): Promise<StartRound> {
  const s = await spawnSide(side, o);
  try {
    await until(o.timeoutMs, s.child, () => healthy(s.url), () => `${side} exited before it was ready: ${lastLine(s.stderr())}`);
    const readyMs = performance.now() - s.t0;
    const afterLoad = processMemory(s.child.pid!);
    const sent = performance.now();
    let at = 0;
    let afterFirstToken: Memory | undefined;
    await firstToken(s.url, o, () => {
      at = performance.now();
      afterFirstToken = processMemory(s.child.pid!);
    });
    return { side, round, readyMs, firstTokenMs: at - s.t0, ttftMs: at - sent, afterLoad, afterFirstToken: afterFirstToken! };
  } catch (e) {
    throw new LoomError(`${side}, round ${round}: ${(e as Error).message}`);
  } finally {
    await stop(s.child);
  }
}

export interface StartPeerReport {
  readonly settings: StartPeerOptions & { readonly llamaServerArgs?: readonly string[] };
  readonly rounds: StartRound[];
}

export async function runStartPeer(o: StartPeerOptions, log: (line: string) => void): Promise<StartPeerReport> {
  const sides: StartSide[] = o.llamaServer ? ['loom', 'llama.cpp'] : ['loom'];
  const rounds: StartRound[] = [];
  for (let r = 0; r < o.rounds; r++) {
    // alternate which side starts first, so a drifting machine load or page cache falls on both
    for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
      const m = await measureStart(side, r, o);
      rounds.push(m);
      log(`${side} round ${r}: ready ${(m.readyMs / 1000).toFixed(2)} s, first token ${(m.firstTokenMs / 1000).toFixed(2)} s, RSS ${(m.afterLoad.rss / 2 ** 20).toFixed(0)} MiB after load, ${(m.afterFirstToken.rss / 2 ** 20).toFixed(0)} MiB at the first token`);
    }
  }
  const llamaServerArgsUsed = o.llamaServer ? [...llamaServerArgs(o.model, 0, { threads: o.threads, parallel: 1, slotContext: o.ctxSize }), ...(o.llamaArgs ?? [])] : undefined;
  return { settings: { ...o, ...(llamaServerArgsUsed && { llamaServerArgs: llamaServerArgsUsed }) }, rounds };
}
