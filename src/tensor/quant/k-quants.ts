// K-quant super-blocks of 256 values: Q4_K and Q6_K, both directions.
//
// Q4_K (144 B): f16 d, f16 dmin, u8 scales[12], u8 qs[128]
//   8 sub-blocks of 32; sub-block j has 6-bit scale sc_j and 6-bit min m_j packed in
//   scales[] (see scaleMinK4); value = d·sc_j·q − dmin·m_j with q a 4-bit nibble.
//   Chunk c (64 values, c = 0..3) uses qs[32c .. 32c+32): low nibbles are values
//   64c .. 64c+31 (sub-block 2c), high nibbles are 64c+32 .. 64c+63 (sub-block 2c+1).
// Q6_K (210 B): u8 ql[128], u8 qh[64], int8 scales[16], f16 d
//   16 sub-blocks of 16; value i = d·scales[i/16]·(q_i − 32), q_i a 6-bit number whose low
//   4 bits are in ql and high 2 bits in qh. Half h (128 values, h = 0..1) uses ql[64h..+64],
//   qh[32h..+32]; for l < 32, qh[l] bits 0-1, 2-3, 4-5, 6-7 hold the high bits of values
//   l, l+32, l+64, l+96; ql[l] low/high nibbles hold values l / l+64, ql[l+32] l+32 / l+96.
// The quantizers are our own (per sub-block least-squares search, then 6/8-bit scales):
// valid encodings that approximate well, not bit-equal to llama.cpp's.
import { readF16, writeF16 } from '../half.js';

export const QK_K = 256;
export const Q4_K_BYTES = 144;
export const Q6_K_BYTES = 210;

/** [scale, min] of Q4_K sub-block j (0..7) from the 12 packed bytes at src[p..p+12) */
export function scaleMinK4(src: Uint8Array, p: number, j: number): [number, number] {
  if (j < 4) return [src[p + j]! & 63, src[p + j + 4]! & 63];
  const sc = (src[p + j + 4]! & 0xf) | ((src[p + j - 4]! >> 6) << 4);
  const m = (src[p + j + 4]! >> 4) | ((src[p + j]! >> 6) << 4);
  return [sc, m];
}

export function dequantizeQ4KBlock(src: Uint8Array, p: number, out: Float32Array, y: number): void {
  const d = readF16(src, p);
  const dmin = readF16(src, p + 2);
  for (let c = 0; c < 4; c++) {
    const [s1, m1] = scaleMinK4(src, p + 4, 2 * c);
    const [s2, m2] = scaleMinK4(src, p + 4, 2 * c + 1);
    const d1 = d * s1, min1 = dmin * m1, d2 = d * s2, min2 = dmin * m2;
    const qs = p + 16 + 32 * c;
    const yc = y + 64 * c;
    for (let l = 0; l < 32; l++) {
      const q = src[qs + l]!;
      out[yc + l] = d1 * (q & 15) - min1;
      out[yc + 32 + l] = d2 * (q >> 4) - min2;
    }
  }
}

export function dequantizeQ6KBlock(src: Uint8Array, p: number, out: Float32Array, y: number): void {
  const d = readF16(src, p + 208);
  for (let h = 0; h < 2; h++) {
    const ql = p + 64 * h, qh = p + 128 + 32 * h, sc = p + 192 + 8 * h, yh = y + 128 * h;
    for (let l = 0; l < 32; l++) {
      const is = l >> 4;
      const a = src[ql + l]!, b = src[ql + l + 32]!, hi = src[qh + l]!;
      const q1 = ((a & 15) | ((hi & 3) << 4)) - 32;
      const q2 = ((b & 15) | (((hi >> 2) & 3) << 4)) - 32;
      const q3 = ((a >> 4) | (((hi >> 4) & 3) << 4)) - 32;
      const q4 = ((b >> 4) | (((hi >> 6) & 3) << 4)) - 32;
      out[yh + l] = d * int8(src[sc + is]!) * q1;
      out[yh + l + 32] = d * int8(src[sc + is + 2]!) * q2;
      out[yh + l + 64] = d * int8(src[sc + is + 4]!) * q3;
      out[yh + l + 96] = d * int8(src[sc + is + 6]!) * q4;
    }
  }
}

function int8(b: number): number {
  return (b << 24) >> 24;
}

export const clamp = (v: number, lo: number, hi: number): number => (v < lo ? lo : v > hi ? hi : v);

/** Fit x[o..o+n) ≈ scale·L − min with L in 0..nmax, min ≥ 0 (least squares over a few grids). */
export function fitScaleMin(x: Float32Array, o: number, n: number, nmax = 15): [number, number] {
  let lo = 0, hi = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = x[o + i]!;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!(hi > lo)) return [0, -lo];
  let best: [number, number] = [(hi - lo) / nmax, -lo];
  let bestErr = Infinity;
  const L = new Uint8Array(n);
  for (let k = -10; k <= 10; k++) {
    const iscale = (nmax + 0.1 * k) / (hi - lo);
    let sL = 0, sL2 = 0, sx = 0, sxL = 0;
    for (let i = 0; i < n; i++) {
      const v = x[o + i]!;
      const l = clamp(Math.round(iscale * (v - lo)), 0, nmax);
      L[i] = l;
      sL += l; sL2 += l * l; sx += v; sxL += v * l;
    }
    const D = n * sL2 - sL * sL;
    if (!(D > 0)) continue;
    let a = (n * sxL - sL * sx) / D;
    let b = (sL2 * sx - sL * sxL) / D;
    if (b > 0) { b = 0; a = sxL / sL2; }
    if (!(a > 0)) continue;
    let err = 0;
    for (let i = 0; i < n; i++) err += (a * L[i]! + b - x[o + i]!) ** 2;
    if (err < bestErr) { bestErr = err; best = [a, -b]; }
  }
  return best;
}

/** The 12 bytes at dst[sp..) holding 8 six-bit scales and mins (the inverse of scaleMinK4). */
export function packScaleMinK4(ls: Uint8Array, lm: Uint8Array, dst: Uint8Array, sp: number): void {
  dst.fill(0, sp, sp + 12);
  for (let j = 0; j < 8; j++) {
    if (j < 4) {
      dst[sp + j] = ls[j]!;
      dst[sp + j + 4] = lm[j]!;
    } else {
      dst[sp + j + 4] = (ls[j]! & 0xf) | ((lm[j]! & 0xf) << 4);
      dst[sp + j - 4]! |= (ls[j]! >> 4) << 6;
      dst[sp + j]! |= (lm[j]! >> 4) << 6;
    }
  }
}

/** Quantize x[xo..xo+256) into a Q4_K block at dst[o..o+144). */
export function quantizeQ4KBlock(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  const scales = new Float64Array(8), mins = new Float64Array(8);
  let maxScale = 0, maxMin = 0;
  for (let j = 0; j < 8; j++) {
    const [s, m] = fitScaleMin(x, xo + 32 * j, 32);
    scales[j] = s; mins[j] = m;
    maxScale = Math.max(maxScale, s); maxMin = Math.max(maxMin, m);
  }
  const d = writeF16(dst, o, maxScale / 63);
  const dmin = writeF16(dst, o + 2, maxMin / 63);
  const ls = new Uint8Array(8), lm = new Uint8Array(8);
  for (let j = 0; j < 8; j++) {
    ls[j] = d > 0 ? clamp(Math.round(scales[j]! / d), 0, 63) : 0;
    lm[j] = dmin > 0 ? clamp(Math.round(mins[j]! / dmin), 0, 63) : 0;
  }
  packScaleMinK4(ls, lm, dst, o + 4);
  const q = new Uint8Array(QK_K);
  for (let j = 0; j < 8; j++) {
    const s = d * ls[j]!, m = dmin * lm[j]!;
    for (let i = 0; i < 32; i++) q[32 * j + i] = s > 0 ? clamp(Math.round((x[xo + 32 * j + i]! + m) / s), 0, 15) : 0;
  }
  for (let c = 0; c < 4; c++) {
    for (let l = 0; l < 32; l++) dst[o + 16 + 32 * c + l] = q[64 * c + l]! | (q[64 * c + 32 + l]! << 4);
  }
}

/** Fit x[o..o+n) ≈ scale·L with L in −nneg..nneg−1 (least squares over a few grids). */
export function fitScale(x: Float32Array, o: number, n: number, nneg = 32): number {
  let max = 0, amax = 0;
  for (let i = 0; i < n; i++) {
    const v = x[o + i]!;
    if (Math.abs(v) > amax) { amax = Math.abs(v); max = v; }
  }
  if (amax === 0) return 0;
  let best = -max / nneg, bestErr = Infinity;
  for (let k = -9; k <= 9; k++) {
    const iscale = -(nneg + 0.1 * k) / max;
    let sxL = 0, sL2 = 0;
    for (let i = 0; i < n; i++) {
      const l = clamp(Math.round(iscale * x[o + i]!), -nneg, nneg - 1);
      sxL += x[o + i]! * l; sL2 += l * l;
    }
    if (sL2 === 0) continue;
    const a = sxL / sL2;
    let err = 0;
    for (let i = 0; i < n; i++) err += (a * clamp(Math.round(iscale * x[o + i]!), -nneg, nneg - 1) - x[o + i]!) ** 2;
    if (err < bestErr) { bestErr = err; best = a; }
  }
  return best;
}

/** Quantize x[xo..xo+256) into a Q6_K block at dst[o..o+210). */
export function quantizeQ6KBlock(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  const scales = new Float64Array(16);
  let amax = 0;
  for (let j = 0; j < 16; j++) {
    scales[j] = fitScale(x, xo + 16 * j, 16);
    amax = Math.max(amax, Math.abs(scales[j]!));
  }
  const d = writeF16(dst, o + 208, amax / 127);
  const q = new Uint8Array(QK_K); // q + 32, 0..63
  for (let j = 0; j < 16; j++) {
    const ls = d > 0 ? clamp(Math.round(scales[j]! / d), -127, 127) : 0;
    dst[o + 192 + j] = ls & 0xff;
    const s = d * ls;
    for (let i = 0; i < 16; i++) q[16 * j + i] = (s !== 0 ? clamp(Math.round(x[xo + 16 * j + i]! / s), -32, 31) : 0) + 32;
  }
  for (let h = 0; h < 2; h++) {
    const ql = o + 64 * h, qh = o + 128 + 32 * h, y = 128 * h;
    for (let l = 0; l < 32; l++) {
      const q1 = q[y + l]!, q2 = q[y + l + 32]!, q3 = q[y + l + 64]!, q4 = q[y + l + 96]!;
      dst[ql + l] = (q1 & 15) | ((q3 & 15) << 4);
      dst[ql + l + 32] = (q2 & 15) | ((q4 & 15) << 4);
      dst[qh + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
    }
  }
}
