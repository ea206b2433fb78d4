// Qwen's dynamic resolution against llama.cpp: for 30 image sizes at patch 16 and 14 (merged 2×2)
// the size mtmd resizes to and the token grid clip computes (goldens from
// scripts/qwen-resize-goldens.mjs), and the invariants any answer must keep.
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { QWEN_MAX_TOKENS, QWEN_MIN_TOKENS, qwenPrepare, qwenTargetSize } from '../../../src/model/vision/qwen-resize.js';
import { GOLDEN_DIR } from '../../fixtures/index.js';

interface Golden {
  readonly cases: readonly { patchSize: number; mergeSize: number; sizes: readonly { in: [number, number]; out: [number, number]; grid: [number, number]; tokens: number }[] }[];
}

const golden = JSON.parse(readFileSync(join(GOLDEN_DIR, 'vision', 'qwen-resize-sizes.json'), 'utf8')) as Golden;

describe("Qwen's dynamic resolution (qwenTargetSize)", () => {
  for (const c of golden.cases) {
    it(`patch ${c.patchSize}, merge ${c.mergeSize}: llama.cpp's size and token grid for ${c.sizes.length} images`, () => {
      const align = c.patchSize * c.mergeSize;
      for (const s of c.sizes) {
        const got = qwenTargetSize(s.in[0], s.in[1], { patchSize: c.patchSize, mergeSize: c.mergeSize });
        assert.deepEqual([got.width, got.height], s.out, `${s.in.join('x')}`);
        assert.deepEqual([got.width / align, got.height / align], s.grid, `${s.in.join('x')} grid`);
        assert.equal((got.width / align) * (got.height / align), s.tokens);
      }
    });
  }

  it('sides are whole merged patches and the tokens stay within the bounds', () => {
    for (const [w, h] of [[1, 1], [3, 2000], [2000, 3], [12345, 6789], [333, 444], [4096, 4096]] as const) {
      const s = qwenTargetSize(w, h, { patchSize: 16, mergeSize: 2 });
      assert.ok(s.width % 32 === 0 && s.height % 32 === 0, `${w}x${h} → ${s.width}x${s.height}`);
      const tokens = (s.width / 32) * (s.height / 32);
      assert.ok(tokens >= QWEN_MIN_TOKENS && tokens <= QWEN_MAX_TOKENS, `${w}x${h}: ${tokens} tokens`);
    }
    const small = qwenTargetSize(4000, 3000, { patchSize: 16, mergeSize: 2, maxTokens: 256 });
    assert.ok((small.width / 32) * (small.height / 32) <= 256);
  });

  it('qwenPrepare: the pixels of the target size, normalized, and the grid', () => {
    const img = { width: 50, height: 20, data: new Uint8Array(50 * 20 * 3).fill(255) };
    const p = qwenPrepare(img, { patchSize: 16, mergeSize: 2 }, Float32Array.of(0.5, 0.5, 0.5), Float32Array.of(0.5, 0.5, 0.5));
    const s = qwenTargetSize(50, 20, { patchSize: 16, mergeSize: 2 });
    assert.deepEqual([p.width, p.height, p.gridCols, p.gridRows, p.numTokens], [s.width, s.height, s.width / 32, s.height / 32, (s.width * s.height) / 1024]);
    assert.equal(p.pixels.length, s.width * s.height * 3);
    // white is (1 − 0.5) / 0.5 = 1; the letterbox's black bars −1
    const centre = ((s.height >> 1) * s.width + (s.width >> 1)) * 3;
    assert.equal(p.pixels[centre], 1);
  });
});
