// The benchmarks' arithmetic and their CLI: percentiles by hand, seeded datasets of real
// vocabulary ids, `bench protocol` bytes (cumulative grows, incremental stays), and
// `bench engine` figures that add up. Nothing here asserts on wall time.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { lengthRange, poissonOffsets, randomRequests, vocabularyIds } from '../../src/bench/datasets.js';
import type { EngineReport } from '../../src/bench/engine.js';
import type { ProtocolReport } from '../../src/bench/protocol.js';
import { checkpoints } from '../../src/bench/protocol.js';
import { mean, percentile, slope, stdev, summarize } from '../../src/bench/stats.js';
import { loadModel } from '../../src/model/load.js';
import { PROJECT_ROOT, ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const CLI = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
const fixture = (name: string): string => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === name)!);

function loom(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('bench stats', () => {
  it('percentiles interpolate between sorted values', () => {
    const xs = [4, 1, 3, 2];
    assert.equal(percentile(xs, 0), 1);
    assert.equal(percentile(xs, 50), 2.5); // rank 1.5
    assert.ok(Math.abs(percentile(xs, 99) - 3.97) < 1e-12); // rank 2.97
    assert.equal(percentile(xs, 100), 4);
    assert.equal(percentile([7], 99), 7);
    assert.ok(Number.isNaN(percentile([], 50)));
    const ten = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    assert.ok(Math.abs(percentile(ten, 90) - 91) < 1e-12); // rank 8.1
    assert.deepEqual(summarize([1, 2, 3]), { mean: 2, p50: 2, p99: 2.98 });
  });

  it('mean, sample stdev and least-squares slope', () => {
    assert.equal(mean([2, 4, 4, 4, 5, 5, 7, 9]), 5);
    assert.ok(Math.abs(stdev([2, 4, 4, 4, 5, 5, 7, 9]) - Math.sqrt(32 / 7)) < 1e-12);
    assert.equal(stdev([3]), 0);
    assert.equal(slope([1, 2, 3, 4], [3, 5, 7, 9]), 2);
    assert.equal(slope([1, 2, 3], [5, 5, 5]), 0);
  });
});

describe('bench datasets', () => {
  const tokenizer = loadModel(fixture('qwen2-q8_0')).tokenizer;
  const vocab = vocabularyIds(tokenizer);
  const opts = { numRequests: 50, inputLen: 16, outputLen: 8, rangeRatio: 0.25, seed: 7 };

  it('states the length range [ceil(L·R), L]', () => {
    assert.deepEqual(lengthRange(16, 0.25), [4, 16]);
    assert.deepEqual(lengthRange(10, 0.25), [3, 10]);
    assert.deepEqual(lengthRange(8, 1), [8, 8]);
    assert.deepEqual(lengthRange(3, 0.01), [1, 3]);
    assert.throws(() => lengthRange(8, 0), /range-ratio/);
  });

  it('draws lengths within the range and only real non-special ids', () => {
    assert.ok(vocab.length > 100 && vocab.length < tokenizer.vocabSize);
    const requests = randomRequests(vocab, opts);
    assert.equal(requests.length, 50);
    const inputs = new Set(requests.map((r) => r.promptIds.length));
    for (const r of requests) {
      assert.ok(r.promptIds.length >= 4 && r.promptIds.length <= 16);
      assert.ok(r.outputLen >= 2 && r.outputLen <= 8);
      for (const id of r.promptIds) {
        assert.ok(id >= 0 && id < tokenizer.vocabSize && !tokenizer.isSpecial(id) && !tokenizer.stopIds.has(id), `id ${id}`);
        assert.notEqual(tokenizer.tokenText(id), undefined);
      }
    }
    assert.ok(inputs.size > 3, 'lengths vary');
  });

  it('is reproducible from its seed', () => {
    const a = randomRequests(vocab, opts);
    const b = randomRequests(vocab, opts);
    const c = randomRequests(vocab, { ...opts, seed: 8 });
    assert.deepEqual(a, b);
    assert.notDeepEqual(a, c);
    assert.deepEqual(poissonOffsets(5, 2, 1), poissonOffsets(5, 2, 1));
    const offsets = poissonOffsets(5, 2, 1);
    assert.equal(offsets[0], 0);
    assert.ok(offsets.every((t, i) => i === 0 || t >= offsets[i - 1]!));
  });
});

describe('loom bench', () => {
  it('has --help on bench and its subcommands', () => {
    assert.match(loom('bench', '--help').stdout, /protocol[\s\S]*engine/);
    assert.match(loom('bench', 'protocol', '--help').stdout, /--output-len <n>[\s\S]*default: 2048/);
    assert.match(loom('bench', 'engine', '--help').stdout, /--range-ratio[\s\S]*--prefix-cache/);
  });

  it('protocol: cumulative bytes grow with length, incremental stay constant', () => {
    const r = loom('bench', 'protocol', '--concurrency', '4', '--output-len', '16', '--json');
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout) as ProtocolReport;
    assert.equal(report.results.length, 1);
    const { modes, concurrency, win } = report.results[0]!;
    assert.equal(concurrency, 4);
    assert.deepEqual(checkpoints(16), [1, 16]);
    const inc = modes.incremental.points;
    const cum = modes.cumulative.points;
    assert.deepEqual(inc.map((p) => p.length), [1, 16]);
    assert.deepEqual(cum.map((p) => p.length), [1, 16]);
    // per token: id 4 + logprob 4 + top-5 ids 20 + top-5 logprobs 20 + time 8 = 56 bytes
    assert.deepEqual(inc.map((p) => p.arrayBytes), [4 * 56, 4 * 56]);
    assert.deepEqual(cum.map((p) => p.arrayBytes), [4 * 56, 16 * 4 * 56]);
    assert.equal(modes.incremental.bytesSlopePerToken, 0);
    assert.equal(modes.cumulative.bytesSlopePerToken, 4 * 56);
    for (const p of [...inc, ...cum]) {
      assert.ok(p.cloneOverheadBytes > 0 && p.hostMsPerStep > 0 && p.tokensPerSec > 0);
    }
    assert.ok(win.bytesRatio > 1);
  });

  it('engine: token counts add up and latencies are positive and ordered', () => {
    const model = fixture('qwen2-q8_0');
    const args = ['--num-requests', '4', '--input-len', '16', '--output-len', '8', '--range-ratio', '0.5', '--seed', '3'];
    const r = loom('bench', 'engine', '--model', model, '--backend', 'reference', ...args, '--warmup-runs', '1', '--repeat-runs', '2', '--json');
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout) as EngineReport;
    const requests = randomRequests(vocabularyIds(loadModel(model).tokenizer, report.engine.vocabSize), {
      numRequests: 4, inputLen: 16, outputLen: 8, rangeRatio: 0.5, seed: 3,
    });
    assert.equal(report.runs.length, 2);
    for (const run of report.runs) {
      assert.equal(run.numRequests, 4);
      assert.equal(run.outputTokens, requests.reduce((n, q) => n + q.outputLen, 0));
      assert.equal(run.inputTokens, requests.reduce((n, q) => n + q.promptIds.length, 0));
      for (const s of [run.ttftMs, run.tpotMs, run.itlMs, run.e2eMs]) {
        assert.ok(s.mean > 0 && s.p50 > 0 && s.p50 <= s.p99, JSON.stringify(s));
      }
      assert.ok(run.ttftMs.p99 <= run.e2eMs.p99);
      assert.ok(run.outputTokensPerSec > 0 && run.totalTokensPerSec > run.outputTokensPerSec);
      assert.ok(run.outsideKernelShare >= 0 && run.outsideKernelShare < 1);
      assert.ok(run.steps > 0 && run.meanBatchTokens > 0);
    }
    assert.ok(report.summary['outputTokensPerSec']!.mean > 0);
    assert.ok(report.summary['ttftMs.p50']!.stdev >= 0);
    assert.ok(report.overall.steps === report.runs[0]!.steps + report.runs[1]!.steps);
  });

  it('engine: a bad flag is one line and exit 1', () => {
    const r = loom('bench', 'engine', '--model', fixture('qwen2-q8_0'), '--mode', 'online', '--backend', 'reference');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /^loom: --mode online needs a finite --request-rate\n$/);
  });
});
