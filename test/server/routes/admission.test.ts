// Caps count sequences: --max-num-seqs bounds running sequences whatever n is (an n > 1
// request starts when the completions that fork from it fit; an n above the cap runs its
// sequences in turns, as vLLM), and admission counts prompts × n against
// --max-pending-requests: 429 with Retry-After when the budget is spent, a 400 for a request
// larger than the whole budget.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { EngineCore } from '../../../src/engine/engine.js';
import { resolveEngineConfig } from '../../../src/engine/options.js';
import type { SamplingParamsInput } from '../../../src/engine/sampling-params.js';
import { EngineGate } from '../../fixtures/engine-gate.js';
import { WorkerEngineClient } from '../../../src/engine/worker-client.js';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { loadModel } from '../../../src/model/load.js';
import { buildApp } from '../../../src/server/app.js';
import type { ServerContext } from '../../../src/server/context.js';
import { ggufFixturePath } from '../../fixtures/index.js';
import { GGUF_FIXTURES } from '../../fixtures/recipe.js';
import { resolveSamplingParams } from '../../../src/engine/sampling-params.js';

const path = () => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q8_0')!);
const sampled = (n: number, seed: number): SamplingParamsInput => ({ temperature: 1, seed, n, maxTokens: 6, ignoreEos: true });

describe('--max-num-seqs counts every completion', () => {
  it('never runs more sequences than the cap, whatever n is, and finishes everything', () => {
    const m = loadModel(path());
    const e = new EngineCore(m, referenceKernels, resolveEngineConfig({ model: '', kvCacheMemory: '16MiB', maxNumSeqs: 4 }, m.config, [...m.tokenizer.stopIds]));
    const requests: [string, number][] = [['a', 3], ['b', 3], ['c', 1], ['d', 4], ['e', 2]];
    for (const [id, n] of requests) assert.equal(e.add({ type: 'add', id, promptIds: Int32Array.from([1, 5, 9, 13]), params: resolveSamplingParams(sampled(n, id.charCodeAt(0))), arrivalTime: 0 }), undefined);
    const tokens = new Map<string, number>();
    let most = 0;
    for (let step = 0; e.hasWork && step < 1000; step++) {
      for (const d of e.step()?.deltas ?? []) tokens.set(`${d.id}#${d.index}`, (tokens.get(`${d.id}#${d.index}`) ?? 0) + d.tokenIds.length);
      most = Math.max(most, e.scheduler.numRunning);
    }
    assert.ok(most <= 4, `${most} sequences ran at once`);
    assert.equal(most, 4, 'the cap was reached');
    assert.deepEqual([...tokens.keys()].sort(), requests.flatMap(([id, n]) => Array.from({ length: n }, (_, i) => `${id}#${i}`)).sort());
    assert.ok([...tokens.values()].every((t) => t === 6));
    assert.equal(e.blocks.usage(), 0);
  });

  it('runs an n above the cap in turns: every completion, never more than the cap at once', () => {
    const m = loadModel(path());
    const e = new EngineCore(m, referenceKernels, resolveEngineConfig({ model: '', kvCacheMemory: '16MiB', maxNumSeqs: 4 }, m.config, [...m.tokenizer.stopIds]));
    assert.equal(e.add({ type: 'add', id: 'wide', promptIds: Int32Array.from([1, 2]), params: resolveSamplingParams(sampled(9, 1)), arrivalTime: 0 }), undefined);
    assert.equal(e.add({ type: 'add', id: 'after', promptIds: Int32Array.from([3, 4]), params: resolveSamplingParams(sampled(2, 2)), arrivalTime: 0 }), undefined);
    const tokens = new Map<string, number>();
    const finished = new Set<string>();
    let most = 0;
    for (let step = 0; e.hasWork && step < 1000; step++) {
      for (const d of e.step()?.deltas ?? []) {
        assert.equal(d.error, undefined);
        tokens.set(`${d.id}#${d.index}`, (tokens.get(`${d.id}#${d.index}`) ?? 0) + d.tokenIds.length);
        if (d.finishReason) finished.add(`${d.id}#${d.index}`);
      }
      most = Math.max(most, e.scheduler.numRunning);
    }
    assert.equal(most, 4, `${most} sequences ran at once`);
    const all = [...Array.from({ length: 9 }, (_, i) => `wide#${i}`), 'after#0', 'after#1'];
    assert.deepEqual([...finished].sort(), all.sort());
    assert.ok(all.every((k) => tokens.get(k) === 6), JSON.stringify([...tokens]));
    assert.equal(e.blocks.usage(), 0);
  });

  it('a seeded completion is the same whether it forked or waited its turn', () => {
    const m = loadModel(path());
    const run = (maxNumSeqs: number): Map<number, number[]> => {
      const e = new EngineCore(m, referenceKernels, resolveEngineConfig({ model: '', kvCacheMemory: '16MiB', maxNumSeqs }, m.config, [...m.tokenizer.stopIds]));
      e.add({ type: 'add', id: 'r', promptIds: Int32Array.from([1, 5, 9, 13]), params: resolveSamplingParams(sampled(5, 7)), arrivalTime: 0 });
      const out = new Map<number, number[]>();
      for (let step = 0; e.hasWork && step < 1000; step++) for (const d of e.step()?.deltas ?? []) out.set(d.index, [...(out.get(d.index) ?? []), ...d.tokenIds]);
      return out;
    };
    assert.deepEqual(run(2), run(8));
  });
});

describe('admission counts prompts × n', () => {
  let engine: WorkerEngineClient;
  let ctx: ServerContext;
  let base = '';
  let close: () => Promise<void>;
  let longestEncoded = 0;
  let gate: EngineGate;
  before(async () => {
    engine = await WorkerEngineClient.start({ model: path(), kvCacheMemory: '16MiB', maxNumSeqs: 6 });
    gate = new EngineGate(engine); // admission tests hold it (test/fixtures/engine-gate.ts)
    // the longest text the server ever tokenizes
    const tokenizer = loadModel(path()).tokenizer;
    const encode = tokenizer.encode.bind(tokenizer);
    tokenizer.encode = (text, opts) => ((longestEncoded = Math.max(longestEncoded, text.length)), encode(text, opts));
    const built = buildApp({
      engine: gate.client,
      tokenizer,
      options: { servedModelName: 'fixture', maxModelLen: engine.info.maxModelLen, maxPendingRequests: 8, slowClientTimeoutMs: 5_000, bodyLimitBytes: 1 << 20 },
    });
    ctx = built.ctx;
    await built.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(built.app.server.address() as AddressInfo).port}`;
    close = async () => (await built.app.close(), await engine.close());
  });
  after(() => close());

  const complete = (body: object) => fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fixture', max_tokens: 4, ...body }) });

  it('a request larger than the budget is a 400 naming the option; an n above --max-num-seqs runs in turns', async () => {
    const tooMany = await complete({ prompt: ['a', 'b', 'c'], n: 3 }); // 9 sequences > 8
    assert.equal(tooMany.status, 400);
    assert.match(await tooMany.text(), /asks for 9 sequences \(prompts × n\), more than this server admits at once \(--max-pending-requests 8\)/);
    // 7 completions under --max-num-seqs 6 (as vLLM: accepted, its sequences scheduled as capacity allows)
    const wide = await complete({ prompt: 'a', n: 7, ignore_eos: true });
    assert.equal(wide.status, 200);
    const body = (await wide.json()) as { choices: { index: number; finish_reason: string }[] };
    assert.deepEqual(body.choices.map((c) => c.index), [0, 1, 2, 3, 4, 5, 6]);
    assert.ok(body.choices.every((c) => c.finish_reason === 'length'));
    assert.equal((await complete({ prompt: ['a', 'b'], n: 4 })).status, 200, '8 sequences fit exactly');
  });

  it('the budget counts sequences: 429 with Retry-After once it is spent', async () => {
    let most = 0;
    let refusedSoFar = 0;
    gate.hold();
    const watch = setInterval(() => (most = Math.max(most, ctx.inFlight)), 1);
    const pending = Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const r = await complete({ prompt: `p${i}`, n: 3, max_tokens: 100, ignore_eos: true });
        if (r.status === 429) refusedSoFar++;
        const text = await r.text();
        return { status: r.status, retryAfter: r.headers.get('retry-after'), text };
      }),
    );
    // every request admitted (3 sequences each in flight) or refused, or 10 s
    for (const deadline = Date.now() + 10_000; refusedSoFar + ctx.inFlight / 3 < 12 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 2));
    gate.release();
    const results = await pending;
    clearInterval(watch);
    const refused = results.filter((r) => r.status === 429);
    assert.equal(refused.length, 10, `two requests of n = 3 fit a budget of 8: ${results.map((r) => r.status).join(',')}`);
    assert.ok(refused.every((r) => r.retryAfter === '1' && /"type":"Too Many Requests".*"code":429/.test(r.text)));
    assert.ok(results.every((r) => r.status === 200 || r.status === 429));
    assert.equal(most, 6, `${most} sequences in flight`);
    assert.equal(ctx.inFlight, 0);
  });

  it('a prompt whose bytes prove it too long is refused without tokenizing it', async () => {
    const huge = await complete({ prompt: 'once upon a time '.repeat(48 * 1024) }); // 816 KiB
    assert.equal(huge.status, 400);
    assert.match(await huge.text(), /maximum context length is \d+ tokens\. However, your request has at least \d+ input tokens \(835584 bytes\).*"type":"BadRequestError".*"code":400/);
    assert.ok(longestEncoded < 100_000, `${longestEncoded} characters were tokenized`);
    // one the bytes cannot prove too long is tokenized and refused by its token count
    const long = await complete({ prompt: 'hello '.repeat(600) });
    assert.equal(long.status, 400);
    assert.match(await long.text(), /However, your request has \d+ input tokens\. Please/);
    assert.equal(longestEncoded, 3600);
  });
});
