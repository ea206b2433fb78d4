// Loading keeps weights in their file type and reads only what the model uses.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createArchitecture } from '../../src/model/arch/index.js';
import { GGMLType } from '../../src/tensor/weight-types.js';
import { openGGUF } from '../../src/model/gguf.js';
import { allocateLarge } from '../../src/kernels/native.js';
import { loadModel } from '../../src/model/load.js';
import { WeightArena } from '../../src/model/weight-arena.js';
import { ggufModelConfig } from '../../src/model/gguf-config.js';
import { writeFixtureGGUF } from '../fixtures/gguf-fixture.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';
import { fixtureVocab } from '../fixtures/vocabs.js';
import { fixtureWeights } from '../fixtures/weights.js';

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

  it('a weight arena hands out zeroed, 64-byte-aligned views of shared chunks, and large tensors their own', () => {
    const chunks: number[] = [];
    const arena = new WeightArena((n) => (chunks.push(n), new ArrayBuffer(n)), 1024);
    const a = arena.take(100);
    const b = arena.take(30);
    assert.equal(a.buffer, b.buffer, 'small tensors share a chunk');
    assert.deepEqual([a.byteOffset, a.byteLength, b.byteOffset, b.byteLength], [0, 100, 128, 30]);
    a.fill(7);
    assert.ok(b.every((x) => x === 0), 'views do not overlap');
    const c = arena.take(500);
    assert.deepEqual([c.buffer === a.buffer, c.byteOffset], [true, 192]);
    const d = arena.take(500); // no room left in the first chunk
    assert.deepEqual([d.buffer === a.buffer, d.byteOffset], [false, 0]);
    const big = arena.take(600); // half a chunk or more: its own buffer
    assert.equal(big.byteOffset, 0);
    assert.equal(big.buffer.byteLength, 600);
    assert.deepEqual(chunks, [1024, 1024, 600]);
  });

  it('large buffers (huge pages where the OS has them), populated or not, are zeroed and hold what is written', () => {
    for (const populate of [false, true]) {
      const buf = new Uint8Array(allocateLarge(3 << 20, populate));
      assert.equal(buf.byteLength, 3 << 20);
      assert.ok(buf.every((x) => x === 0));
      buf[buf.length - 1] = 9;
      assert.equal(buf[buf.length - 1], 9);
    }
  });

  it('a GGUF model loaded with --no-mmap keeps its tensors 64-byte-aligned in the arena', () => {
    const model = loadModel(ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q4_k_m')!), { mmap: false });
    const names = [...(model.tensors as ReturnType<typeof openGGUF>).tensorInfos.keys()];
    const views = names.map((n) => model.tensors.get(n).data);
    assert.ok(views.every((d) => d.byteOffset % 64 === 0));
    assert.ok(new Set(views.map((d) => d.buffer)).size < views.length, 'tensors share chunks');
  });
});
