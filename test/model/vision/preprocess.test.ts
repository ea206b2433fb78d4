// llama.cpp's resize (mtmd-image.cpp img_tool::resize), bit for bit: every filter shrinking and
// enlarging, stretched and letterboxed (goldens/vision/resize.json, scripts/vision-goldens.mjs).
// Normalization is checked with Gemma 3's pixels against llama.cpp's (gemma3.test.ts).
import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { dynamicSize, resizeLetterbox, resizePillow } from '../../../src/model/vision/preprocess.js';
import { GEMMA4V_PROJECTOR_SHAPE } from '../../fixtures/mmproj-fixture.js';
import { GOLDEN_DIR } from '../../fixtures/index.js';
import { RESIZE_CASES, TEST_IMAGES, readTestImage } from '../../fixtures/test-images.js';

const golden = JSON.parse(readFileSync(join(GOLDEN_DIR, 'vision', 'resize.json'), 'utf8')) as {
  resize: Record<string, string>;
  dynamic: { sizes: { in: [number, number]; out: [number, number] }[] };
};

describe('resize as llama.cpp', () => {
  for (const img of TEST_IMAGES) {
    for (const c of RESIZE_CASES) {
      it(`${img.file} ${c.name}`, async () => {
        const rgb = await readTestImage(img.file);
        const out = c.pad === 'none' ? resizePillow(rgb, c.width, c.height, c.algo) : resizeLetterbox(rgb, c.width, c.height, c.algo, c.color ?? [0, 0, 0], c.pad);
        assert.equal(out.data.length, c.width * c.height * 3);
        assert.equal(createHash('sha256').update(out.data).digest('hex'), golden.resize[`${img.file} ${c.name}`]);
      });
    }
  }
  it('leaves an image of the target size as it is', () => {
    const img = { width: 3, height: 2, data: Uint8Array.from({ length: 18 }, (_, i) => i * 13) };
    assert.deepEqual(resizeLetterbox(img, 3, 2, 'bicubic').data, img.data);
    assert.deepEqual(resizePillow(img, 3, 2, 'lanczos').data, img.data);
  });
});

describe('dynamicSize as llama.cpp\'s dyn-size preprocessor', () => {
  // Gemma 4's limits for the fixture's patches: 70..1120 tokens of (8 · 3)² pixels
  const align = GEMMA4V_PROJECTOR_SHAPE.patchSize * GEMMA4V_PROJECTOR_SHAPE.merge;
  for (const { in: [w, h], out } of golden.dynamic.sizes) {
    it(`${w}x${h} → ${out.join('x')}`, () => {
      assert.deepEqual(dynamicSize(w, h, { align, minPixels: 70 * align * align, maxPixels: 1120 * align * align }), out);
    });
  }
});
