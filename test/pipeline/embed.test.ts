// Decoders as embedding models (--runner pooling: the last token's final-norm hidden state)
// against llama.cpp's, through the pipeline; and the pipeline's own rules (dimensions,
// truncation, normalization, ids outside the vocabulary).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEngineCore } from '../../src/engine/create.js';
import { InProcessEngineClient } from '../../src/engine/in-process-client.js';
import { localContext } from '../../src/pipeline/context.js';
import type { PipelineContext } from '../../src/pipeline/context.js';
import { embed, l2Normalize } from '../../src/pipeline/embed.js';
import { loadModel } from '../../src/model/load.js';
import { ContextLengthExceededError, InvalidArgumentError } from '../../src/errors.js';
import { ggufFixturePath, sha256File } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';
import { bertFixture, bertFixturePath } from '../fixtures/bert-fixture.js';
import { cosine, readEmbeddingGolden } from '../fixtures/embedding-golden.js';

async function withContext(path: string, runner: 'auto' | 'pooling', body: (ctx: PipelineContext) => Promise<void>): Promise<void> {
  const model = loadModel(path);
  const engine = new InProcessEngineClient(createEngineCore({ model: path, kvCacheMemory: '32MiB', maxModelLen: Math.min(256, model.config.contextLength), runner }, model));
  try {
    await body(localContext(engine, model.tokenizer));
  } finally {
    await engine.close();
  }
}

for (const name of ['qwen3-f32', 'llama-f16']) {
  test(`${name} with --runner pooling: each text's last-token vector within cosine 0.9999 of llama.cpp's`, async () => {
    const path = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === name)!);
    const golden = readEmbeddingGolden(`embed-${name}`);
    assert.equal(sha256File(path), golden.sha256);
    await withContext(path, 'pooling', async (ctx) => {
      const { vectors } = await embed(ctx, golden.embeddings.map((e) => e.text));
      vectors.forEach((v, i) => {
        const c = cosine(v, golden.embeddings[i]!.vector);
        assert.ok(c >= 0.9999, `${JSON.stringify(golden.embeddings[i]!.text)}: cosine ${c}`);
      });
    });
  });
}

test('pipeline rules: truncation keeps the last tokens, ids outside the vocabulary and bad truncation are refused, normalize off', async () => {
  await withContext(bertFixturePath(bertFixture('bert-mean-f32')), 'auto', async (ctx) => {
    const long = Array.from({ length: 200 }, (_, i) => 40 + (i % 30));
    await assert.rejects(embed(ctx, [long]), ContextLengthExceededError);
    const cut = await embed(ctx, [long], { truncatePromptTokens: 100, normalize: false });
    const tail = await embed(ctx, [long.slice(100)], { normalize: false });
    assert.equal(cut.promptTokens, 100);
    assert.ok(cosine(cut.vectors[0]!, tail.vectors[0]!) > 0.999999);
    assert.equal((await embed(ctx, [long], { truncatePromptTokens: -1 })).promptTokens, 128);
    await assert.rejects(embed(ctx, [long], { truncatePromptTokens: 0 }), InvalidArgumentError);
    await assert.rejects(embed(ctx, [[1, 99999]]), /outside the vocabulary/);
    const raw = (await embed(ctx, ['hello world'], { normalize: false })).vectors[0]!;
    const normed = (await embed(ctx, ['hello world'])).vectors[0]!;
    assert.ok(Math.hypot(...raw) > 1.5);
    assert.deepEqual(Array.from(normed), Array.from(l2Normalize(raw)));
  });
});

test('a decoder GGUF with <arch>.pooling_type pools by default (Qwen3-Embedding: last); none leaves it generating', async () => {
  const { openGGUF } = await import('../../src/model/gguf.js');
  const { ggufModelConfig } = await import('../../src/model/gguf-config.js');
  const path = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'qwen3-f32')!);
  const gguf = openGGUF(path);
  try {
    const meta = new Map(gguf.metadata);
    assert.equal(ggufModelConfig(path, meta, gguf).pooling, undefined);
    meta.set('qwen3.pooling_type', 3);
    assert.deepEqual(ggufModelConfig(path, meta, gguf).pooling, { type: 'last', normalize: true });
    meta.set('qwen3.pooling_type', 0);
    assert.equal(ggufModelConfig(path, meta, gguf).pooling, undefined);
    meta.set('qwen3.pooling_type', 9);
    assert.throws(() => ggufModelConfig(path, meta, gguf), /not one of llama.cpp's pooling types/);
  } finally {
    gguf.close();
  }
});

test('dimensions on a Matryoshka model: the first n floats, normalized again', async () => {
  const path = bertFixturePath(bertFixture('bert-mean-f32'));
  const model = loadModel(path);
  const matryoshka = { ...model, config: { ...model.config, pooling: { ...model.config.pooling!, matryoshkaDimensions: [32, 64] } } };
  const engine = new InProcessEngineClient(createEngineCore({ model: path, kvCacheMemory: '16MiB' }, matryoshka));
  try {
    const ctx = localContext(engine, model.tokenizer);
    const full = (await embed(ctx, ['hello world'], { normalize: false })).vectors[0]!;
    const cut = (await embed(ctx, ['hello world'], { dimensions: 64 })).vectors[0]!;
    assert.equal(cut.length, 64);
    assert.deepEqual(Array.from(cut), Array.from(l2Normalize(full.slice(0, 64))));
    await assert.rejects(embed(ctx, ['x'], { dimensions: 129 }), /dimensions must be an integer from 1 to 128/);
  } finally {
    await engine.close();
  }
});

test('Qwen3-Reranker: the filled rerank template tokenized as llama.cpp does, scored as its softmax(yes, no)\'s yes, in llama.cpp\'s order', async () => {
  const { qwen3RerankerPath } = await import('../fixtures/reranker-fixture.js');
  const { rerank } = await import('../../src/pipeline/embed.js');
  const { RERANK_DOCUMENTS, RERANK_QUERY } = await import('../fixtures/bert-fixture.js');
  const path = qwen3RerankerPath();
  const golden = readEmbeddingGolden('qwen3-rerank-f32');
  assert.equal(sha256File(path), golden.sha256);
  const model = loadModel(path);
  assert.equal(model.config.pooling?.type, 'rank');
  for (const e of golden.embeddings) assert.deepEqual(model.tokenizer.encode(e.text, { addSpecial: false, parseSpecial: true }), e.ids);
  await withContext(path, 'auto', async (ctx) => {
    assert.equal(ctx.engine.info.pooling?.size, 2);
    const { results } = await rerank(ctx, RERANK_QUERY, RERANK_DOCUMENTS);
    const expected = golden.embeddings.map((e, index) => ({ index, score: e.vector[0]! })).sort((a, b) => b.score - a.score);
    assert.deepEqual(results.map((r) => r.index), expected.map((e) => e.index));
    // f32 rounding moves the yes-no logit by ~3e-3 here (the hidden states agree to cosine 0.9999+)
    for (const r of results) assert.ok(Math.abs(r.score - golden.embeddings[r.index]!.vector[0]!) < 1e-3, `${r.index}: ${r.score}`);
  });
});
