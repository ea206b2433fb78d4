// ggml tensor types: f16/bf16 edge cases, dequantization of hand-built blocks against values
// computed here from the block layouts, quantize → dequantize error bounds, and activation
// rounding onto each weight type's grid.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidArgumentError } from '../../../src/errors.js';
import { GGMLType } from '../../../src/tensor/weight-types.js';
import { bf16ToF32, f16ArrayToF32, f16ToF32, f32ArrayToF16, f32ToBF16, f32ToF16, roundToBF16, roundToF16 } from '../../../src/tensor/half.js';
import { dequantizeRow, dequantizeTensorRow } from '../../../src/tensor/quant/dequantize.js';
import { roundActivations } from '../../../src/tensor/quant/q8-activations.js';
import { quantize } from '../../../src/tensor/quant/quantize.js';
import { gaussian } from '../../fixtures/random.js';

const fr = Math.fround;


/** f16 value from its definition: (−1)^s · 2^(e−15) · (1 + m/1024), subnormals 2^−14 · m/1024 */
function f16Value(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
  if (e === 31) return m ? NaN : s * Infinity;
  return e === 0 ? s * 2 ** -14 * (m / 1024) : s * 2 ** (e - 15) * (1 + m / 1024);
}

const f16Bytes = (h: number): number[] => [h & 0xff, h >> 8];
const int8 = (b: number): number => (b << 24) >> 24;

describe('f16', () => {
  it('encodes edge values', () => {
    const cases: [number, number][] = [
      [0, 0x0000], [-0, 0x8000], [1, 0x3c00], [-2, 0xc000], [65504, 0x7bff],
      [65519.99, 0x7bff], [65520, 0x7c00], // 65520 is halfway to 65536: ties to even = inf
      [2 ** -24, 0x0001], [2 ** -25, 0x0000], [3 * 2 ** -26, 0x0001], [2 ** -25 * 3, 0x0002], // subnormal ties
      [1023 * 2 ** -24, 0x03ff], [2 ** -14, 0x0400], [2 ** -26, 0x0000], [-(2 ** -24), 0x8001],
      [1 + 2 ** -11, 0x3c00], [1 + 3 * 2 ** -11, 0x3c02], [1 + 2 ** -11 + 2 ** -20, 0x3c01], // ties to even
      [Infinity, 0x7c00], [-Infinity, 0xfc00], [1e10, 0x7c00], [1 / 3, 0x3555],
    ];
    for (const [x, h] of cases) assert.equal(f32ToF16(x), h, `f32ToF16(${x})`);
    const nan = f32ToF16(NaN);
    assert.equal(nan & 0x7c00, 0x7c00);
    assert.ok((nan & 0x200) !== 0, 'quiet NaN');
    assert.ok(Number.isNaN(f16ToF32(nan)));
  });

  it('decodes every pattern to its defined value, and re-encodes it unchanged', () => {
    for (let h = 0; h < 65536; h++) {
      const v = f16ToF32(h);
      const want = f16Value(h);
      if (Number.isNaN(want)) {
        assert.ok(Number.isNaN(v));
        continue;
      }
      assert.ok(Object.is(v, want), `f16ToF32(${h.toString(16)}) = ${v}, want ${want}`);
      assert.equal(f32ToF16(v), h);
    }
  });

  it('rounds random values to the nearest f16, ties to even', () => {
    const xs = gaussian(20000, 7, 300);
    for (const x of xs) {
      const h = f32ToF16(x);
      const err = Math.abs(f16Value(h) - x);
      for (const nb of [h - 1, h + 1]) {
        if ((nb & 0x7fff) >= 0x7c00 || nb < 0 || ((nb ^ h) & 0x8000) !== 0) continue;
        const e2 = Math.abs(f16Value(nb) - x);
        assert.ok(err < e2 || (err === e2 && (h & 1) === 0), `${x} → ${h.toString(16)} is not the nearest even`);
      }
    }
    const arr = f32ArrayToF16(new Float32Array([0.5, -3]));
    assert.deepEqual([...arr], [0x3800, 0xc200]);
    assert.deepEqual([...f16ArrayToF32(arr)], [0.5, -3]);
    assert.equal(roundToF16(0.1), f16Value(0x2e66));
  });
});

describe('bf16', () => {
  it('rounds to nearest even on the top 16 bits, keeps subnormals, quiets NaN', () => {
    const cases: [number, number][] = [
      [0, 0x0000], [-0, 0x8000], [1, 0x3f80], [-2, 0xc000],
      [1 + 2 ** -8, 0x3f80], [1 + 3 * 2 ** -8, 0x3f82], [1 + 2 ** -8 + 2 ** -20, 0x3f81],
      [Infinity, 0x7f80], [-Infinity, 0xff80], [3.4028234663852886e38, 0x7f80], // max f32 rounds up to inf
      [2 ** -149, 0x0000], [2 ** -133, 0x0001], [2 ** -126, 0x0080], // subnormal f32s: not flushed
    ];
    for (const [x, h] of cases) assert.equal(f32ToBF16(x), h, `f32ToBF16(${x})`);
    const nan = f32ToBF16(NaN);
    assert.equal(nan & 0x7f80, 0x7f80);
    assert.ok((nan & 0x40) !== 0 && Number.isNaN(bf16ToF32(nan)));
    assert.equal(bf16ToF32(0x3f80), 1);
    assert.equal(bf16ToF32(0x4049), 3.140625);
    assert.equal(roundToBF16(Math.PI), 3.140625);
  });
});

describe('dequantizeRow on hand-built blocks', () => {
  it('F32, F16, BF16, with byte and output offsets', () => {
    const f32 = new Uint8Array(20);
    new DataView(f32.buffer).setFloat32(4, -1.5, true);
    new DataView(f32.buffer).setFloat32(8, 2 ** -130, true);
    const out = new Float32Array(4);
    dequantizeRow(GGMLType.F32, f32, 4, 2, out, 1);
    assert.deepEqual([...out], [0, -1.5, fr(2 ** -130), 0]);
    dequantizeRow(GGMLType.F16, new Uint8Array([0, 0x3c, 0x01, 0x80, 0x00, 0x7c]), 0, 3, out, 0);
    assert.deepEqual([...out.subarray(0, 3)], [1, -(2 ** -24), Infinity]);
    dequantizeRow(GGMLType.BF16, new Uint8Array([0x49, 0x40, 0x80, 0xbf]), 0, 2, out, 0);
    assert.deepEqual([...out.subarray(0, 2)], [3.140625, -1]);
  });

  it('Q8_0: d·q', () => {
    const blocks = new Uint8Array(2 * 34);
    blocks.set(f16Bytes(0x3800), 34); // second block: d = 0.5
    for (let j = 0; j < 32; j++) blocks[34 + 2 + j] = (j * 8 - 128) & 0xff;
    const out = new Float32Array(33);
    dequantizeRow(GGMLType.Q8_0, blocks, 34, 32, out, 1);
    for (let j = 0; j < 32; j++) assert.equal(out[1 + j], 0.5 * (j * 8 - 128));
  });

  it('Q4_0: d·(nibble − 8), low nibbles first', () => {
    const b = new Uint8Array(18);
    b.set(f16Bytes(0xb400)); // d = −0.25
    for (let j = 0; j < 16; j++) b[2 + j] = j | ((15 - j) << 4);
    const out = new Float32Array(32);
    dequantizeRow(GGMLType.Q4_0, b, 0, 32, out, 0);
    for (let j = 0; j < 16; j++) {
      assert.equal(out[j], -0.25 * (j - 8));
      assert.equal(out[j + 16], -0.25 * (15 - j - 8));
    }
  });

  it('Q4_K: d·sc·q − dmin·m with 6-bit packed scales', () => {
    const sc = [1, 2, 63, 5, 33, 17, 48, 63], m = [0, 3, 7, 63, 40, 1, 62, 9];
    const b = new Uint8Array(144);
    b.set(f16Bytes(0x3800), 0); // d = 0.5
    b.set(f16Bytes(0x2e66), 2); // dmin ≈ 0.1
    // scales[12]: j<4: sc in bytes 0..3, m in 4..7 (low 6 bits); j≥4: low 4 bits of sc / m in
    // byte j+4 (low / high nibble), their top 2 bits in the top bits of bytes j−4 / j
    for (let j = 0; j < 4; j++) {
      b[4 + j] = sc[j]! | ((sc[j + 4]! >> 4) << 6);
      b[4 + j + 4] = m[j]! | ((m[j + 4]! >> 4) << 6);
      b[4 + j + 8] = (sc[j + 4]! & 15) | ((m[j + 4]! & 15) << 4);
    }
    for (let i = 0; i < 128; i++) b[16 + i] = (i * 37 + 11) & 0xff;
    const out = new Float32Array(256);
    dequantizeRow(GGMLType.Q4_K, b, 0, 256, out, 0);
    const d = 0.5, dmin = f16Value(0x2e66);
    for (let i = 0; i < 256; i++) {
      const j = i >> 5, c = j >> 1, l = i & 31;
      const byte = b[16 + 32 * c + l]!;
      const q = j % 2 === 0 ? byte & 15 : byte >> 4;
      assert.equal(out[i], fr(fr(d * sc[j]!) * q - fr(dmin * m[j]!)), `value ${i}`);
    }
  });

  it('Q6_K: d·scale·(q − 32) with q split over ql and qh', () => {
    const b = new Uint8Array(210);
    for (let i = 0; i < 192; i++) b[i] = (i * 101 + 7) & 0xff; // ql, qh
    const scales = [-128, -7, 0, 1, 5, 17, 33, 64, 127, -1, -64, 2, 3, 99, -99, 12];
    for (let j = 0; j < 16; j++) b[192 + j] = scales[j]! & 0xff;
    b.set(f16Bytes(0x3000), 208); // d = 0.125
    const out = new Float32Array(256);
    dequantizeRow(GGMLType.Q6_K, b, 0, 256, out, 0);
    for (let i = 0; i < 256; i++) {
      const h = i >> 7, r = i & 127, l = r & 31, g = r >> 5; // g: which of the 4 quarter-rows
      const lowByte = b[64 * h + l + (g & 1 ? 32 : 0)]!;
      const low = g < 2 ? lowByte & 15 : lowByte >> 4;
      const high = (b[128 + 32 * h + l]! >> (2 * g)) & 3;
      const q = (low | (high << 4)) - 32;
      assert.equal(int8(b[192 + (i >> 4)]!), scales[i >> 4]);
      assert.equal(out[i], fr(0.125 * scales[i >> 4]! * q), `value ${i}`);
    }
  });

  it('a whole row of a WeightTensor, and bad arguments', () => {
    const data = new Uint8Array(3 * 18);
    for (let r = 0; r < 3; r++) data.set(f16Bytes(0x3c00 + (r << 10)), 18 * r); // d = 1, 2, 4
    const row = dequantizeTensorRow({ name: 'w', type: GGMLType.Q4_0, dims: [32, 3], data }, 2);
    assert.deepEqual([...row], new Array(32).fill(-32));
    assert.throws(() => dequantizeTensorRow({ name: 'w', type: GGMLType.Q4_0, dims: [32, 3], data }, 3), /row 3/);
    assert.throws(() => dequantizeRow(GGMLType.Q8_0, data, 0, 31, new Float32Array(32), 0), /whole blocks/);
    assert.throws(() => dequantizeRow(GGMLType.Q8_0, data, 40, 32, new Float32Array(32), 0), /outside/);
  });
});

describe('quantize', () => {
  it('Q8_0 and Q4_0 follow the ggml reference quantizers', () => {
    const x = new Float32Array(32);
    x.set([127, -63.5, 0.5, -0.5, 2.4, 100.49]);
    const q8 = quantize(GGMLType.Q8_0, x, 32);
    assert.deepEqual([...q8.subarray(0, 2)], f16Bytes(0x3c00)); // d = 127/127 = 1
    assert.deepEqual([...q8.subarray(2, 8)].map(int8), [127, -64, 1, -1, 2, 100]); // roundf: halves away from 0
    const y = new Float32Array(32);
    y.set([-8, 7.49, 0.5, -3.5, 8]);
    const q4 = quantize(GGMLType.Q4_0, y, 32);
    assert.deepEqual([...q4.subarray(0, 2)], f16Bytes(0x3c00)); // d = max / −8 = 1, id = 1
    // d = −8/−8 = 1, so q = min(15, (int8)(x + 8.5)): −8→0, 7.49→15, 0.5→9, −3.5→5, 8→16→15 (clamped)
    const nib = (i: number): number => (i < 16 ? q4[2 + i]! & 15 : q4[2 + i - 16]! >> 4);
    assert.deepEqual([0, 1, 2, 3, 4].map(nib), [0, 15, 9, 5, 15]);
    assert.equal(nib(5), 8); // zero → 8
  });

  it('round trips within each type’s bound on random rows', () => {
    const rows = 8, n = 512;
    const x = gaussian(rows * n, 1234, 0.05);
    const y = new Float32Array(rows * n);
    for (const type of [GGMLType.F32, GGMLType.F16, GGMLType.BF16, GGMLType.Q8_0, GGMLType.Q4_0, GGMLType.Q4_K, GGMLType.Q6_K]) {
      const bytes = quantize(type, x, n);
      dequantizeRow(type, bytes, 0, rows * n, y, 0);
      let se = 0, sx = 0;
      for (let i = 0; i < x.length; i++) {
        se += (x[i]! - y[i]!) ** 2;
        sx += x[i]! ** 2;
      }
      const rel = Math.sqrt(se / sx);
      for (let b = 0; b < x.length; b += 32) {
        let amax = 0;
        for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b + j]!));
        for (let j = 0; j < 32; j++) {
          const err = Math.abs(x[b + j]! - y[b + j]!), v = Math.abs(x[b + j]!);
          if (type === GGMLType.F32) assert.equal(err, 0);
          if (type === GGMLType.F16) assert.ok(err <= Math.max(v * 2 ** -11, 2 ** -25)); // f16 subnormals: half of 2^-24
          if (type === GGMLType.BF16) assert.ok(err <= v * 2 ** -8);
          // half a step of d = amax/127 (plus d's own f16 rounding, ≤ 127·amax·2^−11 / 127)
          if (type === GGMLType.Q8_0) assert.ok(err <= (0.5 * amax) / 127 + amax * 2 ** -11, `Q8_0 err ${err}`);
          // one step of |d| = amax/8 at most (the clamp of −max to 15 costs a whole step)
          if (type === GGMLType.Q4_0) assert.ok(err <= (amax / 8) * (1 + 2 ** -10), `Q4_0 err ${err}`);
        }
      }
      // relative RMS error: about step/√12 over the data's RMS for each type's step
      const bound = { [GGMLType.F32]: 0, [GGMLType.F16]: 3e-4, [GGMLType.BF16]: 3e-3, [GGMLType.Q8_0]: 0.007, [GGMLType.Q4_0]: 0.1, [GGMLType.Q4_K]: 0.08, [GGMLType.Q6_K]: 0.02 }[type as number]!;
      assert.ok(rel <= bound, `${GGMLType[type]} relative RMS error ${rel} > ${bound}`);
    }
  });

  it('rejects row lengths that are not whole blocks', () => {
    assert.throws(() => quantize(GGMLType.Q4_K, new Float32Array(300), 300), (e: unknown) => e instanceof InvalidArgumentError && /256/.test(e.message));
    assert.throws(() => quantize(GGMLType.Q8_0, new Float32Array(64), 48), /block size 32/);
    assert.throws(() => quantize(GGMLType.Q8_0, new Float32Array(48), 32), /whole number of rows/);
  });
});

describe('roundActivations', () => {
  const n = 1024;
  const x = gaussian(n, 99, 3);
  x[5] = 0; // a zero within a block
  x.fill(0, 256, 512); // an all-zero Q8_K block (and eight all-zero Q8_0 blocks)

  it('F32 copies; F16 and BF16 land on their grids', () => {
    const out = new Float32Array(n);
    roundActivations(GGMLType.F32, x, n, out);
    assert.deepEqual(out, x);
    roundActivations(GGMLType.F16, x, n, out);
    for (let i = 0; i < n; i++) assert.equal(out[i], f16Value(f32ToF16(x[i]!)));
    roundActivations(GGMLType.BF16, x, n, out);
    for (let i = 0; i < n; i++) assert.equal(out[i], bf16ToF32(f32ToBF16(x[i]!)));
  });

  for (const type of [GGMLType.Q8_0, GGMLType.Q4_0]) {
    it(`${GGMLType[type]} weights: Q8_0 blocks, d = f16(amax/127), q = round-half-even(x·127/amax)`, () => {
      const out = new Float32Array(n);
      roundActivations(type, x, n, out);
      for (let b = 0; b < n; b += 32) {
        let amax = 0;
        for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b + j]!));
        if (amax === 0) {
          assert.ok(out.subarray(b, b + 32).every((v) => v === 0));
          continue;
        }
        const d = f16Value(f32ToF16(fr(amax / 127)));
        for (let j = 0; j < 32; j++) {
          const q = out[b + j]! / d;
          assert.ok(Number.isInteger(q) && q >= -127 && q <= 127, `${out[b + j]} = ${d}·${q}`);
          assert.ok(Math.abs(x[b + j]! / (amax / 127) - q) <= 0.5 + 1e-5, 'nearest integer');
        }
      }
      // ties go to even, and the multiplier is 127/amax (not 1/f16(d))
      const t = new Float32Array(32);
      t.set([127, 2.5, 3.5, -2.5, 0.5, -0.5, 1.5]);
      roundActivations(type, t, 32, out);
      assert.deepEqual([...out.subarray(0, 7)], [127, 2, 4, -2, 0, -0, 2]);
      const u = new Float32Array(32);
      u.set([1, 0.3, -0.7, 100.497 / 127]);
      roundActivations(type, u, 32, out);
      const d = f16Value(f32ToF16(fr(1 / 127))); // 0.00787353…, so 1/d ≈ 127.007
      // 100.497/127 · 127 → 100; with the reference's multiplier 1/d it would be 100.5025 → 101
      assert.deepEqual([...out.subarray(0, 4)], [127 * d, 38 * d, -89 * d, 100 * d]);
    });
  }

  for (const type of [GGMLType.Q4_K, GGMLType.Q6_K]) {
    it(`${GGMLType[type]} weights: Q8_K blocks of 256, d = 1/(−127/max) in f32`, () => {
      const out = new Float32Array(n);
      roundActivations(type, x, n, out);
      for (let b = 0; b < n; b += 256) {
        let max = 0;
        for (let j = 0; j < 256; j++) if (Math.abs(x[b + j]!) > Math.abs(max)) max = x[b + j]!;
        if (max === 0) {
          assert.ok(out.subarray(b, b + 256).every((v) => v === 0));
          continue;
        }
        const d = fr(1 / fr(-127 / max));
        for (let j = 0; j < 256; j++) {
          const q = Math.round(out[b + j]! / d);
          assert.ok(q >= -127 && q <= 127 && fr(d * q) === out[b + j], `${out[b + j]} is not d·q`);
          assert.ok(Math.abs(x[b + j]! / d - q) <= 0.5 + 1e-4, 'nearest integer');
        }
      }
      const t = new Float32Array(256);
      t.set([-127, 2.5, 3.5, -2.5, 126.5, -0.5]); // max = −127: iscale = 1, d = 1
      roundActivations(type, t, 256, out);
      assert.deepEqual([...out.subarray(0, 6)], [-127, 2, 4, -2, 126, -0]);
    });
  }

  it('rejects n that is not whole activation blocks', () => {
    assert.throws(() => roundActivations(GGMLType.Q4_K, x, 128, new Float32Array(128)), /multiple of 256/);
    assert.throws(() => roundActivations(GGMLType.Q8_0, x, 48, new Float32Array(48)), /multiple of 32/);
  });
});
