// `bench serve` against a fake OpenAI server whose chunk times are known (every figure is
// checked against the schedule, with room for timer jitter) and against a real `loom serve`
// on a fixture model with each backend. No assertion on absolute speed.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { computeFigures } from '../../src/bench/serve-metrics.js';
import { keepShareGPT, randomServeRequests } from '../../src/bench/serve-dataset.js';
import { localTokenizer } from '../../src/bench/serve-tokenizer.js';
import { runServeBench } from '../../src/bench/serve.js';
import type { ServeBenchOptions } from '../../src/bench/serve.js';
import { loadModel } from '../../src/model/load.js';
import { PROJECT_ROOT, ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const CLI = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
const MODEL = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'qwen2-q8_0')!);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface FakeOptions {
  /** the first `fail` requests get a 500 */
  readonly fail: number;
  /** TTFT of the i-th streamed answer (ms) */
  readonly ttft: (i: number) => number;
  /** gap between output chunks (ms) */
  readonly gap: number;
  readonly chunks: readonly string[];
  /** send a usage chunk (prompt_tokens 10, completion_tokens = chunks) */
  readonly usage: boolean;
}

const PROMPT_TOKENS = 10;

/** An OpenAI-compatible server that streams `chunks` on a fixed schedule. */
async function fakeOpenAI(o: FakeOptions): Promise<{ url: string; server: Server }> {
  let arrivals = 0;
  let streamed = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', async () => {
      const chat = req.url === '/v1/chat/completions';
      if (arrivals++ < o.fail) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'fake overload', type: 'server_error' } }));
        return;
      }
      const parsed = JSON.parse(body) as { stream?: boolean };
      assert.equal(parsed.stream, true);
      const i = streamed++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const event = (x: object): boolean => res.write(`data: ${JSON.stringify(x)}\n\n`);
      const choice = (text: string) => (chat ? { index: 0, delta: { content: text } } : { index: 0, text });
      if (chat) event({ choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] }); // no output: not a token
      await sleep(o.ttft(i));
      for (let k = 0; k < o.chunks.length; k++) {
        if (k > 0) await sleep(o.gap);
        event({ choices: [choice(o.chunks[k]!)] });
      }
      if (o.usage) event({ choices: [], usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: o.chunks.length, total_tokens: PROMPT_TOKENS + o.chunks.length } });
      res.end('data: [DONE]\n\n');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const base = (url: string, over: Partial<ServeBenchOptions> = {}): ServeBenchOptions => ({
  baseUrl: url,
  backend: 'openai',
  model: 'fake',
  tokenizer: MODEL,
  datasetName: 'random',
  numPrompts: 8,
  randomInputLen: 16,
  randomOutputLen: 5,
  randomRangeRatio: 1,
  requestRate: Infinity,
  seed: 1,
  warmupRequests: 0,
  stream: true,
  ignoreEos: true,
  ...over,
});

/** |actual − expected| ≤ slack below and `late` above (timers only ever fire late) */
/**
 * A figure of a timed schedule: timers never fire early, so it is at least what the schedule
 * says (minus rounding); a busy machine only makes it later, by up to `late` ms on an idle one.
 * The upper side gets LOAD_SLACK more, so a loaded CI host does not fail a test of arithmetic.
 */
const LOAD_SLACK = 3000;
function near(actual: number, expected: number, late: number, what: string, early = 3): void {
  const hi = expected + late + LOAD_SLACK;
  assert.ok(actual >= expected - early && actual <= hi, `${what}: ${actual} not within [${expected - early}, ${hi}]`);
}

describe('bench serve against a fake OpenAI server with a known schedule', () => {
  it('computes TTFT, TPOT, ITL, E2E, throughputs and token totals from the chunk times; counts failures', async () => {
    // 6 streamed answers with TTFT 150, 210, …, 450 ms, then 4 more chunks 80 ms apart.
    // Client and fake server share this process (and the machine may be busy): late timers
    // get tens of ms of room; the schedule's spacing is larger than that.
    const { url, server } = await fakeOpenAI({ fail: 2, ttft: (i) => 150 + 60 * i, gap: 80, chunks: ['a', 'b', 'c', 'd', 'e'], usage: true });
    try {
      const r = await runServeBench(base(url));
      const f = r.figures;
      const close = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-9 * Math.max(1, Math.abs(b)), `${a} ≠ ${b}`);
      assert.equal(f.completed, 6);
      assert.equal(f.failed, 2);
      assert.equal(f.errors.length, 1);
      assert.equal(f.errors[0]!.count, 2);
      assert.match(f.errors[0]!.message, /HTTP 500: fake overload/);
      assert.equal(f.totalInputTokens, 6 * PROMPT_TOKENS, 'input tokens from usage');
      assert.equal(f.totalOutputTokens, 6 * 5, 'output tokens from usage');
      // TTFT multiset {150, 210, 270, 330, 390, 450}: mean 300, median 300, p99 = 390 + 0.95·60
      near(f.ttftMs.mean, 300, 80, 'mean TTFT');
      near(f.ttftMs.median, 300, 80, 'median TTFT');
      near(f.ttftMs.p99, 447, 80, 'p99 TTFT');
      // 4 gaps of 80 ms per answer; late timers can bunch chunks on a busy host, so the gaps
      // are checked through identities: each answer's 4 ITLs sum to E2E − TTFT = 4 · TPOT
      close(f.itlMs.mean, f.tpotMs.mean);
      // E2E = TTFT + 4·80: mean 620
      near(f.e2elMs.mean, 620, 120, 'mean E2E');
      near(f.e2elMs.median, 620, 120, 'median E2E');
      // the slowest answer ends at 450 + 320 ms; the duration covers it
      near(f.durationS * 1000, 770, 500, 'duration');
      close(f.requestThroughput, 6 / f.durationS);
      close(f.inputThroughput, 60 / f.durationS);
      close(f.outputThroughput, 30 / f.durationS);
      close(f.totalTokenThroughput, 90 / f.durationS);
      // TPOT of each request = (E2E − TTFT)/(n − 1), so its mean matches the mean of those
      close(f.tpotMs.mean, (f.e2elMs.mean - f.ttftMs.mean) / 4);
    } finally {
      server.close();
    }
  });

  it('chat without usage: token counts come from the tokenizer; --max-concurrency serialises the schedule', async () => {
    const chunks = [' Once', ' upon', ' a', ' time'];
    const { url, server } = await fakeOpenAI({ fail: 0, ttft: () => 60, gap: 30, chunks, usage: false });
    try {
      const r = await runServeBench(base(url, { backend: 'openai-chat', numPrompts: 4, maxConcurrency: 1, warmupRequests: 1 }));
      const f = r.figures;
      assert.equal(f.completed, 4);
      const tok = loadModel(MODEL).tokenizer;
      assert.equal(f.totalOutputTokens, 4 * tok.encode(chunks.join(''), { addSpecial: false }).length);
      const prompts = await randomServeRequests(localTokenizer(MODEL), { numPrompts: 4, inputLen: 16, outputLen: 5, rangeRatio: 1, seed: 1 });
      assert.equal(f.totalInputTokens, prompts.reduce((a, p) => a + p.promptLen, 0), 'no usage: the prompt lengths of the dataset');
      assert.ok(prompts.every((p) => Math.abs(p.promptLen - 16) <= 2), 'prompts re-tokenize to about their drawn length');
      near(f.ttftMs.mean, 60, 60, 'mean TTFT');
      near(f.e2elMs.mean, 60 + 3 * 30, 60, 'mean E2E');
      // one at a time: 4 × (60 + 3·30) ms
      near(f.durationS * 1000, 600, 300, 'duration');
    } finally {
      server.close();
    }
  });

  it('an unreachable server is one error line after the warmup', async () => {
    const { url, server } = await fakeOpenAI({ fail: 100, ttft: () => 0, gap: 0, chunks: ['x'], usage: true });
    try {
      await assert.rejects(runServeBench(base(url, { warmupRequests: 1 })), /warmup request failed.*HTTP 500: fake overload/);
    } finally {
      server.close();
    }
  });

  it('figures of no successful request are NaN, not a crash', () => {
    const f = computeFigures([], 1000);
    assert.equal(f.completed, 0);
    assert.ok(Number.isNaN(f.ttftMs.mean));
  });

  it('ShareGPT filter: vLLM bounds', () => {
    assert.equal(keepShareGPT(3, 100, false), false);
    assert.equal(keepShareGPT(4, 3, false), false);
    assert.equal(keepShareGPT(4, 3, true), true);
    assert.equal(keepShareGPT(1025, 10, false), false);
    assert.equal(keepShareGPT(1000, 1049, false), false);
    assert.equal(keepShareGPT(1000, 1048, false), true);
  });
});

describe('bench serve against loom serve on a fixture model', () => {
  let child: ReturnType<typeof spawn>;
  let url = '';
  before(async () => {
    child = spawn(process.execPath, [CLI, 'serve', '--model', MODEL, '--port', '0', '--backend', 'reference', '--kv-cache-memory', '16MiB', '--served-model-name', 'fixture'], {
      stdio: ['ignore', 'ignore', 'pipe'],
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
    url = `http://127.0.0.1:${port}`;
  });
  after(() => {
    child.kill('SIGTERM');
  });

  for (const backend of ['loom', 'openai', 'openai-chat'] as const) {
    it(`${backend}: every request succeeds and generates its requested length`, async () => {
      const r = await runServeBench(base(url, { backend, model: 'fixture', numPrompts: 4, randomInputLen: 12, randomOutputLen: 6, randomRangeRatio: 0.5, warmupRequests: 1 }));
      const f = r.figures;
      assert.deepEqual(f.errors, []);
      assert.equal(f.completed, 4);
      // lengths in [3, 6] per request (seeded): the generated total is their sum, as ignore_eos asks
      assert.ok(f.totalOutputTokens >= 4 * 3 && f.totalOutputTokens <= 4 * 6, String(f.totalOutputTokens));
      if (backend !== 'openai-chat') assert.ok(f.totalInputTokens >= 4 * 6 && f.totalInputTokens <= 4 * 12, String(f.totalInputTokens));
      else assert.ok(f.totalInputTokens > 4 * 6, 'the chat template adds tokens');
      assert.ok(f.ttftMs.mean > 0 && f.ttftMs.mean <= f.e2elMs.mean);
    });
  }

  it('the same prompts give the same output total on every backend', async () => {
    const totals = [];
    for (const backend of ['loom', 'openai', 'openai-chat'] as const) {
      totals.push((await runServeBench(base(url, { backend, model: 'fixture', numPrompts: 3, randomInputLen: 8, randomOutputLen: 5, randomRangeRatio: 0.4 }))).figures.totalOutputTokens);
    }
    assert.equal(new Set(totals).size, 1, totals.join(', '));
  });

  it('sharegpt: filtered conversations, output lengths from the replies', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-bench-sharegpt-'));
    try {
      const path = join(dir, 'sharegpt.json');
      const turn = (from: string, value: string) => ({ from, value });
      writeFileSync(path, JSON.stringify([
        { id: 'a', conversations: [turn('human', 'Once upon a time, there was a little girl'), turn('gpt', 'She loved to play outside in the park.')] },
        { id: 'b', conversations: [turn('human', 'Hi')] }, // one turn: dropped
        { id: 'c', conversations: [turn('human', 'Hi'), turn('gpt', 'The quick brown fox jumps over the lazy dog.')] }, // prompt < 4 tokens: dropped
        { id: 'd', conversations: [turn('human', 'The quick brown fox jumps over the lazy dog.'), turn('gpt', 'Hello world, this is a test.')] },
      ]));
      const tok = loadModel(MODEL).tokenizer;
      const len = (t: string) => tok.encode(t, { addSpecial: false }).length;
      const r = await runServeBench(base(url, { backend: 'loom', model: 'fixture', datasetName: 'sharegpt', datasetPath: path, numPrompts: 10 }));
      assert.equal(r.figures.completed, 2);
      assert.equal(r.figures.totalOutputTokens, len('She loved to play outside in the park.') + len('Hello world, this is a test.'));
      assert.equal(r.figures.totalInputTokens, len('Once upon a time, there was a little girl') + len('The quick brown fox jumps over the lazy dog.'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the CLI prints the report, --json the object, --output-file appends one line; no tokenizer: /tokenize', () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-bench-serve-'));
    try {
      const out = join(dir, 'out.jsonl');
      const args = [CLI, 'bench', 'serve', '--base-url', url, '--model', 'fixture', '--num-prompts', '2', '--random-input-len', '8', '--random-output-len', '4', '--output-file', out];
      const text = spawnSync(process.execPath, args, { encoding: 'utf8' });
      assert.equal(text.status, 0, text.stderr);
      assert.match(text.stdout, /=+ Serving Benchmark Result =+/);
      assert.match(text.stdout, /Successful requests:\s+2\n/);
      assert.match(text.stdout, /Total generated tokens:\s+8\n/);
      assert.match(text.stdout, /P99 ITL \(ms\):/);
      const json = spawnSync(process.execPath, [...args, '--json', '--backend', 'loom'], { encoding: 'utf8' });
      assert.equal(json.status, 0, json.stderr);
      const obj = JSON.parse(json.stdout) as Record<string, unknown>;
      assert.equal(obj.completed, 2);
      assert.equal(obj.total_output_tokens, 8);
      assert.equal(obj.request_rate, 'inf');
      assert.match(String(obj.tokenizer_id), /^server /);
      const lines = readFileSync(out, 'utf8').trim().split('\n');
      assert.equal(lines.length, 2);
      assert.equal((JSON.parse(lines[1]!) as { backend: string }).backend, 'loom');
      const bad = spawnSync(process.execPath, [CLI, 'bench', 'serve', '--base-url', url, '--model', 'fixture', '--request-rate', '0'], { encoding: 'utf8' });
      assert.equal(bad.status, 1);
      assert.match(bad.stderr, /--request-rate expects a number > 0 or "inf"/);
      // a list of rates: one run each, one table with a row per rate
      const sweep = spawnSync(process.execPath, [...args.slice(0, -2), '--request-rate', '50,inf'], { encoding: 'utf8' });
      assert.equal(sweep.status, 0, sweep.stderr);
      const rows = sweep.stdout.split('\n').filter((l) => /^(50|inf)\s+http/.test(l));
      assert.deepEqual(rows.map((l) => l.split(/\s+/)[0]), ['50', 'inf']);
      for (const row of rows) assert.equal(row.split(/\s+/)[2], '2', 'two requests done per rate');
      assert.match(sweep.stdout, /TTFT p99/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
