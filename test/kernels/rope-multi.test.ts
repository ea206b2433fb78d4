// M-RoPE (ggml_rope_multi): the reference against the rotation written out from its formula
// (which position each pair takes, which power of the base), the native core against the
// reference in every mode, and the fact the text model relies on: four equal positions rotate
// exactly as plain NeoX RoPE, so a text-only batch is unchanged by the M-RoPE path.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Kernels, MropeMode, RopeSections } from '../../src/kernels/index.js';
import { referenceKernels as ref } from '../../src/kernels/reference.js';
import { RUN_SEED, relError, rngFor } from '../fixtures/kernel-cases.js';
import { nativeSkip, requireNative } from '../fixtures/native.js';
import { linearScaling, yarnScaling } from '../../src/tensor/rope-scaling.js';

const seedNote = `(LOOM_TEST_SEED=${RUN_SEED})`;

/** positions [4n] section-major from per-token (t, h, w, e) */
function sectionMajor(tokens: readonly (readonly [number, number, number, number])[]): Int32Array {
  const n = tokens.length;
  const out = new Int32Array(4 * n);
  tokens.forEach((p, t) => p.forEach((v, c) => (out[c * n + t] = v)));
  return out;
}

/**
 * The rotation from its definition (llama.cpp's ggml_mrope_cache_init read as a formula, in
 * f64): pair i of a head takes position component c and exponent e and turns by
 * p_c · base^(−2e/ropeDim). imrope: c cycles t, h, w over the pairs while each section lasts;
 * mrope: the sections follow each other; vision: likewise, with e counted from the section's start.
 */
function formula(x: Float32Array, tokens: readonly (readonly number[])[], heads: number, headDim: number, ropeDim: number, base: number, s: RopeSections, mode: MropeMode): Float64Array {
  const out = Float64Array.from(x);
  const pairs = mode === 'vision' ? ropeDim : ropeDim / 2;
  const total = s[0] + s[1] + s[2] + s[3];
  const starts = [0, s[0], s[0] + s[1], s[0] + s[1] + s[2]];
  tokens.forEach((p, t) => {
    for (let i = 0; i < pairs; i++) {
      const sector = i % total;
      let c: number;
      if (mode === 'imrope') {
        const lane = sector % 3; // t, h, w in turn; a lane past its section's count falls to e
        c = sector < 3 * s[lane]! ? lane : 3;
      } else {
        c = sector < starts[1]! ? 0 : sector < starts[2]! ? 1 : sector < starts[3]! ? 2 : 3;
      }
      const e = mode === 'vision' ? sector - starts[c]! : i;
      const angle = p[c]! * Math.pow(base, (-2 * e) / ropeDim);
      for (let h = 0; h < heads; h++) {
        const a = (t * heads + h) * headDim + i;
        const b = a + pairs;
        const [x0, x1] = [x[a]!, x[b]!];
        out[a] = x0 * Math.cos(angle) - x1 * Math.sin(angle);
        out[b] = x0 * Math.sin(angle) + x1 * Math.cos(angle);
      }
    }
  });
  return out;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0;
  for (let i = 0; i < b.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

/** (heads, headDim, ropeDim, sections, mode): Qwen3.5's text attention, the Qwen ViT's, and awkward ones */
const CASES: readonly [number, number, number, RopeSections, MropeMode][] = [
  [2, 256, 64, [11, 11, 10, 0], 'imrope'], // Qwen3.5 (partial rotation: 64 of 256)
  [3, 32, 16, [3, 3, 2, 0], 'imrope'], // the fixtures' sections
  [1, 24, 24, [4, 2, 3, 3], 'imrope'], // a lane running out before the others, and e
  [2, 128, 128, [16, 24, 24, 0], 'mrope'], // Qwen2-VL's
  [1, 20, 12, [2, 2, 1, 1], 'mrope'],
  [2, 64, 32, [16, 16, 16, 16], 'vision'], // the Qwen3-VL ViT (head 64: pairs (i, i + 32))
  [1, 16, 6, [2, 2, 2, 2], 'vision'], // 2·ropeDim < headDim: the tail stays
];

const TOKENS: readonly (readonly [number, number, number, number])[] = [
  [0, 0, 0, 0], [7, 7, 7, 7], [12, 12, 15, 0], [12, 13, 14, 0], [40, 3, 250, 9], [299, 17, 2, 300],
];

describe('ropeMulti (reference) against its formula', () => {
  it('an explicit case: IMROPE sections [1, 1, 1, 0] over 3 pairs turn by t, h·b^(−1/3), w·b^(−2/3)', () => {
    const x = Float32Array.from([1, 1, 1, 0, 0, 0]); // NeoX pairs (0, 3), (1, 4), (2, 5), each (1, 0)
    ref.ropeMulti(x, sectionMajor([[1, 2, 3, 0]]), 1, 6, 6, 10000, [1, 1, 1, 0], 'imrope');
    const angles = [1, 2 * Math.pow(10000, -1 / 3), 3 * Math.pow(10000, -2 / 3)];
    angles.forEach((a, i) => {
      assert.ok(Math.abs(x[i]! - Math.cos(a)) < 1e-6, `pair ${i} x`);
      assert.ok(Math.abs(x[i + 3]! - Math.sin(a)) < 1e-6, `pair ${i} y`);
    });
  });

  it('every mode and shape, positions differing per section', () => {
    for (const [heads, headDim, ropeDim, sections, mode] of CASES) {
      const x = rngFor(`mrope formula ${mode} ${headDim}`).fill(TOKENS.length * heads * headDim, 1);
      const out = x.slice();
      ref.ropeMulti(out, sectionMajor(TOKENS), heads, headDim, ropeDim, 10000, sections, mode);
      // ggml's f32 angles (products of up to 64 rounded factors, positions < 300) stay within 1e-3 rad
      const d = maxAbsDiff(out, formula(x, TOKENS, heads, headDim, ropeDim, 10000, sections, mode));
      assert.ok(d < 2e-3, `${mode} ${heads}x${headDim} rot ${ropeDim} [${sections.join(', ')}]: |Δ| ${d.toExponential(2)} ${seedNote}`);
      // the dims past the rotated ones are untouched
      const rotated = mode === 'vision' ? 2 * ropeDim : ropeDim;
      for (let i = rotated; i < headDim; i++) assert.equal(out[i], x[i]);
    }
  });

  it('a wrong section choice would show: t and h swapped differ from the formula', () => {
    const [heads, headDim, ropeDim, sections] = [1, 24, 24, [4, 2, 3, 3] as RopeSections];
    const x = rngFor('mrope swapped').fill(TOKENS.length * heads * headDim, 1);
    const swapped = TOKENS.map(([t, h, w, e]) => [h, t, w, e] as const);
    const out = x.slice();
    ref.ropeMulti(out, sectionMajor(swapped), heads, headDim, ropeDim, 10000, sections, 'imrope');
    assert.ok(maxAbsDiff(out, formula(x, TOKENS, heads, headDim, ropeDim, 10000, sections, 'imrope')) > 0.1);
  });
});

function equalPositionsAreNeox(k: Kernels): void {
  const positions = Int32Array.from([0, 1, 2, 77, 1000, 65535, 262143]);
  const four = sectionMajor(Array.from(positions, (p) => [p, p, p, p] as const));
  for (const [heads, headDim, ropeDim, sections, mode, scaling] of [
    [2, 256, 64, [11, 11, 10, 0], 'imrope', undefined],
    [3, 32, 16, [3, 3, 2, 0], 'imrope', yarnScaling(4, 16, 10000000, 4096)],
    [1, 64, 64, [8, 12, 12, 0], 'mrope', linearScaling(2)],
  ] as const) {
    const x = rngFor(`mrope = neox ${k.name} ${headDim}`).fill(positions.length * heads * headDim, 1);
    const plain = x.slice();
    k.rope(plain, positions, heads, headDim, ropeDim, 10000000, 'neox', scaling);
    const multi = x.slice();
    k.ropeMulti(multi, four, heads, headDim, ropeDim, 10000000, sections, mode, scaling);
    assert.deepEqual(multi, plain, `${k.name} ${mode} [${sections.join(', ')}]`);
  }
}

describe('ropeMulti with four equal positions is plain NeoX RoPE, bit for bit', () => {
  it('reference', () => equalPositionsAreNeox(ref));
  it('native', { skip: nativeSkip() }, () => equalPositionsAreNeox(requireNative()!));
});

describe('ropeMulti: native against the reference', { skip: nativeSkip() }, () => {
  const k = requireNative();
  it('every mode and shape, long positions, with scaling and frequency factors', () => {
    const tokens = [...TOKENS, [4096, 70000, 3, 262143] as const];
    const positions = sectionMajor(tokens);
    for (const [heads, headDim, ropeDim, sections, mode] of CASES) {
      const pairs = mode === 'vision' ? ropeDim : ropeDim / 2;
      const scalings = [undefined, yarnScaling(8, ropeDim, 1e6, 2048), { ...linearScaling(1), freqFactors: rngFor(`ff ${headDim}`).fill(pairs, 0.5, 2).map(Math.abs) }];
      for (const scaling of scalings) {
        const x = rngFor(`mrope native ${mode} ${headDim}`).fill(tokens.length * heads * headDim, 1);
        const expected = x.slice();
        ref.ropeMulti(expected, positions, heads, headDim, ropeDim, 1e6, sections, mode, scaling);
        const out = x.slice();
        k!.ropeMulti(out, positions, heads, headDim, ropeDim, 1e6, sections, mode, scaling);
        const err = relError(out, expected);
        assert.ok(err <= 1e-6, `${mode} ${heads}x${headDim} rot ${ropeDim}: relative error ${err.toExponential(2)} ${seedNote}`);
      }
    }
  });

  it('the angle table kept between calls tells rope from ropeMulti and one layout from another', () => {
    // the same buffer of positions seen as plain positions, as M-RoPE with two layouts, and again
    const positions = Int32Array.from([5, 9, 300, 4000, 12, 13, 14, 15]);
    const calls: [string, (kk: Kernels, x: Float32Array) => void][] = [
      ['rope over 8 tokens', (kk, x) => kk.rope(x, positions, 1, 32, 32, 10000, 'neox')],
      ['imrope over 2 tokens', (kk, x) => kk.ropeMulti(x, positions, 4, 32, 32, 10000, [6, 5, 5, 0], 'imrope')],
      ['mrope, same positions', (kk, x) => kk.ropeMulti(x, positions, 4, 32, 32, 10000, [6, 5, 5, 0], 'mrope')],
      ['imrope, other sections', (kk, x) => kk.ropeMulti(x, positions, 4, 32, 32, 10000, [5, 6, 5, 0], 'imrope')],
      ['vision', (kk, x) => kk.ropeMulti(x, positions, 4, 32, 16, 10000, [4, 4, 4, 4], 'vision')],
      ['imrope again', (kk, x) => kk.ropeMulti(x, positions, 4, 32, 32, 10000, [6, 5, 5, 0], 'imrope')],
    ];
    for (const [what, call] of calls) {
      const x = rngFor(`mrope memo ${what}`).fill(8 * 32, 1);
      const expected = x.slice();
      call(ref, expected);
      const out = x.slice();
      call(k!, out);
      assert.ok(relError(out, expected) <= 1e-6, `${what} ${seedNote}`);
    }
  });
});
