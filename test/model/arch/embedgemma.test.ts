// EmbeddingGemma (gemma-embedding) against llama.cpp: the pooled vectors of the fixtures (GGUF
// F32 with the Dense modules, F16 without) agree with node-llama-cpp's embedding context;
// the sliding layers' symmetric window and the attention both ways are what make them agree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadModel } from '../../../src/model/load.js';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { sha256File } from '../../fixtures/index.js';
import { EMBEDGEMMA_FIXTURES, EMBEDGEMMA_SHAPE, embedGemmaFixture, embedGemmaFixturePath, embedGemmaHFFixturePath } from '../../fixtures/embedgemma-fixture.js';
import { cosine, readEmbeddingGolden } from '../../fixtures/embedding-golden.js';
import { testKernels } from '../../fixtures/native.js';
import { embedAll } from '../../fixtures/embed-all.js';
import { EngineCore, now } from '../../../src/engine/engine.js';
import { GREEDY } from '../../../src/engine/sampler.js';
import { resolveEngineConfig } from '../../../src/engine/options.js';

for (const { name } of EMBEDGEMMA_FIXTURES) {
  for (const [kernelsName, k] of [['native', testKernels()], ['reference', referenceKernels]] as const) {
    test(`${name} (${kernelsName}): every pooled vector within cosine 0.9999 of llama.cpp's`, () => {
      const path = embedGemmaFixturePath(embedGemmaFixture(name));
      const golden = readEmbeddingGolden(name);
      assert.equal(sha256File(path), golden.sha256, 'the fixture changed since its golden was written');
      const model = loadModel(path);
      const ids = golden.embeddings.map((e) => model.tokenizer.encode(e.text));
      golden.embeddings.forEach((e, i) => assert.deepEqual(ids[i], e.ids, `tokens of ${JSON.stringify(e.text)}`));
      const vectors = embedAll(model, ids, k);
      golden.embeddings.forEach((e, i) => {
        assert.equal(vectors[i]!.length, e.vector.length);
        const c = cosine(vectors[i]!, e.vector);
        assert.ok(c >= 0.9999, `${JSON.stringify(e.text)} (${e.ids!.length} tokens): cosine ${c}`);
      });
    });
  }
}

test('gemma-embedding reads as an encoder: mean pooling from the file, the window symmetric and out of the engine\'s sliding-window pool', () => {
  const model = loadModel(embedGemmaFixturePath(embedGemmaFixture('embedgemma-mean-f32')));
  const c = model.config;
  assert.equal(c.arch, 'gemma-embedding');
  assert.equal(c.bidirectional, true);
  assert.deepEqual(c.pooling, { type: 'mean', normalize: true });
  assert.equal(c.slidingWindow, undefined);
  assert.equal(c.gemma?.symmetricWindow?.size, EMBEDGEMMA_SHAPE.slidingWindow);
  assert.deepEqual(c.gemma?.symmetricWindow?.layers, [true, true, true, true, true, false]);
  assert.equal(c.gemma?.queryScale, 1 / Math.sqrt(EMBEDGEMMA_SHAPE.headDim));
});

test('attention runs both ways: a change at position 9 moves the rows before it', () => {
  // two inputs that differ only at position 9, every token's row read through pooling 'none'
  const model = loadModel(embedGemmaFixturePath(embedGemmaFixture('embedgemma-mean-f16')));
  const noneModel = { ...model, config: { ...model.config, pooling: { type: 'none' as const, normalize: false } } };
  const base = model.tokenizer.encode('the cat sat on the mat and the dog sat on the log');
  const changed = [...base];
  changed[9] = changed[9] === base[1] ? base[2]! : base[1]!;
  const [a, b] = embedAll(noneModel, [base, changed], testKernels());
  const d = EMBEDGEMMA_SHAPE.hiddenSize;
  const row = (v: Float32Array, t: number) => v.subarray(t * d, (t + 1) * d);
  // position 5 reaches position 9 in the sliding layers' window; position 0 only through the global layer;
  // a causal model would compute both the same in the two inputs
  assert.ok(cosine(row(a!, 5), row(b!, 5)) < 0.99999);
  assert.ok(cosine(row(a!, 0), row(b!, 0)) < 0.99999);
});

test('through the engine: every input one prefill-only sequence of one step, its vector llama.cpp\'s', () => {
  const model = loadModel(embedGemmaFixturePath(embedGemmaFixture('embedgemma-mean-f32')));
  const config = resolveEngineConfig({ model: '', kvCacheMemory: '64MiB' }, model.config, [...model.tokenizer.stopIds]);
  assert.equal(config.wholeSequences, true);
  const e = new EngineCore(model, testKernels(), config);
  const golden = readEmbeddingGolden('embedgemma-mean-f32');
  golden.embeddings.forEach((g, i) => e.add({ type: 'add', id: `r${i}`, promptIds: Int32Array.from(g.ids!), params: GREEDY, arrivalTime: now(), pool: true }));
  const pooled = new Map<string, Float32Array>();
  while (e.hasWork) for (const d of e.step()?.deltas ?? []) if (d.pooled) pooled.set(d.id, d.pooled);
  golden.embeddings.forEach((g, i) => assert.ok(cosine(pooled.get(`r${i}`)!, g.vector) >= 0.9999, JSON.stringify(g.text)));
});

test('an EmbeddingGemma sentence-transformers folder (Gemma3TextModel, Pooling, Dense, Normalize) gives its GGUF twin\'s vectors', () => {
  for (const f of EMBEDGEMMA_FIXTURES) {
    const model = loadModel(embedGemmaHFFixturePath(f));
    assert.equal(model.config.arch, 'gemma-embedding');
    assert.deepEqual(model.config.pooling, { type: f.pooling, normalize: true });
    assert.equal(model.config.gemma?.symmetricWindow?.size, EMBEDGEMMA_SHAPE.slidingWindow);
    assert.equal(model.tensors.has('dense_2.weight'), f.dense);
    const golden = readEmbeddingGolden(f.name);
    const ids = golden.embeddings.map((e) => model.tokenizer.encode(e.text));
    golden.embeddings.forEach((e, i) => assert.deepEqual(ids[i], e.ids, `${f.name}: tokens of ${JSON.stringify(e.text)}`));
    const vectors = embedAll(model, ids, testKernels());
    golden.embeddings.forEach((e, i) => {
      const c = cosine(vectors[i]!, e.vector);
      assert.ok(c >= 0.9999, `${f.name} ${JSON.stringify(e.text)}: cosine ${c}`);
    });
  }
});
