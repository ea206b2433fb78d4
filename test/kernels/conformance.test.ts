// One suite, run on every implementation of the Kernels interface (the TypeScript reference
// and the native core): each kernel on fresh random inputs at awkward sizes, compared with
// the reference (the oracle) by max |error| / max |reference|, with a bound per kernel and
// type, plus invariants that hold for any correct implementation. The reference runs only the
// invariants: compared with itself it would pass by construction, and be counted as tests.
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { describe, it } from 'node:test';
import type { Kernels, KvLayer } from '../../src/kernels/index.js';
import { allocateLarge, nativeHasMatmul, setThreads } from '../../src/kernels/native.js';
import { nativeSkip, requireNative } from '../fixtures/native.js';
import { referenceKernels as ref } from '../../src/kernels/reference.js';
import { rowBytes } from '../../src/tensor/weight-types.js';
import type { GGMLType } from '../../src/tensor/weight-types.js';
import { ATTENTION_PLANS, MATMUL_IN, Q8_ATTENTION_PLANS, MATMUL_TYPES, RUN_SEED, attentionCase, matmulRelError, randomWeight, relError, rngFor } from '../fixtures/kernel-cases.js';
import type { MatmulType } from '../fixtures/kernel-cases.js';
import { linearScaling, llama3FreqFactors, longropeAttnFactor, yarnScaling } from '../../src/tensor/rope-scaling.js';
import type { RopeScaling } from '../../src/tensor/rope-scaling.js';

/**
 * Bounds on max |impl − reference| / max |reference|. The reference sums in f64; native sums
 * in f32 lanes with FMA and uses a polynomial exp. Activation rounding (f16, bf16, 8-bit
 * blocks) is bit-identical on both sides, so matmul differs only by summation order. Worst
 * seen (native AVX-512 and portable, many seeds, 2026-11-22): norms 1.3e-7, softmax 8e-7,
 * silu 9e-8, attention f32 4.4e-7, f16 3.2e-4 (an f16 softmax weight rounded the other way),
 * matmul (against the largest Σ|w·x| of an output, see matmulRelError) well below its bounds. gelu and add are exact.
 */
const BOUND = { norm: 2e-6, rope: 1e-6, silu: 2e-6, gelu: 0, add: 0, softmax: 1e-5, attnF32: 5e-6, attnF16: 2e-3, attnQuant: 1e-5 };
const MATMUL_BOUND: Record<MatmulType, number> = {
  F32: 3e-5, F16: 3e-5, BF16: 3e-5, Q8_0: 2e-5, Q4_0: 2e-5, Q4_1: 2e-5, Q5_0: 2e-5, Q5_1: 2e-5, IQ4_NL: 2e-5,
  Q2_K: 2e-5, Q3_K: 2e-5, Q4_K: 2e-5, Q5_K: 2e-5, Q6_K: 2e-5, IQ4_XS: 2e-5, MXFP4: 2e-5,
};

const seedNote = `(LOOM_TEST_SEED=${RUN_SEED})`;

function close(actual: ArrayLike<number>, expected: ArrayLike<number>, bound: number, what: string): void {
  const err = relError(actual, expected);
  assert.ok(err <= bound, `${what}: relative error ${err.toExponential(2)} > ${bound} ${seedNote}`);
}

/**
 * The cases of one implementation. A comparison with the reference proves nothing when `k` IS
 * the reference, so there `versus` cases (only comparisons) are not registered and `closeToRef`
 * / `native` comparisons inside the other cases are left out: what the reference runs is its
 * invariants (and the native core runs both).
 */
function conformance(k: Kernels): void {
  const native = k !== ref;
  const versus = (name: string, fn: () => void): void => {
    if (native) it(name, fn);
  };
  const closeToRef = native ? close : (): void => {};

  it('rmsNorm and layerNorm, rows of awkward lengths, out aliasing x', () => {
    for (const [rows, dim] of [[1, 1], [1, 4099], [3, 577], [17, 37], [64, 96]] as const) {
      const rng = rngFor(`norm ${rows}x${dim}`);
      const x = rng.fill(rows * dim, 2, 0.5);
      const w = rng.fill(dim, 1, 1);
      const bias = rng.fill(dim, 0.5);
      const expected = new Float32Array(rows * dim);
      ref.rmsNorm(expected, x, w, rows, dim, 1e-5);
      const out = x.slice();
      k.rmsNorm(out, out, w, rows, dim, 1e-5);
      closeToRef(out, expected, BOUND.norm, `rmsNorm ${rows}x${dim}`);
      ref.layerNorm(expected, x, w, bias, rows, dim, 1e-6);
      const out2 = new Float32Array(rows * dim);
      k.layerNorm(out2, x, w, bias, rows, dim, 1e-6);
      closeToRef(out2, expected, BOUND.norm, `layerNorm ${rows}x${dim}`);
    }
    // invariant: with weight 1 each row's mean square is 1
    const x = rngFor('norm-ms').fill(3 * 577, 3);
    const out = new Float32Array(x.length);
    k.rmsNorm(out, x, new Float32Array(577).fill(1), 3, 577, 0);
    for (let r = 0; r < 3; r++) {
      const ms = out.subarray(r * 577, (r + 1) * 577).reduce((s, v) => s + v * v, 0) / 577;
      assert.ok(Math.abs(ms - 1) < 1e-4, `rmsNorm row ${r}: mean square ${ms}`);
    }
  });

  it('rope: normal and neox, partial rotation, long positions', () => {
    const positions = Int32Array.from([0, 1, 2, 517, 4095, 30011, 7]);
    for (const style of ['normal', 'neox'] as const) {
      for (const [heads, headDim, ropeDim, base] of [[3, 64, 64, 10000], [2, 80, 32, 1e6], [1, 6, 6, 500000]] as const) {
        const x = rngFor(`rope ${style} ${headDim}`).fill(positions.length * heads * headDim, 1);
        const expected = x.slice();
        ref.rope(expected, positions, heads, headDim, ropeDim, base, style);
        const out = x.slice();
        k.rope(out, positions, heads, headDim, ropeDim, base, style);
        closeToRef(out, expected, BOUND.rope, `rope ${style} heads ${heads}x${headDim} rot ${ropeDim}`);
        // untouched dims beyond ropeDim stay as they were
        for (let i = ropeDim; i < headDim; i++) assert.equal(out[i], x[i]);
      }
    }
  });

  it('rope with scaling: linear, YaRN, frequency factors, attention factor (awkward sizes)', () => {
    const positions = Int32Array.from([0, 1, 3, 517, 4095, 30011, 131071]);
    const cases: [number, number, number, number, RopeScaling][] = [
      [3, 64, 64, 500000, linearScaling(8)],
      [2, 96, 96, 10000, yarnScaling(4, 96, 10000, 4096)],
      [1, 80, 48, 1e6, yarnScaling(2.5, 48, 1e6, 512, { attnFactor: 0.9, betaFast: 16, betaSlow: 2 })],
      [2, 64, 64, 500000, { ...linearScaling(1), freqFactors: llama3FreqFactors(64, 500000, { factor: 32, lowFreqFactor: 1, highFreqFactor: 4, origContext: 8192 }) }],
      [3, 96, 72, 10000, { ...linearScaling(1, longropeAttnFactor(131072, 4096)), freqFactors: rngFor('longrope').fill(36, 0.5, 2).map(Math.abs) }],
    ];
    for (const style of ['normal', 'neox'] as const) {
      for (const [heads, headDim, ropeDim, base, scaling] of cases) {
        const x = rngFor(`rope scaled ${style} ${headDim}`).fill(positions.length * heads * headDim, 1);
        const expected = x.slice();
        ref.rope(expected, positions, heads, headDim, ropeDim, base, style, scaling);
        const out = x.slice();
        k.rope(out, positions, heads, headDim, ropeDim, base, style, scaling);
        closeToRef(out, expected, BOUND.rope, `scaled rope ${style} heads ${heads}x${headDim} rot ${ropeDim}`);
        for (let i = ropeDim; i < headDim; i++) assert.equal(out[i], x[i]);
      }
    }
  });

  versus('rope after rope: angles kept from the last call serve only the same positions and parameters', () => {
    // the native core keeps the last call's cos/sin table: each call below changes one
    // thing the table depends on, in the same buffers, and must still match the reference
    const positions = Int32Array.from([3, 9, 200, 4000]);
    const freqFactors = Float32Array.from({ length: 32 }, (_, i) => 1 + i / 8);
    const steps: [string, () => void][] = [
      ['first call', () => {}],
      ['same call again', () => {}],
      ['a position changed in place', () => (positions[2] = 201)],
      ['frequency factors changed in place', () => (freqFactors[5] = 7)],
    ];
    for (const [what, change] of steps) {
      change();
      const scaling = { ...linearScaling(1), freqFactors };
      const x = rngFor(`rope memo ${what}`).fill(positions.length * 2 * 64, 1);
      const expected = x.slice();
      ref.rope(expected, positions, 2, 64, 64, 10000, 'neox', scaling);
      const out = x.slice();
      k.rope(out, positions, 2, 64, 64, 10000, 'neox', scaling);
      close(out, expected, BOUND.rope, `rope memo: ${what}`);
    }
    // two tables are kept (sliding and global layers alternate): switch back and forth
    const yarn = yarnScaling(4, 64, 10000, 4096);
    for (const [what, base, scaling] of [['another base', 500000, undefined], ['a YaRN scaling', 10000, yarn], ['the other base again', 500000, undefined], ['YaRN again', 10000, yarn], ['a third base', 1e6, undefined]] as const) {
      const x = rngFor(`rope memo ${what}`).fill(positions.length * 2 * 64, 1);
      const expected = x.slice();
      ref.rope(expected, positions, 2, 64, 64, base, 'neox', scaling);
      const out = x.slice();
      k.rope(out, positions, 2, 64, 64, base, 'neox', scaling);
      close(out, expected, BOUND.rope, `rope memo: ${what}`);
    }
  });

  it("Gemma 4's proportional RoPE: divisors of 1e30 leave their pairs where they were", () => {
    const positions = Int32Array.from([0, 1, 5, 517, 30011, 131071]);
    const [heads, headDim, rotated] = [3, 128, 16];
    const freqFactors = Float32Array.from({ length: headDim / 2 }, (_, i) => (i < rotated ? 1 : 1e30));
    const x = rngFor('rope proportional').fill(positions.length * heads * headDim, 1);
    const expected = x.slice();
    ref.rope(expected, positions, heads, headDim, headDim, 1e6, 'neox', { ...linearScaling(1), freqFactors });
    const out = x.slice();
    k.rope(out, positions, heads, headDim, headDim, 1e6, 'neox', { ...linearScaling(1), freqFactors });
    closeToRef(out, expected, BOUND.rope, 'proportional rope');
    // NeoX pairs (i, i + 64): pairs 16..63 stay put, pairs 0..15 turn (position 5: by 5 rad at pair 0)
    for (let t = 0; t < positions.length; t++) {
      for (let h = 0; h < heads; h++) {
        const at = (t * heads + h) * headDim;
        for (let i = rotated; i < headDim / 2; i++) {
          for (const j of [at + i, at + i + headDim / 2]) assert.ok(Math.abs(out[j]! - x[j]!) <= 1e-6 * Math.abs(x[j]!), `token ${t} head ${h} dim ${j - at}`);
        }
      }
    }
    assert.notEqual(out[2 * heads * headDim], x[2 * heads * headDim]);
  });

  it('rope scaling invariants: linear = squeezed positions, factors = linear, YaRN ends, attention factor', () => {
    const heads = 2, dim = 64, base = 10000;
    const x = rngFor('rope invariants').fill(3 * heads * dim, 1);
    const run = (pos: number[], s?: RopeScaling, style: 'normal' | 'neox' = 'neox'): Float32Array => {
      const out = x.slice();
      k.rope(out, Int32Array.from(pos), heads, dim, dim, base, style, s);
      return out;
    };
    // linear ×4 at 4p is plain RoPE at p; divisors of 4 everywhere are the same thing
    close(run([0, 8, 2000], linearScaling(4)), run([0, 2, 500]), 1e-6, 'linear ×4');
    close(run([0, 8, 2000], { ...linearScaling(1), freqFactors: new Float32Array(dim / 2).fill(4) }), run([0, 2, 500]), 1e-6, 'factors 4');
    // the attention factor scales the rotated vector
    const scaled = run([5, 77, 901], linearScaling(1, 1.5));
    close(scaled, run([5, 77, 901]).map((v) => 1.5 * v), 1e-6, 'attention factor');
    // YaRN: pairs below the low correction dim keep the plain angle, pairs above the high one
    // take the interpolated angle, both times 1 + 0.1·ln(factor)
    const yarn = yarnScaling(8, dim, base, 4096);
    const [low, high] = yarn.corrDims;
    assert.ok(low > 1 && high < dim / 2 - 1, `corr dims ${low}..${high}`);
    const m = 1 + 0.1 * Math.log(8);
    const y = run([3, 100, 4000], yarn, 'normal');
    const plain = run([3, 100, 4000], undefined, 'normal');
    const interp = run([3, 100, 4000], linearScaling(8), 'normal');
    for (let r = 0; r < 3 * heads; r++) {
      for (let i = 0; i < dim / 2; i++) {
        const want = i < low ? plain : i > high ? interp : undefined;
        if (!want) continue;
        for (const j of [2 * i, 2 * i + 1]) {
          const at = r * dim + j;
          assert.ok(Math.abs(y[at]! - m * want[at]!) < 1e-5, `yarn pair ${i} (corr ${low}..${high}): ${y[at]} vs ${m * want[at]!}`);
        }
      }
    }
  });

  versus('siluMul, gelu, add, addBias over short, long and parallel lengths', () => {
    for (const n of [1, 7, 4099, 100_003]) {
      const rng = rngFor(`act ${n}`);
      const gate = rng.fill(n, 4);
      const up = rng.fill(n, 1);
      const expected = new Float32Array(n);
      ref.siluMul(expected, gate, up, n);
      const out = gate.slice();
      k.siluMul(out, out, up, n);
      close(out, expected, BOUND.silu, `siluMul n=${n}`);

      const x = rng.fill(n, 6); // reaches the ±10 cut-offs
      ref.gelu(expected, x, n);
      const g = new Float32Array(n);
      k.gelu(g, x, n);
      close(g, expected, BOUND.gelu, `gelu n=${n}`);

      ref.add(expected, gate, up, n);
      const sum = new Float32Array(n);
      k.add(sum, gate, up, n);
      close(sum, expected, BOUND.add, `add n=${n}`);
    }
    for (const [rows, dim] of [[1, 1], [3, 577], [130, 1031]] as const) {
      const rng = rngFor(`bias ${rows}x${dim}`);
      const x = rng.fill(rows * dim, 1);
      const bias = rng.fill(dim, 1);
      const expected = x.slice();
      ref.addBias(expected, bias, rows);
      const out = x.slice();
      k.addBias(out, bias, rows);
      close(out, expected, BOUND.add, `addBias ${rows}x${dim}`);
    }
  });

  it('argmax, with ties (the lowest index wins) and odd lengths', () => {
    for (const n of [1, 15, 16, 17, 49_153]) {
      const x = rngFor(`argmax ${n}`).fill(n, 3);
      if (native) assert.equal(k.argmax(x), ref.argmax(x), `argmax of ${n}`);
      const top = Math.max(...x);
      const tied = x.slice();
      tied[n - 1] = top; // a tie after the first maximum
      assert.equal(k.argmax(tied), tied.indexOf(top), `argmax of ${n} with a tie`);
      const last = x.slice();
      last[n - 1] = top + 1; // the maximum in the vector tail
      assert.equal(k.argmax(last), n - 1, `argmax of ${n}, maximum last`);
    }
    // what the reference does with NaN, signed zeros and masked rows, at vector and tail positions
    const special = (n: number, set: [number, number][], fill = -1): Float32Array => {
      const row = new Float32Array(n).fill(fill);
      for (const [i, v] of set) row[i] = v;
      return row;
    };
    const rows: [string, Float32Array][] = [
      ['NaNs around the maximum are ignored', special(40, [[3, NaN], [17, 5], [18, NaN], [39, NaN]])],
      ['a NaN first wins nothing: index 0', special(40, [[0, NaN], [20, 5]])],
      ['−0 before +0: the first zero', special(37, [[5, -0], [20, 0], [36, 0]])],
      ['a row of −∞ (all masked): index 0', special(33, [], -Infinity)],
      ['one finite value among −∞', special(49_153, [[49_150, -3]], -Infinity)],
    ];
    if (native) for (const [what, row] of rows) assert.equal(k.argmax(row), ref.argmax(row), what);
  });

  it('sampling weights e^(x − max): whole rows and gathered candidates; bad indices refused', () => {
    for (const n of [1, 17, 1025, 49_153]) {
      const row = rngFor(`expWeights ${n}`).fill(n, 8);
      const max = Math.max(...row);
      const expected = new Float64Array(n);
      const out = new Float64Array(n);
      const total = k.expWeights(out, row, null, n, max);
      const refTotal = ref.expWeights(expected, row, null, n, max);
      closeToRef(Float32Array.from(out), Float32Array.from(expected), BOUND.softmax, `expWeights of ${n}`);
      if (native) assert.ok(Math.abs(total - refTotal) <= 1e-6 * refTotal, `expWeights total ${total} vs ${refTotal}`);
      // e^(x − max): 1 at the maximum, every weight in (0, 1]
      assert.equal(out[row.indexOf(max)], 1);
      assert.ok(out.every((w) => w > 0 && w <= 1));
      // every third index, backwards: a gather
      const idx = Int32Array.from({ length: Math.ceil(n / 3) }, (_, j) => n - 1 - 3 * j);
      const m = idx.length;
      const gExpected = new Float64Array(m);
      const gOut = new Float64Array(m);
      const gTotal = k.expWeights(gOut, row, idx, m, max);
      close(Float32Array.from(gOut), Float32Array.from(gExpected.map((_, j) => Math.exp(row[idx[j]!]! - max))), BOUND.softmax, `gathered expWeights of ${m}`);
      const gSum = gOut.reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(gTotal - gSum) <= 1e-6 * gSum + 1e-30, `gathered total ${gTotal} is the weights' sum ${gSum}`);
    }
    const row = new Float32Array(4);
    assert.throws(() => k.expWeights(new Float64Array(2), row, Int32Array.from([0, 4]), 2, 0), RangeError);
    assert.throws(() => k.expWeights(new Float64Array(1), row, null, 2, 0), RangeError);
  });

  it('sampling candidates and the draw: the same indices, −∞ entries and choices as the reference', () => {
    for (const [n, scale, minP] of [[1, 1, 0], [17, 1.25, 0], [4099, 1 / 0.7, 0.05], [49_153, 1 / 1.3, 0]] as const) {
      const row = rngFor(`candidates ${n}`).fill(n, 6);
      if (n > 3) row[2] = -Infinity;
      const logMinP = minP > 0 ? Math.log(minP) : -Infinity;
      const [a, b] = [row.slice(), row.slice()];
      const [ia, ib] = [new Int32Array(n), new Int32Array(n)];
      const na = k.sampleCandidates(a, scale, logMinP, ia);
      if (native) {
        const nb = ref.sampleCandidates(b, scale, logMinP, ib);
        assert.equal(na, nb, `candidates of ${n}`);
        assert.deepEqual(ia.subarray(0, na), ib.subarray(0, nb), `candidate indices of ${n}`);
        assert.deepEqual(a, b, `scaled row of ${n}`);
      }
      if (minP > 0) assert.ok(na < n, 'min-p removed some');
      assert.ok(!ia.subarray(0, na).includes(2) || n <= 3, 'a −∞ entry is never a candidate');
      const w = Float64Array.from(ia.subarray(0, na), (i) => Math.exp(a[i]! - 6));
      const total = w.reduce((x, y) => x + y, 0);
      if (native) for (const f of [0, 0.25, 0.5, 0.999999, 1]) assert.equal(k.drawIndex(w, na, f * total), ref.drawIndex(w, na, f * total), `draw at ${f}`);
      assert.equal(k.drawIndex(w, na, 0), 0, 'a draw of 0 picks the first candidate');
    }
    assert.throws(() => k.sampleCandidates(new Float32Array(4), 1, -Infinity, new Int32Array(3)), RangeError);
    assert.throws(() => k.drawIndex(new Float64Array(2), 3, 0), RangeError);
  });

  it('applyTokenMask: −∞ exactly where the bit is 0 (all-ones, all-zero and mixed words, ragged tail)', () => {
    for (const n of [1, 31, 32, 33, 100, 4099]) {
      const row = rngFor(`mask ${n}`).fill(n, 5);
      const mask = new Int32Array(Math.ceil(n / 32));
      for (let w = 0; w < mask.length; w++) mask[w] = w % 3 === 0 ? -1 : w % 3 === 1 ? 0 : (0x9e3779b9 * (w + n)) | 0;
      const out = row.slice();
      k.applyTokenMask(out, mask);
      for (let i = 0; i < n; i++) {
        const allowed = (mask[Math.floor(i / 32)]! & (1 << i % 32)) !== 0;
        assert.equal(out[i], allowed ? row[i] : -Infinity, `token ${i} of ${n}`);
      }
    }
    assert.throws(() => k.applyTokenMask(new Float32Array(33), new Int32Array(1)), RangeError);
  });

  it('softmax rows, short and long; rows sum to 1', () => {
    for (const [rows, n] of [[1, 1], [3, 37], [17, 4099], [200, 300]] as const) {
      const x = rngFor(`softmax ${rows}x${n}`).fill(rows * n, 5);
      const expected = x.slice();
      ref.softmax(expected, rows, n);
      const out = x.slice();
      k.softmax(out, rows, n);
      closeToRef(out, expected, BOUND.softmax, `softmax ${rows}x${n}`);
      for (let r = 0; r < rows; r++) {
        const s = out.subarray(r * n, (r + 1) * n).reduce((a, b) => a + b, 0);
        assert.ok(Math.abs(s - 1) < 1e-5, `softmax row ${r} sums to ${s}`);
      }
    }
  });

  it('writeKv into f16 and f32 caches at scattered slots; rejects slots outside the cache', () => {
    for (const dtype of ['f16', 'f32'] as const) {
      const c = attentionCase(rngFor(`kv ${dtype}`), dtype, [{ cached: 40, chunk: 1 }], { numHeads: 6, numKvHeads: 3, headDim: 24 }, 8);
      const rng = rngFor(`kv write ${dtype}`);
      const slots = Int32Array.from([7, 0, 41, 13, c.cache.numBlocks * c.cache.blockSize - 1]);
      const width = c.cache.numKvHeads * c.cache.headDim;
      const kv = rng.fill(slots.length * width, 30); // beyond f16's precision, some near its range
      const vv = rng.fill(slots.length * width, 1);
      const copy = (l: KvLayer): KvLayer => ({ k: l.k.slice(), v: l.v.slice() });
      const expected = copy(c.layer);
      ref.writeKv(expected, c.cache, kv, vv, slots);
      const actual = copy(c.layer);
      k.writeKv(actual, c.cache, kv, vv, slots);
      if (native) {
        assert.deepEqual(actual.k, expected.k, `writeKv ${dtype}: k`);
        assert.deepEqual(actual.v, expected.v, `writeKv ${dtype}: v`);
      }
      const bad = Int32Array.from([c.cache.numBlocks * c.cache.blockSize]);
      assert.throws(() => k.writeKv(actual, c.cache, kv, vv, bad), RangeError);
    }
  });

  it('paged attention: decode tokens and prefill chunks after cached context, GQA, f16 and f32 caches', () => {
    for (const dtype of ['f32', 'f16'] as const) {
      for (const [i, p] of ATTENTION_PLANS.entries()) {
        const c = attentionCase(rngFor(`attn ${dtype} ${i}`), dtype, p.plan, p.heads, p.blockSize);
        const width = c.numTokens * c.shape.numHeads * c.shape.headDim;
        const expected = new Float32Array(width);
        ref.attention(expected, c.q, c.layer, c.cache, c.batch, c.shape);
        const out = new Float32Array(width);
        k.attention(out, c.q, c.layer, c.cache, c.batch, c.shape);
        closeToRef(out, expected, dtype === 'f16' ? BOUND.attnF16 : BOUND.attnF32, `attention: ${c.description}`);
      }
    }
    // invariant: a token at position 0 attends only to itself, so its output is v[0]
    const c = attentionCase(rngFor('attn self'), 'f32', [{ cached: 0, chunk: 1 }], { numHeads: 2, numKvHeads: 1, headDim: 24 }, 4);
    const out = new Float32Array(48);
    k.attention(out, c.q, c.layer, c.cache, c.batch, c.shape);
    const slot = c.batch.blockTables[0]! * 4;
    const v0 = (c.layer.v as Float32Array).subarray(slot * 24, slot * 24 + 24);
    close(out.subarray(0, 24), v0, 1e-6, 'attention at position 0 (head 0)');
    close(out.subarray(24, 48), v0, 1e-6, 'attention at position 0 (head 1)');
  });

  for (const dtype of ['q8_0', 'q4_0'] as const) {
    it(`writeKv into a ${dtype} cache: the same block bytes as the reference; refuses head sizes that are not whole blocks`, () => {
      const c = attentionCase(rngFor(`kv ${dtype}`), dtype, [{ cached: 40, chunk: 1 }], { numHeads: 6, numKvHeads: 3, headDim: 64 }, 8);
      const rng = rngFor(`kv write ${dtype}`);
      const slots = Int32Array.from([7, 0, 41, 13, c.cache.numBlocks * c.cache.blockSize - 1]);
      const width = c.cache.numKvHeads * c.cache.headDim;
      const kv = rng.fill(slots.length * width, 30);
      const vv = rng.fill(slots.length * width, 1);
      kv.fill(0, 0, 32); // an all-zero block: d = 0
      const copy = (l: KvLayer): KvLayer => ({ k: l.k.slice(), v: l.v.slice() });
      const expected = copy(c.layer);
      ref.writeKv(expected, c.cache, kv, vv, slots);
      const actual = copy(c.layer);
      k.writeKv(actual, c.cache, kv, vv, slots);
      assert.deepEqual(actual.k, expected.k, `writeKv ${dtype}: k`);
      assert.deepEqual(actual.v, expected.v, `writeKv ${dtype}: v`);
      const odd = { ...c.cache, headDim: 48 };
      assert.throws(() => k.writeKv(actual, odd, kv, vv, Int32Array.from([0])), new RegExp(`${dtype} cache needs headDim a multiple of 32`));
    });

    it(`paged attention over a ${dtype} cache: decode tokens and prefill chunks after cached context, GQA, wide heads`, () => {
      for (const [i, p] of Q8_ATTENTION_PLANS.entries()) {
        const c = attentionCase(rngFor(`attn ${dtype} ${i}`), dtype, p.plan, p.heads, p.blockSize);
        const width = c.numTokens * c.shape.numHeads * c.shape.headDim;
        const expected = new Float32Array(width);
        ref.attention(expected, c.q, c.layer, c.cache, c.batch, c.shape);
        const out = new Float32Array(width);
        k.attention(out, c.q, c.layer, c.cache, c.batch, c.shape);
        closeToRef(out, expected, BOUND.attnQuant, `attention: ${c.description}`);
      }
    });
  }

  it('attention of a token is the same bits alone and in any batch (grouping and context chunks never depend on the batch)', () => {
    // head_dim 64 (query heads grouped or not, by batch size) and 256 (the wide-head kernels);
    // 4 KV heads: a lone short token's units take 2 of them, the batch's all 4
    const cases = [['f32', 64, 9, 3], ['f16', 64, 9, 3], ['f16', 256, 9, 3], ['f16', 64, 8, 4], ['q8_0', 64, 9, 3], ['q8_0', 256, 9, 3], ['q8_0', 64, 8, 4], ['q4_0', 64, 9, 3], ['q4_0', 256, 9, 3]] as const;
    for (const [dtype, headDim, numHeads, numKvHeads] of cases) {
      const plan = [{ cached: 2100, chunk: 1 }, ...Array.from({ length: 12 }, (_, i) => ({ cached: 40 * i, chunk: 1 })), { cached: 900, chunk: 30 }];
      const c = attentionCase(rngFor(`attn batch ${dtype} ${headDim} ${numKvHeads}`), dtype, plan, { numHeads, numKvHeads, headDim }, 16);
      const width = c.shape.numHeads * c.shape.headDim;
      const all = new Float32Array(c.numTokens * width);
      k.attention(all, c.q, c.layer, c.cache, c.batch, c.shape);
      for (const s of [0, 1, 13]) {
        const t0 = c.batch.seqStarts[s]!;
        const t1 = c.batch.seqStarts[s + 1]!;
        const m = c.batch.maxBlocksPerSeq;
        const alone = {
          seqStarts: Int32Array.from([0, t1 - t0]),
          positions: c.batch.positions.slice(t0, t1),
          blockTables: c.batch.blockTables.slice(s * m, (s + 1) * m),
          maxBlocksPerSeq: m,
        };
        const out = new Float32Array((t1 - t0) * width);
        k.attention(out, c.q.slice(t0 * width, t1 * width), c.layer, c.cache, alone, c.shape);
        assert.deepEqual(out, all.slice(t0 * width, t1 * width), `${dtype}, head_dim ${headDim}, ${numKvHeads} KV heads: sequence ${s} alone vs in the batch`);
      }
    }
  });

  it('attention rejects a position whose block is missing', () => {
    const c = attentionCase(rngFor('attn missing'), 'f32', [{ cached: 20, chunk: 1 }], { numHeads: 2, numKvHeads: 1, headDim: 8 }, 16);
    const tables = c.batch.blockTables.slice();
    tables[1] = -1; // position 20 lives in block 1
    const out = new Float32Array(16);
    assert.throws(() => k.attention(out, c.q, c.layer, c.cache, { ...c.batch, blockTables: tables }, c.shape), RangeError);
  });

  it('embedRows refuses a row outside the table, every type', () => {
    for (const type of MATMUL_TYPES) {
      const table = randomWeight(rngFor(`embed refuse ${type}`), type, MATMUL_IN[type][0]!, 3);
      const out = new Float32Array(2 * MATMUL_IN[type][0]!);
      assert.throws(() => k.embedRows(out, table, Int32Array.from([0, 3])), RangeError, type);
      assert.throws(() => k.embedRows(out, table, Int32Array.from([-1, 0])), RangeError, type);
    }
  });

  for (const type of MATMUL_TYPES) {
    versus(`matmul and embedRows, ${type} weights, rows 1/3/17/64`, () => {
      const rowsList = [1, 3, 17, 64];
      const outList = [7, 33, 1, 131];
      for (const [i, inF] of MATMUL_IN[type].entries()) {
        for (const [j, rows] of rowsList.entries()) {
          const outF = outList[(i + j) % outList.length]!;
          const rng = rngFor(`matmul ${type} ${rows}x${inF}x${outF}`);
          const w = randomWeight(rng, type, inF, outF);
          const x = rng.fill(rows * inF, 1);
          const expected = new Float32Array(rows * outF);
          ref.matmul(expected, x, w, rows);
          const out = new Float32Array(rows * outF);
          k.matmul(out, x, w, rows);
          const err = matmulRelError(out, expected, x, w, rows);
          assert.ok(err <= MATMUL_BOUND[type], `matmul ${type} rows ${rows}, ${inF} → ${outF}: error ${err.toExponential(2)} of Σ|w·x| > ${MATMUL_BOUND[type]} ${seedNote}`);
        }
        // embedding rows: first, last, repeated
        const rng = rngFor(`embed ${type} ${inF}`);
        const table = randomWeight(rng, type, inF, 19);
        const ids = Int32Array.from([0, 18, 5, 5, 11]);
        const expected = new Float32Array(ids.length * inF);
        ref.embedRows(expected, table, ids);
        const out = new Float32Array(ids.length * inF);
        k.embedRows(out, table, ids);
        close(out, expected, 1e-6, `embedRows ${type} dim ${inF}`);
        assert.equal(table.data.length, rowBytes(table.type, inF)! * 19);
        assert.throws(() => k.embedRows(out, table, Int32Array.from([19])), RangeError);
      }
    });
  }

  // rows of 16384 outputs and more are written with streaming stores where 64-byte aligned
  // (native/x86/matmul_x86.h kStreamRowFloats): the batched kernels' wide outputs, aligned
  // and not, give the reference's products and the same bits
  versus('LM head-wide outputs (16400 a row, 17 rows), aligned and not: Q8_0, Q4_K, Q6_K', () => {
    for (const type of ['Q8_0', 'Q4_K', 'Q6_K'] as const) {
      const [inF, outF, rows] = [MATMUL_IN[type][0]!, 16400, 17];
      const rng = rngFor(`matmul wide ${type}`);
      const w = randomWeight(rng, type, inF, outF);
      const x = rng.fill(rows * inF, 1);
      const expected = new Float32Array(rows * outF);
      ref.matmul(expected, x, w, rows);
      const aligned = new Float32Array(allocateLarge(4 * rows * outF)).fill(Number.NaN);
      const unaligned = new Float32Array(rows * outF + 1).fill(Number.NaN).subarray(1);
      k.matmul(aligned, x, w, rows);
      k.matmul(unaligned, x, w, rows);
      const err = matmulRelError(aligned, expected, x, w, rows);
      assert.ok(err <= MATMUL_BOUND[type], `${type}: error ${err.toExponential(2)} of Σ|w·x| ${seedNote}`);
      assert.deepEqual(aligned, unaligned, `${type}: streamed and plain stores give the same bits`);
    }
  });
}

/** matmulSet (q/k/v, gate/up against one x) gives each weight exactly what matmul gives it:
 *  mixed weight types (shared and separate activation kinds, F32's raw x), one row to GEMM rows. */
function matmulSetSuite(k: Kernels): void {
  it('matmulSet: each product the same bits as its own matmul, for mixed types and 1 to 64 rows', () => {
    const sets: readonly (readonly MatmulType[])[] = [
      ['Q5_0', 'Q5_0', 'Q8_0'], // Qwen2.5 q/k/v in a Q4_K_M file (one Q8_0 preparation for all)
      ['Q4_K', 'Q6_K', 'Q8_0', 'F32'], // Q8_K and Q8_0 preparations and raw x in one call
      ['F16', 'BF16', 'Q4_0', 'IQ4_XS', 'Q3_K', 'Q2_K', 'Q5_K', 'Q4_1', 'Q5_1', 'IQ4_NL'], // more than one native call
    ];
    const inF = 512;
    for (const [s, types] of sets.entries()) {
      for (const rows of [1, 2, 5, 17, 64]) {
        const rng = rngFor(`matmulSet ${s} ${rows}`);
        const ws = types.map((t, j) => ({ ...randomWeight(rng, t, inF, [3, 130, 17, 64, 1][j % 5]!), name: `w${j}` }));
        const x = rng.fill(rows * inF, 1);
        const outs = ws.map((w) => new Float32Array(rows * w.dims[1]!).fill(NaN));
        k.matmulSet(x, rows, ws.map((w, j) => ({ out: outs[j]!, w })));
        for (const [j, w] of ws.entries()) {
          const alone = new Float32Array(rows * w.dims[1]!);
          k.matmul(alone, x, w, rows);
          assert.deepEqual(outs[j], alone, `${types[j]} (part ${j} of [${types.join(', ')}]), ${rows} rows`);
        }
      }
    }
    const [a, b] = [randomWeight(rngFor('set dims a'), 'Q8_0', 64, 4), randomWeight(rngFor('set dims b'), 'Q8_0', 96, 4)];
    assert.throws(() => k.matmulSet(new Float32Array(64), 1, [{ out: new Float32Array(4), w: a }, { out: new Float32Array(4), w: b }]), /takes 96 inputs/);
  });
}

/** What only the native side needs showing: it rejects bad calls and its pool is sound. */
function nativeOnly(k: Kernels): void {
  it('bad arguments throw TypeError or RangeError instead of touching memory', () => {
    const x = new Float32Array(8);
    assert.throws(() => k.rmsNorm(x, x, x, 2, 8, 1e-5), RangeError); // 2 rows of 8 need 16
    assert.throws(() => k.add(x, new Float64Array(8) as unknown as Float32Array, x, 8), TypeError);
    assert.throws(() => k.softmax(x, 1, 1.5), RangeError);
    assert.throws(() => k.gelu(x, x, -1), RangeError);
    assert.throws(() => k.rope(x, Int32Array.from([0]), 1, 8, 3, 10000, 'normal'), RangeError);
    const w = randomWeight(rngFor('bad'), 'Q8_0', 32, 4);
    assert.throws(() => k.matmul(x, new Float32Array(32), { ...w, data: w.data.subarray(1) }, 1), RangeError);
    assert.throws(() => k.matmul(x, new Float32Array(32), { ...w, type: 99 as GGMLType }, 1), TypeError);
    assert.throws(() => k.matmul(x, new Float32Array(31), w, 1), RangeError);
    const c = attentionCase(rngFor('bad attn'), 'f16', [{ cached: 3, chunk: 2 }], { numHeads: 2, numKvHeads: 1, headDim: 8 }, 4);
    const out = new Float32Array(32);
    const f32Layer = { k: new Float32Array(c.layer.k.length), v: new Float32Array(c.layer.v.length) };
    assert.throws(() => k.attention(out, c.q, f32Layer, c.cache, c.batch, c.shape), TypeError);
    assert.throws(() => k.attention(out, c.q, c.layer, c.cache, { ...c.batch, seqStarts: Int32Array.from([0, 1]) }, c.shape), RangeError);
    assert.throws(() => k.attention(out, c.q.subarray(1), c.layer, c.cache, c.batch, c.shape), RangeError);
  });

  it('results do not depend on the thread count', () => {
    const c = attentionCase(rngFor('threads'), 'f16', [{ cached: 300, chunk: 1 }, { cached: 40, chunk: 60 }], { numHeads: 8, numKvHeads: 2, headDim: 64 }, 16);
    const rng = rngFor('threads mm');
    const w = randomWeight(rng, 'Q4_K', 512, 300);
    const x = rng.fill(33 * 512, 1);
    // one sequence alone decoding at 4100 keys: its 1024-key chunks are what the threads share
    const lone = attentionCase(rngFor('threads lone'), 'f16', [{ cached: 4100, chunk: 1 }], { numHeads: 8, numKvHeads: 2, headDim: 64 }, 16);
    const run = (threads: number): Float32Array[] => {
      setThreads(threads);
      const a = new Float32Array(c.numTokens * 8 * 64);
      k.attention(a, c.q, c.layer, c.cache, c.batch, c.shape);
      const l = new Float32Array(8 * 64);
      k.attention(l, lone.q, lone.layer, lone.cache, lone.batch, lone.shape);
      const m = new Float32Array(33 * 300);
      k.matmul(m, x, w, 33);
      const s = x.slice();
      k.softmax(s, 33, 512);
      return [a, m, s, l];
    };
    const one = run(1);
    const many = run(Math.max(2, availableParallelism()));
    setThreads(availableParallelism());
    one.forEach((r, i) => assert.deepEqual(many[i], r, `result ${i} changed with the thread count`));
  });

  it('the pool survives many back-to-back parallel calls', () => {
    const n = 65_536;
    const a = new Float32Array(n).fill(1);
    const out = new Float32Array(n);
    for (let i = 0; i < 3000; i++) k.add(out, i === 0 ? a : out, a, n);
    assert.equal(out[0], 3001);
    assert.equal(out[n - 1], 3001);
  });
}

const native = requireNative();
const IMPLEMENTATIONS: { name: string; kernels: Kernels | undefined; skip: string | false }[] = [
  { name: 'reference', kernels: ref, skip: false },
  {
    name: 'native',
    kernels: native,
    skip: nativeSkip(),
  },
];

for (const impl of IMPLEMENTATIONS) {
  describe(`kernel conformance: ${impl.name}`, { skip: impl.skip }, () => {
    if (impl.name === 'native') {
      it('the addon has its own matmul and embedRows (native/matmul.cc)', () => {
        assert.ok(nativeHasMatmul(), 'the addon was built without native/matmul.cc: the reference matmul stands in');
      });
      if (impl.kernels) nativeOnly(impl.kernels);
      if (impl.kernels) matmulSetSuite(impl.kernels);
    }
    if (impl.kernels) conformance(impl.kernels);
  });
}
