// The projectors (Gemma 3's, Gemma 4's) against llama.cpp (goldens from scripts/vision-goldens.mjs:
// libmtmd's embeddings and preprocessed pixels for the tiny projector fixtures and test images):
// the preprocessed pixels bit for bit, the embeddings per row within a cosine and a max-abs
// bound, on the reference and the native kernels.
import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { referenceKernels } from '../../../src/kernels/reference.js';
import type { Kernels } from '../../../src/kernels/index.js';
import { loadModel } from '../../../src/model/load.js';
import { loadProjector } from '../../../src/model/vision/projector-file.js';
import type { LoadedProjector } from '../../../src/model/vision/projector-file.js';
import { GOLDEN_DIR, ggufFixturePath, sha256File } from '../../fixtures/index.js';
import { PROJECTOR_FIXTURES, projectorFixturePath } from '../../fixtures/mmproj-fixture.js';
import { requireNative, nativeSkip } from '../../fixtures/native.js';
import { TEST_IMAGES, readTestImage } from '../../fixtures/test-images.js';

interface GoldenImage {
  readonly chunks: readonly ({ type: 'text'; tokens: number[] } | { type: 'image'; n_tokens: number })[];
  readonly non_causal: boolean;
  readonly embeddings: string;
  readonly embeddings_no_flash_attn: string;
  readonly pixels: { nx: number; ny: number; sha256: string; head: number[] };
}
interface Golden {
  readonly projector_sha256: string;
  readonly text_sha256: string;
  readonly n_embd: number;
  readonly images: Record<string, GoldenImage>;
}

const f32 = (b64: string): Float32Array => {
  const bytes = Buffer.from(b64, 'base64');
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
};

/** per row: cosine ≥ minCos; overall: max |a − b| ≤ maxAbs */
function assertClose(got: Float32Array, want: Float32Array, width: number, minCos: number, maxAbs: number, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  let worst = 1, abs = 0;
  for (let r = 0; r < got.length / width; r++) {
    let dot = 0, na = 0, nb = 0;
    for (let i = r * width; i < (r + 1) * width; i++) {
      dot += got[i]! * want[i]!;
      na += got[i]! ** 2;
      nb += want[i]! ** 2;
      abs = Math.max(abs, Math.abs(got[i]! - want[i]!));
    }
    worst = Math.min(worst, dot / Math.sqrt(na * nb));
  }
  assert.ok(worst >= minCos, `${what}: worst row cosine ${worst} < ${minCos}`);
  assert.ok(abs <= maxAbs, `${what}: max |diff| ${abs} > ${maxAbs}`);
}

/**
 * Bounds per fixture (embeddings are O(1), at most about 4.5 here). Against llama.cpp without
 * flash attention (f32 attention, as loom's): Gemma 3's Q8_0 fixture agrees to rounding (its
 * activations requantized per layer exactly as llama.cpp's); F32 / F16 to where an f16 rounding
 * of GELU's table or of an F16 matmul's activations flips (2e-4, 1.4e-3 seen); Gemma 4's Q8_0
 * requantizes differences of 1e-7 (rotary, norms) into 3e-2 (1 − cos 4e-5). llama-mtmd-cli's
 * default runs flash attention, K and V in f16: llama.cpp's own two paths differ by up to 2e-3,
 * 4e-3 and 6e-2 (F32, F16, Q8_0) and, for Q8_0, 1 − cos 1.6e-4; loom is held to about that.
 */
const BOUNDS: Record<string, { plain: number; flash: number; flashCos: number }> = {
  'mmproj-gemma3-f32': { plain: 5e-4, flash: 6e-3, flashCos: 0.9999 },
  'mmproj-gemma3-f16': { plain: 3e-3, flash: 1e-2, flashCos: 0.9999 },
  'mmproj-gemma3-q8_0': { plain: 2e-4, flash: 8e-2, flashCos: 0.9999 },
  'mmproj-gemma4v-f32': { plain: 5e-4, flash: 6e-3, flashCos: 0.9999 },
  'mmproj-gemma4v-q8_0': { plain: 6e-2, flash: 1e-1, flashCos: 0.9995 },
};

/** what each kind tells the engine (llama.cpp's mtmd.cpp) */
const LAYOUT = {
  gemma3: { imageBegin: '<start_of_image>', imageEnd: '<end_of_image>' },
  gemma4v: { imageBegin: '<|image>', imageEnd: '<image|>' },
} as const;

const native = requireNative();
const backends: [string, Kernels | undefined, string | false][] = [
  ['reference', referenceKernels, false],
  ['native', native, nativeSkip()],
];

for (const f of PROJECTOR_FIXTURES) {
  describe(`${f.name} against llama.cpp`, () => {
    const golden = JSON.parse(readFileSync(join(GOLDEN_DIR, 'vision', `${f.name}.json`), 'utf8')) as Golden;
    const text = loadModel(ggufFixturePath(f.text));
    const projector: LoadedProjector = loadProjector(projectorFixturePath(f), text.config);
    after(() => {
      projector.dispose();
      text.dispose();
    });

    it('has goldens of these very files', () => {
      const rerun = 'the fixture changed: run `npx tsc -p . && node scripts/vision-goldens.mjs` again';
      assert.equal(sha256File(projectorFixturePath(f)), golden.projector_sha256, rerun);
      assert.equal(sha256File(ggufFixturePath(f.text)), golden.text_sha256, rerun);
    });

    it('states the layout llama.cpp uses', () => {
      assert.equal(projector.kind, f.kind);
      assert.equal(projector.outputSize, golden.n_embd);
      assert.equal(projector.positions, 'linear');
      assert.equal(projector.imageBegin, LAYOUT[f.kind].imageBegin);
      assert.equal(projector.imageEnd, LAYOUT[f.kind].imageEnd);
      for (const g of Object.values(golden.images)) assert.equal(projector.nonCausalImage, g.non_causal);
    });

    for (const img of TEST_IMAGES) {
      const g = golden.images[img.file]!;
      it(`${img.file}: pixels bit-exact`, async () => {
        const prepared = projector.prepare(await readTestImage(img.file));
        assert.equal(prepared.width, g.pixels.nx);
        assert.equal(prepared.height, g.pixels.ny);
        assert.deepEqual([...prepared.pixels.subarray(0, g.pixels.head.length)], g.pixels.head);
        const hash = createHash('sha256').update(new Uint8Array(prepared.pixels.buffer, prepared.pixels.byteOffset, prepared.pixels.byteLength)).digest('hex');
        assert.equal(hash, g.pixels.sha256);
        const image = g.chunks.find((c) => c.type === 'image')!;
        assert.equal(prepared.numTokens, image.type === 'image' ? image.n_tokens : -1);
      });
      for (const [name, kernels, skip] of backends) {
        it(`${img.file}: embeddings (${name} kernels)`, { skip }, async () => {
          const prepared = projector.prepare(await readTestImage(img.file));
          const [got] = projector.encode([prepared], kernels!);
          const bound = BOUNDS[f.name]!;
          assertClose(got!, f32(g.embeddings_no_flash_attn), golden.n_embd, 0.9999, bound.plain, `${f.name} ${img.file} vs llama.cpp (no flash attention)`);
          assertClose(got!, f32(g.embeddings), golden.n_embd, bound.flashCos, bound.flash, `${f.name} ${img.file} vs llama.cpp (flash attention)`);
        });
      }
    }
  });
}
