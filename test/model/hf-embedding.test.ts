// Hugging Face folders of decoder embedding models (Qwen3-Embedding: a Qwen3 folder with
// sentence-transformers' modules.json, last-token pooling, Normalize) pool as llama.cpp's
// converter makes them: their vectors within cosine 0.9999 of llama.cpp's on the GGUF twin.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel } from '../../src/model/load.js';
import { hfFixturePaths, sha256File } from '../fixtures/index.js';
import { HF_FIXTURES } from '../fixtures/recipe.js';
import { cosine, readEmbeddingGolden } from '../fixtures/embedding-golden.js';
import { testKernels } from '../fixtures/native.js';
import { embedAll } from '../fixtures/embed-all.js';

/** the hf-qwen3 fixture as Qwen3-Embedding ships: modules.json, 1_Pooling (last token), 2_Normalize; `arch` in config.json */
function qwen3EmbeddingFolder(arch: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'loom-qwen3-embedding-'));
  cpSync(hfFixturePaths(HF_FIXTURES.find((f) => f.name === 'hf-qwen3')!).folder, dir, { recursive: true });
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, architectures: [arch] }));
  writeFileSync(
    join(dir, 'modules.json'),
    JSON.stringify([
      { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
      { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
      { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
    ]),
  );
  mkdirSync(join(dir, '1_Pooling'));
  writeFileSync(join(dir, '1_Pooling', 'config.json'), JSON.stringify({ word_embedding_dimension: config.hidden_size, pooling_mode_lasttoken: true, pooling_mode_mean_tokens: false, pooling_mode_cls_token: false }));
  mkdirSync(join(dir, '2_Normalize'));
  return dir;
}

for (const arch of ['Qwen3ForCausalLM', 'Qwen3Model']) {
  test(`a ${arch} folder with modules.json is an embedding model: last token, normalized, llama.cpp's vectors`, () => {
    const dir = qwen3EmbeddingFolder(arch);
    try {
      const model = loadModel(dir);
      assert.equal(model.config.arch, 'qwen3');
      assert.deepEqual(model.config.pooling, { type: 'last', normalize: true });
      const golden = readEmbeddingGolden('embed-hf-qwen3');
      assert.equal(sha256File(hfFixturePaths(HF_FIXTURES.find((f) => f.name === 'hf-qwen3')!).gguf), golden.sha256);
      const ids = golden.embeddings.map((e) => model.tokenizer.encode(e.text));
      golden.embeddings.forEach((e, i) => assert.deepEqual(ids[i], e.ids, JSON.stringify(e.text)));
      const vectors = embedAll(model, ids, testKernels());
      golden.embeddings.forEach((e, i) => {
        const c = cosine(vectors[i]!, e.vector);
        assert.ok(c >= 0.9999, `${JSON.stringify(e.text)}: cosine ${c}`);
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('a decoder folder without modules.json still generates', () => {
  const model = loadModel(hfFixturePaths(HF_FIXTURES.find((f) => f.name === 'hf-qwen3')!).folder);
  assert.equal(model.config.pooling, undefined);
});
