// Qwen3.5's projector (qwen3vl_merger) against llama.cpp (goldens from scripts/vision-goldens.mjs:
// libmtmd's embeddings, token grid and preprocessed pixels for the tiny projector fixtures and
// test images): the preprocessed pixels bit for bit, the token grid and M-RoPE advance, the
// embeddings per row within cosine 0.9999 and a max-abs bound, on the reference and the native
// kernels; and the files loom cannot run refused by name.
import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { referenceKernels } from '../../../src/kernels/reference.js';
import type { Kernels } from '../../../src/kernels/index.js';
import { UnsupportedModelError } from '../../../src/errors.js';
import { GGUFValueType, kv } from '../../../src/model/gguf-writer.js';
import { loadModel } from '../../../src/model/load.js';
import { loadProjector } from '../../../src/model/vision/projector-file.js';
import type { LoadedProjector } from '../../../src/model/vision/projector-file.js';
import { GOLDEN_DIR, ggufFixturePath } from '../../fixtures/index.js';
import { GGUF_FIXTURES } from '../../fixtures/recipe.js';
import { QWEN3VL_PROJECTOR_FIXTURES, qwen3vlFixturePath, writeQwen3vlGGUF } from '../../fixtures/mmproj-qwen3vl.js';
import { requireNative, nativeSkip } from '../../fixtures/native.js';
import { TEST_IMAGES, readTestImage } from '../../fixtures/test-images.js';
import { assertRowsClose, f32 } from '../../fixtures/vision-goldens.js';
import type { GoldenImage } from '../../fixtures/vision-goldens.js';

interface Golden {
  readonly n_embd: number;
  readonly images: Record<string, GoldenImage>;
}

/**
 * Bounds against llama.cpp without flash attention (f32 attention, as loom's): cosine ≥ 0.9999
 * per row on every type and max |diff| as seen (2026-11-28): F32 3.9e-4, F16 2.2e-3 (an F16
 * matmul's activations or GELU's f16 table rounding the other way), Q8_0 3.6e-7 (its activations
 * are requantized exactly as llama.cpp's). With flash attention (llama-mtmd-cli's default, K and
 * V rounded to f16): F32 and F16 still ≥ 0.9999 (max |diff| 4.4e-3, 6.5e-3), while Q8_0's block
 * requantization turns those small differences into rounding flips (worst row 0.99948, 5.4e-2).
 * Embeddings are O(1).
 */
const BOUNDS: Record<string, { plain: number; flash: number; flashCos: number }> = {
  'mmproj-qwen3vl-f32': { plain: 1e-3, flash: 1e-2, flashCos: 0.9999 },
  'mmproj-qwen3vl-f16': { plain: 5e-3, flash: 1.5e-2, flashCos: 0.9999 },
  'mmproj-qwen3vl-q8_0': { plain: 1e-5, flash: 1e-1, flashCos: 0.999 },
};

const native = requireNative();
const backends: [string, Kernels | undefined, string | false][] = [
  ['reference', referenceKernels, false],
  ['native', native, nativeSkip()],
];

for (const f of QWEN3VL_PROJECTOR_FIXTURES) {
  describe(`${f.name} against llama.cpp`, () => {
    const golden = JSON.parse(readFileSync(join(GOLDEN_DIR, 'vision', `${f.name}.json`), 'utf8')) as Golden;
    const text = loadModel(ggufFixturePath(f.text));
    const projector: LoadedProjector = loadProjector(qwen3vlFixturePath(f), text.config);
    after(() => {
      projector.dispose();
      text.dispose();
    });

    it('states the layout llama.cpp uses', () => {
      assert.equal(projector.kind, 'qwen3vl');
      assert.equal(projector.outputSize, golden.n_embd);
      assert.equal(projector.nonCausalImage, false);
      assert.equal(projector.positions, 'mrope');
      assert.equal(projector.imageBegin, '<|vision_start|>');
      assert.equal(projector.imageEnd, '<|vision_end|>');
      for (const g of Object.values(golden.images)) assert.equal(g.non_causal, false);
      // the markers tokenize as mtmd tokenizes them
      const g = Object.values(golden.images)[0]!;
      const [begin, , end] = g.chunks;
      assert.deepEqual(text.tokenizer.encode(projector.imageBegin, { addSpecial: false, parseSpecial: true }), begin!.type === 'text' ? begin!.tokens : []);
      assert.deepEqual(text.tokenizer.encode(projector.imageEnd, { addSpecial: false, parseSpecial: true }), end!.type === 'text' ? end!.tokens : []);
    });

    for (const img of TEST_IMAGES) {
      const g = golden.images[img.file]!;
      const image = g.chunks.find((c) => c.type === 'image')!;
      it(`${img.file}: pixels bit-exact, llama.cpp's token grid`, async () => {
        const prepared = projector.prepare(await readTestImage(img.file));
        assert.equal(prepared.width, g.pixels.nx);
        assert.equal(prepared.height, g.pixels.ny);
        assert.deepEqual([...prepared.pixels.subarray(0, g.pixels.head.length)], g.pixels.head);
        const hash = createHash('sha256').update(new Uint8Array(prepared.pixels.buffer, prepared.pixels.byteOffset, prepared.pixels.byteLength)).digest('hex');
        assert.equal(hash, g.pixels.sha256);
        assert.ok(image.type === 'image');
        assert.deepEqual([prepared.numTokens, prepared.gridCols, prepared.gridRows], [image.n_tokens, image.nx, image.ny]);
        // mtmd's n_pos of an M-RoPE image: the text after it continues max(rows, cols) on
        assert.equal(Math.max(prepared.gridRows, prepared.gridCols), image.n_pos);
      });
      for (const [name, kernels, skip] of backends) {
        it(`${img.file}: embeddings (${name} kernels)`, { skip }, async () => {
          const prepared = projector.prepare(await readTestImage(img.file));
          const [got] = projector.encode([prepared], kernels!);
          const bound = BOUNDS[f.name]!;
          assertRowsClose(got!, f32(g.embeddings_no_flash_attn), golden.n_embd, 0.9999, bound.plain, `${f.name} ${img.file} vs llama.cpp (no flash attention)`);
          assertRowsClose(got!, f32(g.embeddings), golden.n_embd, bound.flashCos, bound.flash, `${f.name} ${img.file} vs llama.cpp (flash attention)`);
        });
      }
    }
  });
}

describe('qwen3vl_merger files loom cannot run are refused by name', () => {
  const f = QWEN3VL_PROJECTOR_FIXTURES[0]!;
  const text = loadModel(ggufFixturePath(f.text));
  after(() => text.dispose());
  const refused = (what: string, edit: Parameters<typeof writeQwen3vlGGUF>[2], pattern: RegExp): void => {
    it(what, () => {
      const path = join(tmpdir(), `loom-qwen3vl-${process.pid}-${what.replace(/\W+/g, '-')}.gguf`);
      writeQwen3vlGGUF(path, f, edit);
      assert.throws(() => loadProjector(path, text.config), (e: Error) => e instanceof UnsupportedModelError && e.message.includes(path) && pattern.test(e.message));
    });
  };
  refused('deepstack layers (Qwen3-VL)', (_t, m) => {
    const i = m.findIndex((e) => e.key === 'clip.vision.is_deepstack_layers');
    m[i] = kv.arr(GGUFValueType.BOOL, 'clip.vision.is_deepstack_layers', [true, false]);
  }, /deepstack/);
  refused('a merge other than 2×2', (_t, m) => {
    const i = m.findIndex((e) => e.key === 'clip.vision.spatial_merge_size');
    m[i] = kv.u32('clip.vision.spatial_merge_size', 3);
  }, /spatial_merge_size 3/);
  refused('no second frame kernel', (t) => {
    t.splice(t.findIndex((x) => x.name === 'v.patch_embd.weight.1'), 1);
  }, /v\.patch_embd\.weight\.1/);
  refused('a gated MLP (not in qwen3vl.cpp)', (t) => {
    const up = t.find((x) => x.name === 'v.blk.1.ffn_up.weight')!;
    t.push({ ...up, name: 'v.blk.1.ffn_gate.weight' });
  }, /v\.blk\.1\.ffn_gate\.weight/);
  refused('no position embedding', (t) => {
    t.splice(t.findIndex((x) => x.name === 'v.position_embd.weight'), 1);
  }, /v\.position_embd\.weight/);

  it('a Qwen3.5 projector for a Gemma model, and a text model without rope sections', () => {
    const gemma = loadModel(ggufFixturePath(GGUF_FIXTURES.find((x) => x.name === 'gemma3-q8_0')!));
    try {
      assert.throws(() => loadProjector(qwen3vlFixturePath(f), gemma.config), /for Qwen3\.5 models, not a gemma3 model/);
    } finally {
      gemma.dispose();
    }
    const { ropeSections: _, ...noSections } = text.config;
    assert.throws(() => loadProjector(qwen3vlFixturePath(f), noSections), /rope\.dimension_sections/);
  });
});
