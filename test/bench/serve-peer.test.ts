// bench serve-peer without building llama.cpp: the clear errors before a build, the
// llama-server command line, and the report's medians and ratios on made-up runs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ensureLlamaServer, llamaServerArgs } from '../../src/bench/llama-server.js';
import { formatServePeer, summarizeRuns } from '../../src/bench/serve-peer-report.js';
import type { PeerRun, ServePeerResult } from '../../src/bench/serve-peer.js';
import type { ServeReport } from '../../src/bench/serve.js';
import { latency } from '../../src/bench/serve-metrics.js';

describe('bench serve-peer: llama-server build', () => {
  it('says what is missing: the source bundle, then cmake', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-peer-'));
    const path = process.env.PATH;
    try {
      await assert.rejects(ensureLlamaServer(() => {}, join(dir, 'none.bundle'), dir), /llama\.cpp's source is not installed: .*none\.bundle is missing/);
      // a real bundle, and a PATH where git is the only tool
      const repo = join(dir, 'repo');
      mkdirSync(repo);
      const git = (...args: string[]) => assert.equal(spawnSync('git', args, { cwd: repo }).status, 0, `git ${args.join(' ')}`);
      git('init', '-q');
      writeFileSync(join(repo, 'CMakeLists.txt'), 'project(x)\n');
      git('add', '.');
      git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'x');
      git('bundle', 'create', join(dir, 'src.bundle'), 'HEAD');
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      const realGit = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim();
      symlinkSync(realGit, join(bin, 'git'));
      process.env.PATH = bin;
      await assert.rejects(ensureLlamaServer(() => {}, join(dir, 'src.bundle'), join(dir, 'cache')), /building llama-server needs cmake/);
    } finally {
      process.env.PATH = path;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs llama-server with a slot per request, continuous batching, the threads given, a slot holding prompt + output', () => {
    const args = llamaServerArgs('/m.gguf', 8123, { threads: 2, parallel: 64, slotContext: 128 + 128 + 64 });
    const at = (flag: string) => args[args.indexOf(flag) + 1];
    assert.equal(at('-m'), '/m.gguf');
    assert.equal(at('-np'), '64');
    assert.ok(args.includes('-cb'));
    assert.equal(at('-t'), '2');
    assert.equal(at('-tb'), '2');
    assert.equal(at('-c'), String(64 * 320));
    assert.equal(at('--port'), '8123');
  });
});

function report(rate: number, tput: number, ttft: number[], itl: number[], failed = 0): ServeReport {
  const lat = latency;
  return {
    date: '2026-01-01T00:00:00Z',
    settings: { requestRate: rate } as ServeReport['settings'],
    figures: {
      completed: 10,
      failed,
      errors: [],
      durationS: 1,
      totalInputTokens: 0,
      totalOutputTokens: 0,
      requestThroughput: 0,
      inputThroughput: 0,
      outputThroughput: tput,
      totalTokenThroughput: 0,
      ttftMs: lat(ttft),
      tpotMs: lat(itl),
      itlMs: lat(itl),
      e2elMs: lat(ttft),
    },
  };
}

describe('bench serve-peer: report', () => {
  const runs: PeerRun[] = [
    { system: 'loom', round: 0, load: 0.1, report: report(Infinity, 600, [100], [10]) },
    { system: 'llama-server', round: 0, load: 0.2, report: report(Infinity, 200, [400], [40], 1) },
    { system: 'llama-server', round: 1, load: 0.2, report: report(Infinity, 300, [300], [30], 1) },
    { system: 'loom', round: 1, load: 0.1, report: report(Infinity, 500, [200], [20]) },
    { system: 'loom', round: 0, load: 0.1, report: report(2, 100, [50], [5]) },
    { system: 'llama-server', round: 0, load: 0.1, report: report(2, 100, [100], [10]) },
  ];
  it('takes the median over rounds, per rate and system', () => {
    const [inf, two] = summarizeRuns(runs);
    assert.equal(inf!.rate, Infinity);
    assert.deepEqual(inf!.figures.loom.slice(0, 3), [550, 150, 150]);
    assert.deepEqual(inf!.figures['llama-server'].slice(0, 3), [250, 350, 350]);
    assert.equal(inf!.figures['llama-server'][7], 1, 'failed requests');
    assert.equal(two!.rate, 2);
  });
  it('prints every run and the ratios loom / llama-server', () => {
    const r: ServePeerResult = {
      options: { model: '/m.gguf', threads: 2, rounds: 2, rates: [Infinity, 2], numPrompts: 10, maxConcurrency: 4, inputLen: 8, outputLen: 8, seed: 0, loomArgs: [] },
      llamaServer: { binary: '/b/llama-server', commit: 'a'.repeat(40), args: ['-m', '/m.gguf', '--port', '1', '-np', '4'] },
      loomArgs: ['--threads', '2'],
      runs,
      warnings: [],
    };
    const text = formatServePeer(r);
    assert.match(text, /loom #2/);
    assert.match(text, /llama-server #1/);
    assert.match(text, /rate inf: median over rounds/);
    assert.match(text, /output tok\/s\s+550\s+250\s+2\.20×/);
    assert.match(text, /TTFT median \(ms\)\s+150\s+350\s+0\.429×/);
    assert.match(text, /rate 2: median over rounds/);
  });
});
