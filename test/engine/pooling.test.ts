// Pooling requests in the engine: prefill-only sequences scheduled with the others, many
// in one step, pooled and freed in the step that computes them; refused where they cannot run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EngineCore, now } from '../../src/engine/engine.js';
import { GREEDY } from '../../src/engine/sampler.js';
import { pooledStepBlocks, resolveEngineConfig } from '../../src/engine/options.js';
import type { EngineOptions } from '../../src/engine/options.js';
import type { RequestDelta } from '../../src/engine/protocol.js';
import { loadModel } from '../../src/model/load.js';
import { configForRunner } from '../../src/model/pooling.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { BERT_TEXTS, bertFixture, bertFixturePath } from '../fixtures/bert-fixture.js';
import { cosine, readEmbeddingGolden } from '../fixtures/embedding-golden.js';
import { testKernels } from '../fixtures/native.js';
import { fixtureEngine, fixtureModel } from '../fixtures/engine-run.js';

const model = loadModel(bertFixturePath(bertFixture('bert-mean-f32')));

function engine(opts: Partial<EngineOptions> = {}): EngineCore {
  return new EngineCore(model, testKernels(), resolveEngineConfig({ model: '', kvCacheMemory: '64MiB', ...opts }, model.config, [...model.tokenizer.stopIds]));
}

const add = (e: EngineCore, id: string, ids: readonly number[], pool = true): RequestDelta | undefined =>
  e.add({ type: 'add', id, promptIds: Int32Array.from(ids), params: GREEDY, arrivalTime: now(), ...(pool && { pool: true as const }) });

function drain(e: EngineCore): { deltas: RequestDelta[]; steps: number; maxRunning: number; maxTokens: number } {
  const deltas: RequestDelta[] = [];
  let steps = 0;
  let maxRunning = 0;
  let maxTokens = 0;
  while (e.hasWork) {
    const out = e.step();
    if (!out) continue;
    steps++;
    maxTokens = Math.max(maxTokens, out.stats.scheduledTokens);
    maxRunning = Math.max(maxRunning, out.stats.numRunning + out.deltas.filter((d) => d.pooled).length);
    deltas.push(...out.deltas);
  }
  return { deltas, steps, maxRunning, maxTokens };
}

test('a pooling model\'s engine defaults: f32 K/V, a step that holds a whole context, inputs computed whole, no prefix cache', () => {
  const c = engine().config;
  assert.equal(c.kvDtype, 'f32');
  assert.equal(c.wholeSequences, true);
  assert.equal(c.enablePrefixCaching, false);
  assert.ok(c.maxNumBatchedTokens >= c.maxModelLen);
});

test('pooled vectors come back as each request\'s one delta, equal to llama.cpp\'s, and the blocks are free at once', () => {
  const e = engine();
  const golden = readEmbeddingGolden('bert-mean-f32');
  golden.embeddings.forEach((g, i) => assert.equal(add(e, `r${i}`, model.tokenizer.encode(g.text)), undefined));
  const { deltas, steps } = drain(e);
  assert.equal(steps, 1, 'short inputs run in one step');
  assert.equal(deltas.length, golden.embeddings.length);
  for (const d of deltas) {
    const g = golden.embeddings[Number(d.id.slice(1))]!;
    assert.equal(d.finishReason, 'stop');
    assert.ok(d.pooled && cosine(d.pooled, g.vector) >= 0.9999, `${d.id}: ${d.pooled && cosine(d.pooled, g.vector)}`);
  }
  assert.equal(e.blocks.usage(), 0);
  assert.equal(e.scheduler.numRunning, 0);
});

test('256 short inputs fill the step budget: a few steps, many sequences each', () => {
  const e = engine({ maxNumSeqs: 256, maxNumBatchedTokens: 1024 });
  const ids = BERT_TEXTS.map((t) => model.tokenizer.encode(t));
  for (let i = 0; i < 256; i++) add(e, `r${i}`, ids[i % 4]!); // 3..16 tokens each
  const { deltas, steps, maxTokens } = drain(e);
  assert.equal(deltas.filter((d) => d.pooled).length, 256);
  const total = Array.from({ length: 256 }, (_, i) => ids[i % 4]!.length).reduce((a, b) => a + b, 0);
  assert.ok(steps <= Math.ceil(total / 1024) + 1, `${steps} steps for ${total} tokens under a budget of 1024`);
  assert.ok(maxTokens > 900, `a step scheduled only ${maxTokens} tokens`);
  // the same input pools to the same vector whatever shares its step
  const first = deltas.find((d) => d.id === 'r0')!.pooled!;
  for (const d of deltas.filter((x) => Number(x.id.slice(1)) % 4 === 0)) assert.ok(cosine(d.pooled!, first) > 0.999999);
});

test('the KV cache holds one step\'s inputs, not --max-num-seqs whole contexts, and the worst step fits it exactly', () => {
  const e = engine({ kvCacheMemory: '1GiB', maxNumSeqs: 256, maxNumBatchedTokens: 256 });
  const c = e.config;
  // 256 one-token inputs: a block each, the most one step of 256 tokens can hold
  assert.equal(pooledStepBlocks(256, 256, c.blockSize), 256);
  assert.equal(c.numBlocks, Math.max(Math.ceil(c.maxModelLen / c.blockSize), 256));
  assert.ok(c.numBlocks < 256 * Math.ceil(c.maxModelLen / c.blockSize));
  const one = model.tokenizer.encode(BERT_TEXTS[0]!).slice(0, 1);
  for (let i = 0; i < 256; i++) add(e, `r${i}`, one);
  const { deltas, steps } = drain(e);
  assert.equal(steps, 1);
  assert.equal(deltas.filter((d) => d.pooled).length, 256);
  assert.equal(e.blocks.usage(), 0);
  // the default budget: a whole context, its rounding for every sequence that shares the step
  assert.equal(engine({ kvCacheMemory: '1GiB' }).config.numBlocks, pooledStepBlocks(Math.max(2048, c.maxModelLen), 256, c.blockSize));
});

test('an input longer than a step\'s budget waits for a step of its own, never chunked', () => {
  const e = engine({ maxNumBatchedTokens: 128, maxModelLen: 128 });
  const long = model.tokenizer.encode(BERT_TEXTS[5]!); // about 70 tokens
  add(e, 'a', long);
  add(e, 'b', long);
  const { deltas, steps } = drain(e);
  assert.equal(steps, 2);
  assert.ok(cosine(deltas[0]!.pooled!, deltas[1]!.pooled!) > 0.999999);
});

test('refusals: a generate request on a pooling model, a pooling request on a chat model, an input over the context, an empty input', () => {
  const e = engine();
  assert.match(add(e, 'g', [2, 50, 3], false)?.error ?? '', /pools .*does not generate/);
  assert.match(add(e, 'long', Array.from({ length: 129 }, () => 50))?.error ?? '', /129 tokens; at most 128/);
  assert.match(add(e, 'empty', [])?.error ?? '', /empty/);
  const chat = fixtureEngine('llama-f32', testKernels(), { kvCacheMemory: '16MiB', maxModelLen: 512 });
  assert.match(add(chat, 'p', [1, 2, 3])?.error ?? '', /generates; it does not pool/);
});

test('an aborted pooling request ends with an abort delta and frees its blocks', () => {
  const e = engine();
  add(e, 'a', model.tokenizer.encode('hello world'));
  e.abort(['a']);
  assert.equal(e.hasWork, false);
  const deltas = e.step()?.deltas ?? [];
  assert.deepEqual(deltas.map((d) => [d.id, d.finishReason, d.pooled]), [['a', 'abort', undefined]]);
  assert.equal(e.blocks.usage(), 0);
});

test('--runner: pooling turns a decoder into a last-token embedding model; generate refuses an encoder', () => {
  const llama = fixtureModel('llama-f32').config;
  assert.deepEqual(configForRunner(llama, 'pooling').pooling, { type: 'last', normalize: true });
  assert.equal(configForRunner(llama, 'auto').pooling, undefined);
  assert.throws(() => configForRunner(model.config, 'generate'), InvalidArgumentError);
  const e = new EngineCore({ ...fixtureModel('llama-f32'), config: configForRunner(llama, 'pooling') }, testKernels(),
    resolveEngineConfig({ model: '', kvCacheMemory: '16MiB', maxModelLen: 512 }, configForRunner(llama, 'pooling'), []));
  add(e, 'x', [1, 5, 9, 13]);
  const { deltas } = drain(e);
  assert.equal(deltas[0]!.pooled?.length, llama.hiddenSize);
});
