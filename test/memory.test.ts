// Loading keeps weights in their file type and reads only what the model uses.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createArchitecture } from '../src/model/arch/index.js';
import { GGMLType } from '../src/model/ggml-types.js';
import { openGGUF } from '../src/model/gguf.js';
import { ggufModelConfig } from '../src/model/gguf-config.js';
import { writeFixtureGGUF } from './fixtures/gguf-fixture.js';
import { GGUF_FIXTURES } from './fixtures/recipe.js';
import { fixtureVocab } from './fixtures/vocabs.js';
import { fixtureWeights } from './fixtures/weights.js';

describe('memory', () => {
  it('a quantized model is read once, in its own types, without unused tensors', () => {
    const fixture = GGUF_FIXTURES.find((f) => f.name === 'llama-q4_k_m')!;
    const dir = mkdtempSync(join(tmpdir(), 'loom-mem-'));
    try {
      // the fixture plus a large tensor no architecture asks for
      const path = join(dir, 'with-extra.gguf');
      const vocab = fixtureVocab(fixture.tokenizer);
      const unused = { name: 'unused.weight', dims: [4096, 256], values: new Float32Array(4096 * 256), matrix: false };
      writeFixtureGGUF(path, fixture, [...fixtureWeights(fixture.shape, vocab.tokens.length, fixture.seed), unused], vocab);
      const file = openGGUF(path);
      const arch = createArchitecture(ggufModelConfig(path, file.metadata, file), file);
      assert.ok(arch);
      const used = [...file.tensorInfos.values()].filter((t) => t.name !== 'unused.weight');
      assert.equal(file.bytesRead, used.reduce((n, t) => n + t.byteLength, 0), 'every used tensor read once, the unused one never');
      for (const t of used) {
        const w = file.get(t.name);
        assert.equal(w.type, t.type, `${t.name} keeps its file type`);
        assert.equal(w.data.byteLength, t.byteLength, `${t.name} holds its file bytes, not an f32 copy`);
      }
      assert.ok(used.some((t) => t.type === GGMLType.Q4_K) && used.some((t) => t.type === GGMLType.Q6_K));
      file.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
