// LLM.embed and LLM.rerank: the engine in its worker thread (pooled vectors cross the thread
// boundary as transferables), against llama.cpp's goldens; `loom embed` on the command line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { LLM } from '../src/llm.js';
import { PROJECT_ROOT } from './fixtures/index.js';
import { bertFixture, bertFixturePath } from './fixtures/bert-fixture.js';
import { cosine, readEmbeddingGolden } from './fixtures/embedding-golden.js';

test('LLM.embed in a worker: one normalized vector per input, llama.cpp\'s', async () => {
  const llm = await LLM.load(bertFixturePath(bertFixture('bert-cls-f16')), { kvCacheMemory: '16MiB' });
  try {
    const golden = readEmbeddingGolden('bert-cls-f16');
    const vectors = await llm.embed(golden.embeddings.map((e) => e.text));
    vectors.forEach((v, i) => {
      assert.ok(cosine(v, golden.embeddings[i]!.vector) >= 0.9999);
      assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-5);
    });
    const raw = await llm.embed('hello world', { normalize: false });
    assert.ok(Math.abs(Math.hypot(...raw[0]!) - Math.hypot(...golden.embeddings[0]!.vector)) < 1e-3);
    await assert.rejects(llm.embed([]), /input must not be empty/);
  } finally {
    await llm.close();
  }
});

test('LLM.rerank on a cross-encoder: llama.cpp\'s order, best first', async () => {
  const llm = await LLM.load(bertFixturePath(bertFixture('bert-rank-f32')), { kvCacheMemory: '16MiB' });
  try {
    const g = readEmbeddingGolden('bert-rank-f32').ranks!;
    const results = await llm.rerank(g.query, g.documents);
    const expected = g.scores.map((score, index) => ({ index, score })).sort((a, b) => b.score - a.score);
    assert.deepEqual(results.map((r) => r.index), expected.map((e) => e.index));
    assert.deepEqual((await llm.rerank(g.query, g.documents, { topN: 1 })).map((r) => r.index), [expected[0]!.index]);
  } finally {
    await llm.close();
  }
});

test('loom embed prints one JSON vector a line; --query ranks', async () => {
  const cli = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
  const model = bertFixturePath(bertFixture('bert-mean-f32'));
  const run = promisify(execFile);
  const { stdout } = await run(process.execPath, [cli, 'embed', '-m', model, 'hello world', 'a']);
  const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as number[]);
  const golden = readEmbeddingGolden('bert-mean-f32');
  assert.equal(lines.length, 2);
  assert.ok(cosine(lines[0]!, golden.embeddings[0]!.vector) >= 0.9999);
  assert.ok(cosine(lines[1]!, golden.embeddings[3]!.vector) >= 0.9999);
  const ranked = await run(process.execPath, [cli, 'embed', '-m', model, '--query', 'paris', 'paris', 'zebra']);
  assert.equal((JSON.parse(ranked.stdout.split('\n')[0]!) as { index: number }).index, 0);
});

test('the supervised worker engine (what loom serve runs) passes pooling requests through', async () => {
  const { SupervisedEngineClient } = await import('../src/engine/supervisor.js');
  const { loadModel } = await import('../src/model/load.js');
  const { localContext } = await import('../src/pipeline/context.js');
  const { embed } = await import('../src/pipeline/embed.js');
  const path = bertFixturePath(bertFixture('bert-mean-f32'));
  const engine = await SupervisedEngineClient.start(
    { model: path, kvCacheMemory: '16MiB' },
    { maxRestarts: 0, restartWindowMs: 60_000, backoffMs: 200, maxBackoffMs: 400, stepTimeoutMs: 60_000, log: () => {}, onGiveUp: () => {} },
  );
  try {
    assert.equal(engine.info.pooling?.type, 'mean');
    const golden = readEmbeddingGolden('bert-mean-f32');
    const { vectors } = await embed(localContext(engine, loadModel(path).tokenizer), [golden.embeddings[1]!.text]);
    assert.ok(cosine(vectors[0]!, golden.embeddings[1]!.vector) >= 0.9999);
  } finally {
    await engine.close();
  }
});
