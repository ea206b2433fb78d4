// /v1/embeddings, /api/embed, /api/embeddings and /v1/rerank over BERT fixtures, through the
// real clients (openai, LangChain's OpenAIEmbeddings, ollama, the AI SDK's embedMany) and raw
// HTTP; the vectors against llama.cpp's goldens, the errors in each API's shape.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { OpenAIEmbeddings } from '@langchain/openai';
import { Ollama } from 'ollama';
import { embedMany } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { MODEL, fixtureBy, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';
import { RERANK_DOCUMENTS, RERANK_QUERY, bertFixture, bertFixturePath } from '../../fixtures/bert-fixture.js';
import { cosine, readEmbeddingGolden } from '../../fixtures/embedding-golden.js';

const golden = readEmbeddingGolden('bert-mean-f32');
const texts = golden.embeddings.map((e) => e.text);
const norm = (v: readonly number[]): number => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

function assertGolden(vectors: readonly (readonly number[])[]): void {
  assert.equal(vectors.length, texts.length);
  vectors.forEach((v, i) => {
    assert.ok(cosine(v, golden.embeddings[i]!.vector) >= 0.9999, `${JSON.stringify(texts[i])}: cosine ${cosine(v, golden.embeddings[i]!.vector)}`);
    assert.ok(Math.abs(norm(v) - 1) < 1e-5, 'normalized');
  });
}

describe('embedding endpoints on a BERT model', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer(bertFixturePath(bertFixture('bert-mean-f32')), {}, { backend: 'native' });
  });
  after(() => s.close());

  it('openai: embeddings.create, a list of strings, float and base64 (the SDK default)', async () => {
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const res = await client.embeddings.create({ model: MODEL, input: texts });
    assertGolden(res.data.map((d) => d.embedding));
    assert.deepEqual(res.data.map((d) => d.index), texts.map((_, i) => i));
    const tokens = texts.reduce((n, t) => n + s.model.tokenizer.encode(t).length, 0);
    assert.equal(res.usage.prompt_tokens, tokens);
    const floats = await client.embeddings.create({ model: MODEL, input: texts[1]!, encoding_format: 'float' });
    assert.ok(cosine(floats.data[0]!.embedding, res.data[1]!.embedding) > 0.999999);
  });

  it('token ids and lists of token ids embed as their texts do', async () => {
    const ids = texts.map((t) => s.model.tokenizer.encode(t));
    const one = await (await s.post('/v1/embeddings', { model: MODEL, input: ids[0] })).json() as { data: { embedding: number[] }[] };
    const many = await (await s.post('/v1/embeddings', { model: MODEL, input: ids })).json() as { data: { embedding: number[] }[] };
    assertGolden(many.data.map((d) => d.embedding));
    assert.ok(cosine(one.data[0]!.embedding, golden.embeddings[0]!.vector) >= 0.9999);
  });

  it('LangChain OpenAIEmbeddings: embedDocuments and embedQuery', async () => {
    const lc = new OpenAIEmbeddings({ model: MODEL, apiKey: 'none', configuration: { baseURL: `${s.url}/v1` }, maxRetries: 0 });
    assertGolden(await lc.embedDocuments(texts));
    assert.ok(cosine(await lc.embedQuery(texts[2]!), golden.embeddings[2]!.vector) >= 0.9999);
  });

  it('AI SDK: embedMany with the OpenAI-compatible provider', async () => {
    const model = createOpenAICompatible({ name: 'loom', baseURL: `${s.url}/v1` }).textEmbeddingModel(MODEL);
    const { embeddings } = await embedMany({ model, values: texts });
    assertGolden(embeddings);
  });

  it('ollama: embed (normalized) and the older embeddings (as pooled)', async () => {
    const ollama = new Ollama({ host: s.url });
    const res = await ollama.embed({ model: MODEL, input: texts });
    assertGolden(res.embeddings);
    assert.ok(res.prompt_eval_count > 0);
    const old = await ollama.embeddings({ model: MODEL, prompt: texts[1]! });
    assert.ok(cosine(old.embedding, golden.embeddings[1]!.vector) >= 0.9999);
    assert.ok(Math.abs(norm(old.embedding) - norm(golden.embeddings[1]!.vector)) / norm(golden.embeddings[1]!.vector) < 1e-3, 'not normalized');
  });

  it('errors: an empty list, an input over the context (unless truncated), dimensions on a model without Matryoshka, a rerank-free model', async () => {
    const empty = await s.post('/v1/embeddings', { model: MODEL, input: [] });
    assert.equal(empty.status, 400);
    assert.equal(((await empty.json()) as { error: { param: string } }).error.param, 'input');
    const long = 'the cat sat on the mat '.repeat(40);
    const over = await s.post('/v1/embeddings', { model: MODEL, input: long });
    assert.equal(over.status, 400);
    assert.match(((await over.json()) as { error: { message: string } }).error.message, /more than the model's context of 128 tokens/);
    const cut = await s.post('/v1/embeddings', { model: MODEL, input: long, truncate_prompt_tokens: 64 });
    assert.equal(cut.status, 200);
    assert.equal(((await cut.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens, 64);
    const dims = await s.post('/v1/embeddings', { model: MODEL, input: 'hello', dimensions: 64 });
    assert.equal(dims.status, 400);
    assert.match(((await dims.json()) as { error: { message: string } }).error.message, /Matryoshka/);
    const ollamaEmpty = await s.post('/api/embed', { model: MODEL, input: [] });
    assert.equal(ollamaEmpty.status, 400);
    assert.deepEqual(Object.keys((await ollamaEmpty.json()) as object), ['error']);
    const ollamaOver = await s.post('/api/embed', { model: MODEL, input: long, truncate: false });
    assert.equal(ollamaOver.status, 400);
    const ollamaCut = await s.post('/api/embed', { model: MODEL, input: long });
    assert.equal(ollamaCut.status, 200);
  });

  it('rerank on an embedding model scores by cosine, best first, top_n and return_documents', async () => {
    const res = await s.post('/v1/rerank', { model: MODEL, query: RERANK_QUERY, documents: RERANK_DOCUMENTS, top_n: 2, return_documents: true });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { results: { index: number; relevance_score: number; document: { text: string } }[] };
    assert.equal(body.results.length, 2);
    assert.ok(body.results[0]!.relevance_score >= body.results[1]!.relevance_score);
    assert.equal(body.results[0]!.document.text, RERANK_DOCUMENTS[body.results[0]!.index]);
  });

  it('a chat request to an embedding model is a 400', async () => {
    const res = await s.post('/v1/completions', { model: MODEL, prompt: 'hello', max_tokens: 2 });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /pools .*does not generate/);
  });
});

describe('rerank on a BERT cross-encoder', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer(bertFixturePath(bertFixture('bert-rank-f32')), {}, { backend: 'native' });
  });
  after(() => s.close());

  it('/v1/rerank and /rerank give llama.cpp\'s scores (node-llama-cpp\'s sigmoid of the rank output), best first', async () => {
    const g = readEmbeddingGolden('bert-rank-f32').ranks!;
    for (const path of ['/v1/rerank', '/rerank']) {
      const res = await s.post(path, { model: MODEL, query: g.query, documents: g.documents });
      assert.equal(res.status, 200);
      const body = (await res.json()) as { results: { index: number; relevance_score: number }[]; usage: { prompt_tokens: number } };
      const expected = g.scores.map((score, index) => ({ index, score })).sort((a, b) => b.score - a.score);
      assert.deepEqual(body.results.map((r) => r.index), expected.map((e) => e.index));
      // f32 rounding moves the logit by up to ~1e-3 (1 - cosine of the hidden states ~1e-8)
      body.results.forEach((r) => assert.ok(Math.abs(r.relevance_score - g.scores[r.index]!) < 1e-3, `${r.index}: ${r.relevance_score} vs ${g.scores[r.index]}`));
      assert.ok(body.usage.prompt_tokens > 0);
    }
  });

  it('a reranker refuses embeddings; documents objects with text are read', async () => {
    const res = await s.post('/v1/embeddings', { model: MODEL, input: 'hello' });
    assert.equal(res.status, 400);
    const docs = await s.post('/v1/rerank', { query: 'paris', documents: [{ text: 'Paris is the capital of France.' }, { text: 'hello world' }] });
    assert.equal(docs.status, 200);
  });
});

describe('embeddings on a chat model', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'llama-f32'));
  });
  after(() => s.close());

  it('is a 400 in each API\'s shape', async () => {
    const openai = await s.post('/v1/embeddings', { model: MODEL, input: 'hello' });
    assert.equal(openai.status, 400);
    assert.match(((await openai.json()) as { error: { message: string } }).error.message, /generates text; it does not serve embeddings/);
    const ollama = await s.post('/api/embed', { model: MODEL, input: 'hello' });
    assert.equal(ollama.status, 400);
    assert.match(((await ollama.json()) as { error: string }).error, /does not serve embeddings/);
    const rerank = await s.post('/v1/rerank', { model: MODEL, query: 'a', documents: ['b'] });
    assert.equal(rerank.status, 400);
  });
});
