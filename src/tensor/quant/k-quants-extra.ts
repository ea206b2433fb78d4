// More K-quant super-blocks of 256 values: Q2_K, Q3_K, Q5_K and IQ4_XS, both directions.
//
// Q2_K (84 B): u8 scales[16], u8 qs[64], f16 d, f16 dmin
//   16 sub-blocks of 16; scales[j] = sc | m << 4; value = d·sc·q − dmin·m, q 2 bits.
// Q3_K (110 B): u8 hmask[32], u8 qs[64], u8 scales[12], f16 d
//   16 sub-blocks of 16 with 6-bit scales sc (see q3kScale); value = d·(sc − 32)·(q − 4),
//   q = 2 low bits | the hmask bit << 2.
// Q2_K and Q3_K 2-bit order: value i = 128n + 32j + l (l < 32) is bits 2j..2j+1 of
//   qs[32n + l]; Q3_K's high bit is bit 4n + j of hmask[l]. Sub-block = i / 16.
// Q5_K (176 B): f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]
//   as Q4_K (same scales, same nibble order), q += 16 when bit (i / 32) of qh[i % 32] is set.
// IQ4_XS (136 B): f16 d, u16 scales_h, u8 scales_l[4], u8 qs[128]
//   8 sub-blocks of 32, ls_j = nibble j of scales_l | bits 2j..2j+1 of scales_h << 4;
//   value = d·(ls_j − 32)·KVALUES_IQ4NL[q], nibbles in Q4_0 order within each sub-block.
// The quantizers are our own simple searches: valid encodings, not bit-equal to llama.cpp's.
import { readF16, writeF16 } from '../half.js';
import { KVALUES_IQ4NL, fitIQ4Scale, nearestIQ4 } from './legacy-quants.js';
import { clamp, fitScale, fitScaleMin, packScaleMinK4, scaleMinK4 } from './k-quants.js';

/** 6-bit scale k (0..15) of a Q3_K block, from its 12 packed bytes at src[p..p+12) */
export function q3kScale(src: Uint8Array, p: number, k: number): number {
  const low = k < 8 ? src[p + k]! & 15 : src[p + k - 8]! >> 4;
  const high = (src[p + 8 + (k & 3)]! >> (2 * (k >> 2))) & 3;
  return low | (high << 4);
}

/** ggml's 2-bit position of value i: [qs byte offset, shift] */
function twoBit(i: number): [number, number] {
  return [32 * (i >> 7) + (i & 31), 2 * ((i >> 5) & 3)];
}

export function dequantizeQ2KBlock(src: Uint8Array, p: number, out: Float32Array, y: number): void {
  const d = readF16(src, p + 80), dmin = readF16(src, p + 82);
  for (let i = 0; i < 256; i++) {
    const sc = src[p + (i >> 4)]!;
    const [b, shift] = twoBit(i);
    out[y + i] = d * (sc & 15) * ((src[p + 16 + b]! >> shift) & 3) - dmin * (sc >> 4);
  }
}

export function dequantizeQ3KBlock(src: Uint8Array, p: number, out: Float32Array, y: number): void {
  const d = readF16(src, p + 108);
  for (let i = 0; i < 256; i++) {
    const [b, shift] = twoBit(i);
    const hi = (src[p + (i & 31)]! >> (4 * (i >> 7) + ((i >> 5) & 3))) & 1;
    const q = ((src[p + 32 + b]! >> shift) & 3) - (hi ? 0 : 4);
    out[y + i] = d * (q3kScale(src, p + 96, i >> 4) - 32) * q;
  }
}

export function dequantizeQ5KBlock(src: Uint8Array, p: number, out: Float32Array, y: number): void {
  const d = readF16(src, p), dmin = readF16(src, p + 2);
  for (let i = 0; i < 256; i++) {
    const [sc, m] = scaleMinK4(src, p + 4, i >> 5);
    const c = i >> 6, l = i & 31, hiNib = (i >> 5) & 1;
    const ql = src[p + 48 + 32 * c + l]!;
    const q = (hiNib ? ql >> 4 : ql & 15) | (((src[p + 16 + l]! >> (i >> 5)) & 1) << 4);
    out[y + i] = d * sc * q - dmin * m;
  }
}

export function iq4xsScale(src: Uint8Array, p: number, j: number): number {
  const h = src[p + 2]! | (src[p + 3]! << 8);
  return ((src[p + 4 + (j >> 1)]! >> (4 * (j & 1))) & 15) | (((h >> (2 * j)) & 3) << 4);
}

export function dequantizeIQ4XSBlock(src: Uint8Array, p: number, out: Float32Array, y: number): void {
  const d = readF16(src, p);
  for (let j = 0; j < 8; j++) {
    const dl = d * (iq4xsScale(src, p, j) - 32);
    for (let l = 0; l < 16; l++) {
      const q = src[p + 8 + 16 * j + l]!;
      out[y + 32 * j + l] = dl * KVALUES_IQ4NL[q & 15]!;
      out[y + 32 * j + 16 + l] = dl * KVALUES_IQ4NL[q >> 4]!;
    }
  }
}

export function quantizeQ2KBlock(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  const s = new Float64Array(16), m = new Float64Array(16);
  let maxS = 0, maxM = 0;
  for (let j = 0; j < 16; j++) {
    [s[j], m[j]] = fitScaleMin(x, xo + 16 * j, 16, 3);
    maxS = Math.max(maxS, s[j]!); maxM = Math.max(maxM, m[j]!);
  }
  const d = writeF16(dst, o + 80, maxS / 15), dmin = writeF16(dst, o + 82, maxM / 15);
  dst.fill(0, o + 16, o + 80);
  for (let j = 0; j < 16; j++) {
    const ls = d > 0 ? clamp(Math.round(s[j]! / d), 0, 15) : 0;
    const lm = dmin > 0 ? clamp(Math.round(m[j]! / dmin), 0, 15) : 0;
    dst[o + j] = ls | (lm << 4);
    for (let i = 16 * j; i < 16 * j + 16; i++) {
      const q = ls > 0 ? clamp(Math.round((x[xo + i]! + dmin * lm) / (d * ls)), 0, 3) : 0;
      const [b, shift] = twoBit(i);
      dst[o + 16 + b]! |= q << shift;
    }
  }
}

export function quantizeQ3KBlock(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  const s = new Float64Array(16);
  let maxScale = 0;
  for (let j = 0; j < 16; j++) {
    s[j] = fitScale(x, xo + 16 * j, 16, 4);
    if (Math.abs(s[j]!) > Math.abs(maxScale)) maxScale = s[j]!;
  }
  dst.fill(0, o, o + 108);
  const iscale = maxScale !== 0 ? -32 / maxScale : 0;
  const d = writeF16(dst, o + 108, iscale !== 0 ? 1 / iscale : 0);
  for (let j = 0; j < 16; j++) {
    const ls = d !== 0 ? clamp(Math.round(s[j]! / d), -32, 31) : 0;
    const l = ls + 32;
    if (j < 8) dst[o + 96 + j]! |= l & 15;
    else dst[o + 96 + j - 8]! |= (l & 15) << 4;
    dst[o + 104 + (j & 3)]! |= (l >> 4) << (2 * (j >> 2));
    for (let i = 16 * j; i < 16 * j + 16; i++) {
      const q = ls !== 0 ? clamp(Math.round(x[xo + i]! / (d * ls)), -4, 3) + 4 : 4;
      const [b, shift] = twoBit(i);
      dst[o + 32 + b]! |= (q & 3) << shift;
      if (q >= 4) dst[o + (i & 31)]! |= 1 << (4 * (i >> 7) + ((i >> 5) & 3));
    }
  }
}

export function quantizeQ5KBlock(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  const scales = new Float64Array(8), mins = new Float64Array(8);
  let maxScale = 0, maxMin = 0;
  for (let j = 0; j < 8; j++) {
    [scales[j], mins[j]] = fitScaleMin(x, xo + 32 * j, 32, 31);
    maxScale = Math.max(maxScale, scales[j]!); maxMin = Math.max(maxMin, mins[j]!);
  }
  const d = writeF16(dst, o, maxScale / 63), dmin = writeF16(dst, o + 2, maxMin / 63);
  const ls = new Uint8Array(8), lm = new Uint8Array(8);
  for (let j = 0; j < 8; j++) {
    ls[j] = d > 0 ? clamp(Math.round(scales[j]! / d), 0, 63) : 0;
    lm[j] = dmin > 0 ? clamp(Math.round(mins[j]! / dmin), 0, 63) : 0;
  }
  packScaleMinK4(ls, lm, dst, o + 4);
  dst.fill(0, o + 16, o + 176);
  for (let i = 0; i < 256; i++) {
    const j = i >> 5, sc = d * ls[j]!;
    const q = sc > 0 ? clamp(Math.round((x[xo + i]! + dmin * lm[j]!) / sc), 0, 31) : 0;
    const c = i >> 6, l = i & 31;
    dst[o + 48 + 32 * c + l]! |= (q & 15) << (4 * ((i >> 5) & 1));
    dst[o + 16 + l]! |= (q >> 4) << j;
  }
}

export function quantizeIQ4XSBlock(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  const s = new Float64Array(8);
  let maxScale = 0;
  for (let j = 0; j < 8; j++) {
    s[j] = fitIQ4Scale(x, xo + 32 * j, 32);
    if (Math.abs(s[j]!) > Math.abs(maxScale)) maxScale = s[j]!;
  }
  const d = writeF16(dst, o, -maxScale / 32);
  dst.fill(0, o + 2, o + 8);
  let h = 0;
  for (let j = 0; j < 8; j++) {
    const l = d !== 0 ? clamp(Math.round(s[j]! / d), -32, 31) : 0;
    dst[o + 4 + (j >> 1)]! |= ((l + 32) & 15) << (4 * (j & 1));
    h |= ((l + 32) >> 4) << (2 * j);
    const dl = d * l;
    for (let i = 0; i < 16; i++) {
      const a = dl !== 0 ? nearestIQ4(x[xo + 32 * j + i]! / dl) : 8;
      const b = dl !== 0 ? nearestIQ4(x[xo + 32 * j + 16 + i]! / dl) : 8;
      dst[o + 8 + 16 * j + i] = a | (b << 4);
    }
  }
  dst[o + 2] = h & 0xff;
  dst[o + 3] = h >> 8;
}
