// bench start-peer: a real `loom serve` started on a tiny gpt-oss MXFP4_MOE fixture, measured
// from spawn to /health and to its first streamed token, with its memory from /proc; with
// LOOM_LLAMA_SERVER=<llama-server binary>, llama-server beside it on the same file. And the
// report's medians on made-up rounds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatStartPeer, startMedians } from '../../src/bench/start-peer-report.js';
import { processMemory, runStartPeer } from '../../src/bench/start-peer.js';
import type { Memory, StartPeerOptions, StartRound } from '../../src/bench/start-peer.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const MODEL = (): string => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'gptoss-mxfp4')!);

function options(llamaServer?: string): StartPeerOptions {
  return { model: MODEL(), rounds: 1, threads: 1, ctxSize: 256, maxTokens: 2, prompt: 'Hello', timeoutMs: 120_000, ...(llamaServer && { llamaServer }) };
}

function checkRound(r: StartRound): void {
  assert.ok(r.readyMs > 0 && r.firstTokenMs > r.readyMs, `ready ${r.readyMs} ms, first token ${r.firstTokenMs} ms`);
  assert.ok(r.ttftMs > 0 && r.ttftMs <= r.firstTokenMs - r.readyMs + 1);
  for (const m of [r.afterLoad, r.afterFirstToken]) {
    assert.ok(m.rss > 1 << 20 && m.hwm >= m.rss && m.file > 0 && m.anon > 0 && m.file + m.anon <= m.rss + 1, JSON.stringify(m));
  }
  assert.ok(r.afterFirstToken.hwm >= r.afterLoad.hwm);
}

describe('bench start-peer', () => {
  it('reads VmRSS, VmHWM, RssAnon and RssFile of a process', () => {
    const m = processMemory(process.pid);
    assert.ok(m.rss > 1 << 20 && m.hwm >= m.rss && m.anon > 0 && m.file > 0);
    assert.ok(Math.abs(m.rss - process.memoryUsage().rss) < m.rss / 4);
  });

  it('times a loom serve start to /health and to the first streamed token, and reports its memory', async () => {
    const lines: string[] = [];
    const report = await runStartPeer(options(), (line) => lines.push(line));
    assert.equal(report.rounds.length, 1);
    const [r] = report.rounds;
    assert.equal(r!.side, 'loom');
    checkRound(r!);
    assert.match(lines[0]!, /^loom round 0: ready [0-9.]+ s, first token/);
    const text = formatStartPeer(report);
    assert.match(text, /loom alone \(no --llama-server\)/);
    assert.match(text, /medians\n.*ready s/);
  });

  const binary = process.env.LOOM_LLAMA_SERVER;
  it('against llama-server on the same file: both sides measured, alternating', { skip: binary ? false : 'set LOOM_LLAMA_SERVER to a llama-server binary' }, async () => {
    const report = await runStartPeer({ ...options(binary), rounds: 2 }, () => {});
    assert.deepEqual(report.rounds.map((r) => r.side), ['loom', 'llama.cpp', 'llama.cpp', 'loom']);
    report.rounds.forEach(checkRound);
    assert.ok(report.settings.llamaServerArgs!.includes('-c'));
    assert.match(formatStartPeer(report), /llama\.cpp \/ loom: first token [0-9.]+x/);
  });

  it('takes each side\'s medians', () => {
    const mem = (mib: number): Memory => ({ rss: mib * 2 ** 20, hwm: mib * 2 ** 20, anon: 2 ** 20, file: (mib - 1) * 2 ** 20 });
    const round = (side: StartRound['side'], round: number, ms: number, mib: number): StartRound =>
      ({ side, round, readyMs: ms, firstTokenMs: ms + 100, ttftMs: 100, afterLoad: mem(mib), afterFirstToken: mem(mib + 10) });
    const rounds = [round('loom', 0, 1000, 100), round('llama.cpp', 0, 9000, 900), round('llama.cpp', 1, 7000, 700), round('loom', 1, 3000, 300), round('loom', 2, 2000, 200)];
    const [loom, llama] = startMedians(rounds);
    assert.equal(loom!.side, 'loom');
    assert.equal(loom!.readyMs, 2000);
    assert.equal(loom!.afterLoad.rss, 200 * 2 ** 20);
    assert.equal(llama!.firstTokenMs, 8100);
    assert.equal(llama!.afterFirstToken.rss, 810 * 2 ** 20);
    const text = formatStartPeer({ settings: { ...options('/x'), rounds: 3, llamaServerArgs: ['-m', 'f'] }, rounds });
    assert.match(text, /first token 3\.86x the time, RSS after load 4\.00x/);
  });
});
