// The ViT's dense attention (two matmuls a head, queries in blocks) against attention computed
// directly in f64, on both kernel sets, with blocks that split the queries unevenly; and the
// patch flattening against the conv kernel's (channel, row, column) order.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { Kernels } from '../../../src/kernels/index.js';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { Scratch, denseAttention, patchRows } from '../../../src/model/vision/vit.js';
import { nativeSkip, requireNative } from '../../fixtures/native.js';
import { GaussianRng } from '../../fixtures/random.js';

function direct(q: Float32Array, k: Float32Array, v: Float32Array, n: number, heads: number, hd: number, scale: number): Float64Array {
  const out = new Float64Array(n * heads * hd);
  const s = new Float64Array(n);
  for (let h = 0; h < heads; h++) {
    for (let t = 0; t < n; t++) {
      let max = -Infinity;
      for (let j = 0; j < n; j++) {
        let d = 0;
        for (let i = 0; i < hd; i++) d += q[(t * heads + h) * hd + i]! * scale * k[(j * heads + h) * hd + i]!;
        s[j] = d;
        max = Math.max(max, d);
      }
      let sum = 0;
      for (let j = 0; j < n; j++) sum += s[j] = Math.exp(s[j]! - max);
      for (let i = 0; i < hd; i++) {
        let o = 0;
        for (let j = 0; j < n; j++) o += (s[j]! / sum) * v[(j * heads + h) * hd + i]!;
        out[(t * heads + h) * hd + i] = o;
      }
    }
  }
  return out;
}

const backends: [string, Kernels | undefined, string | false][] = [
  ['reference', referenceKernels, false],
  ['native', requireNative(), nativeSkip()],
];

describe('denseAttention', () => {
  const n = 101, heads = 3, hd = 24, scale = 1 / Math.sqrt(hd);
  const rng = new GaussianRng(7);
  const q = rng.fill(n * heads * hd, 1.5), k = rng.fill(n * heads * hd, 1.5), v = rng.fill(n * heads * hd, 1);
  const want = direct(q, k, v, n, heads, hd, scale);
  for (const [name, kernels, skip] of backends) {
    for (const maxScores of [n * n, 37 * n, 1]) {
      it(`${name} kernels, ${Math.min(n, Math.max(1, Math.floor(maxScores / n)))} query rows a block`, { skip }, () => {
        const out = new Float32Array(n * heads * hd);
        denseAttention(kernels!, new Scratch(), out, q, k, v, n, heads, hd, scale, maxScores);
        let worst = 0;
        for (let i = 0; i < out.length; i++) worst = Math.max(worst, Math.abs(out[i]! - want[i]!));
        assert.ok(worst < 2e-5, `max |diff| ${worst}`);
      });
    }
  }
});

describe('patchRows', () => {
  it('flattens each patch as the conv kernel reads it: channel, then row, then column', () => {
    const w = 4, h = 2, p = 2;
    const pixels = Float32Array.from({ length: w * h * 3 }, (_, i) => i);
    const rows = patchRows(pixels, w, h, p);
    // patch 1 (columns 2..3), channel 2, row 1, column 0 = pixel (y 1, x 2), channel 2
    assert.equal(rows[1 * 12 + 2 * 4 + 1 * 2 + 0], pixels[(1 * w + 2) * 3 + 2]);
    assert.equal(rows.length, 2 * 12);
    assert.throws(() => patchRows(pixels, w, h, 3), /not whole patches/);
  });
});
