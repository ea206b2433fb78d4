// BERT and nomic-bert against llama.cpp: the pooled vectors of the fixtures (GGUF F32/F16 and the HF
// folder of the same weights) agree with node-llama-cpp's embedding and ranking contexts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadModel } from '../../../src/model/load.js';
import type { LoadedModel } from '../../../src/model/load.js';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { sha256File } from '../../fixtures/index.js';
import { BERT_TEXTS, bertFixture, bertFixturePath, bertHFFixturePath } from '../../fixtures/bert-fixture.js';
import { cosine, readEmbeddingGolden } from '../../fixtures/embedding-golden.js';
import { testKernels } from '../../fixtures/native.js';
import { embedAll } from '../../fixtures/embed-all.js';

for (const name of ['bert-mean-f32', 'bert-cls-f16', 'nomic-bert-mean-f16']) {
  for (const [kernelsName, k] of [['native', testKernels()], ['reference', referenceKernels]] as const) {
    test(`${name} (${kernelsName}): every pooled vector within cosine 0.9999 of llama.cpp's`, () => {
      const path = bertFixturePath(bertFixture(name));
      const golden = readEmbeddingGolden(name);
      assert.equal(sha256File(path), golden.sha256, 'the fixture changed since its golden was written');
      const model = loadModel(path);
      const vectors = embedAll(model, golden.embeddings.map((e) => model.tokenizer.encode(e.text)), k);
      golden.embeddings.forEach((e, i) => {
        assert.equal(vectors[i]!.length, e.vector.length);
        const c = cosine(vectors[i]!, e.vector);
        assert.ok(c >= 0.9999, `${JSON.stringify(e.text)}: cosine ${c}`);
      });
    });
  }
}

test('an HF sentence-transformers folder of the same weights gives the same vectors, its pooling and Normalize read from modules.json', () => {
  for (const name of ['bert-mean-f32', 'bert-cls-f16', 'nomic-bert-mean-f16']) {
    const f = bertFixture(name);
    const model = loadModel(bertHFFixturePath(f));
    assert.equal(model.config.arch, f.arch ?? 'bert');
    assert.equal(model.config.pooling?.type, f.pooling);
    assert.equal(model.config.pooling?.normalize, true);
    const golden = readEmbeddingGolden(name);
    const vectors = embedAll(model, golden.embeddings.map((e) => model.tokenizer.encode(e.text)), testKernels());
    golden.embeddings.forEach((e, i) => assert.ok(cosine(vectors[i]!, e.vector) >= 0.9999, `${name} ${JSON.stringify(e.text)}`));
  }
});

test('the HF tokenizer.json and the GGUF vocabulary tokenize BERT text alike', () => {
  const f = bertFixture('bert-mean-f32');
  const gguf = loadModel(bertFixturePath(f)).tokenizer;
  const hf = loadModel(bertHFFixturePath(f)).tokenizer;
  for (const text of BERT_TEXTS) assert.deepEqual(hf.encode(text), gguf.encode(text), text);
});

test('a token\'s vector depends on the tokens after it (attention runs both ways)', () => {
  const model = loadModel(bertFixturePath(bertFixture('bert-cls-f16')));
  const k = testKernels();
  const [a, b] = embedAll(model, [model.tokenizer.encode('hello world'), model.tokenizer.encode('hello river')], k);
  // cls pooling reads token 0, which a causal model would compute the same in both
  assert.ok(cosine(a!, b!) < 0.9999);
});

test('an HF BertForSequenceClassification folder ranks: its classifier is cls.output, its scores the GGUF twin\'s', () => {
  const f = bertFixture('bert-rank-f32');
  const hf = loadModel(bertHFFixturePath(f));
  const gguf = loadModel(bertFixturePath(f));
  assert.deepEqual(hf.config.pooling, { type: 'rank', normalize: false, labels: ['score0'] });
  const pair = (m: LoadedModel) => [...m.tokenizer.encode('what is the capital of france'), ...m.tokenizer.encode('Paris is the capital of France.', { addSpecial: false })];
  assert.deepEqual(pair(hf), pair(gguf));
  const [a] = embedAll(hf, [pair(hf)], testKernels());
  const [b] = embedAll(gguf, [pair(gguf)], testKernels());
  assert.equal(a!.length, 1);
  assert.ok(Math.abs(a![0]! - b![0]!) < 1e-5);
});
