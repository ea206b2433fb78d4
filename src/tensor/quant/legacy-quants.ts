// Blocks of 32 values: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL, both directions.
//   Q8_0 (34 B): f16 d, int8 q[32]                  x = d·q
//   Q4_0 (18 B): f16 d, u8 qs[16]                    x[j] = d·(q − 8), q a nibble
//   Q4_1 (20 B): f16 d, f16 m, u8 qs[16]            x[j] = d·q + m, q a nibble (0..15)
//   Q5_0 (22 B): f16 d, u32 qh, u8 qs[16]           x[j] = d·(q − 16), q = nibble | bit j of qh << 4
//   Q5_1 (24 B): f16 d, f16 m, u32 qh, u8 qs[16]    x[j] = d·q + m, q 5 bits as in Q5_0
//   IQ4_NL (18 B): f16 d, u8 qs[16]                  x[j] = d·KVALUES_IQ4NL[nibble]
// Nibble order as Q4_0: qs[j] low nibble is value j, high nibble value j+16 (qh bit j+16).
// The quantizers follow ggml's quantize_row_*_ref (f32 arithmetic, truncation as there),
// except IQ4_NL's: a nearest-value search over a few scales (a valid encoding, not llama-quantize's).
import { readF16, writeF16 } from '../half.js';

/** ggml's kvalues_iq4nl: the 16 non-linear levels of IQ4_NL and IQ4_XS */
export const KVALUES_IQ4NL: readonly number[] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

const fr = Math.fround;

/** C roundf: nearest, halves away from zero */
function roundAway(v: number): number {
  return v < 0 ? -Math.floor(-v + 0.5) : Math.floor(v + 0.5);
}

export function dequantizeQ8_0Block(src: Uint8Array, p: number, out: Float32Array, y: number): void {
  const d = readF16(src, p);
  for (let j = 0; j < 32; j++) out[y + j] = d * ((src[p + 2 + j]! << 24) >> 24);
}

export function dequantizeQ4_0Block(src: Uint8Array, p: number, out: Float32Array, y: number): void {
  const d = readF16(src, p);
  for (let j = 0; j < 16; j++) {
    const q = src[p + 2 + j]!;
    out[y + j] = d * ((q & 15) - 8);
    out[y + j + 16] = d * ((q >> 4) - 8);
  }
}

/** quantize_row_q8_0_ref: d = amax/127, q = roundf(x·(1/d)) */
export function quantizeQ8_0Block(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  let amax = 0;
  for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[xo + j]!));
  const d = fr(amax / 127);
  const id = d !== 0 ? fr(1 / d) : 0;
  writeF16(dst, o, d);
  for (let j = 0; j < 32; j++) dst[o + 2 + j] = roundAway(fr(x[xo + j]! * id)) & 0xff;
}

/** quantize_row_q4_0_ref: d = max/−8 (max = the value of largest magnitude), q = min(15, (int8)(x/d + 8.5)) */
export function quantizeQ4_0Block(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  let amax = 0, max = 0;
  for (let j = 0; j < 32; j++) {
    const v = x[xo + j]!;
    if (amax < Math.abs(v)) { amax = Math.abs(v); max = v; }
  }
  const d = fr(max / -8);
  const id = d !== 0 ? fr(1 / d) : 0;
  writeF16(dst, o, d);
  for (let j = 0; j < 16; j++) {
    const q0 = Math.min(15, Math.trunc(fr(fr(x[xo + j]! * id) + 8.5)));
    const q1 = Math.min(15, Math.trunc(fr(fr(x[xo + 16 + j]! * id) + 8.5)));
    dst[o + 2 + j] = q0 | (q1 << 4);
  }
}

function qh32(src: Uint8Array, p: number): number {
  return (src[p]! | (src[p + 1]! << 8) | (src[p + 2]! << 16) | (src[p + 3]! << 24)) >>> 0;
}

function writeQh(dst: Uint8Array, p: number, qh: number): void {
  for (let i = 0; i < 4; i++) dst[p + i] = (qh >>> (8 * i)) & 0xff;
}

export function dequantizeQ4_1Block(src: Uint8Array, p: number, out: Float32Array, y: number): void {
  const d = readF16(src, p), m = readF16(src, p + 2);
  for (let j = 0; j < 16; j++) {
    const q = src[p + 4 + j]!;
    out[y + j] = (q & 15) * d + m;
    out[y + j + 16] = (q >> 4) * d + m;
  }
}

export function dequantizeQ5_0Block(src: Uint8Array, p: number, out: Float32Array, y: number): void {
  const d = readF16(src, p), qh = qh32(src, p + 2);
  for (let j = 0; j < 16; j++) {
    const q = src[p + 6 + j]!;
    out[y + j] = d * (((q & 15) | (((qh >>> j) & 1) << 4)) - 16);
    out[y + j + 16] = d * (((q >> 4) | (((qh >>> (j + 16)) & 1) << 4)) - 16);
  }
}

export function dequantizeQ5_1Block(src: Uint8Array, p: number, out: Float32Array, y: number): void {
  const d = readF16(src, p), m = readF16(src, p + 2), qh = qh32(src, p + 4);
  for (let j = 0; j < 16; j++) {
    const q = src[p + 8 + j]!;
    out[y + j] = ((q & 15) | (((qh >>> j) & 1) << 4)) * d + m;
    out[y + j + 16] = ((q >> 4) | (((qh >>> (j + 16)) & 1) << 4)) * d + m;
  }
}

export function dequantizeIQ4_NLBlock(src: Uint8Array, p: number, out: Float32Array, y: number): void {
  const d = readF16(src, p);
  for (let j = 0; j < 16; j++) {
    const q = src[p + 2 + j]!;
    out[y + j] = d * KVALUES_IQ4NL[q & 15]!;
    out[y + j + 16] = d * KVALUES_IQ4NL[q >> 4]!;
  }
}

/** quantize_row_q4_1_ref / q5_1_ref: d = (max − min)/nmax, q = min(nmax, (int8)((x − min)/d + 0.5)) */
function quantizeMinBlock(x: Float32Array, xo: number, nmax: number): { d: number; m: number; q: Uint8Array } {
  let min = Infinity, max = -Infinity;
  for (let j = 0; j < 32; j++) {
    const v = x[xo + j]!;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const d = fr((max - min) / nmax);
  const id = d !== 0 ? fr(1 / d) : 0;
  const q = new Uint8Array(32);
  for (let j = 0; j < 32; j++) q[j] = Math.min(nmax, Math.trunc(fr(fr(fr(x[xo + j]! - min) * id) + 0.5)));
  return { d, m: min, q };
}

export function quantizeQ4_1Block(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  const { d, m, q } = quantizeMinBlock(x, xo, 15);
  writeF16(dst, o, d);
  writeF16(dst, o + 2, m);
  for (let j = 0; j < 16; j++) dst[o + 4 + j] = q[j]! | (q[j + 16]! << 4);
}

export function quantizeQ5_1Block(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  const { d, m, q } = quantizeMinBlock(x, xo, 31);
  writeF16(dst, o, d);
  writeF16(dst, o + 2, m);
  packQ5(q, dst, o + 4);
}

/** qh (u32) then the 16 nibble bytes of 32 five-bit values */
function packQ5(q: Uint8Array, dst: Uint8Array, o: number): void {
  let qh = 0;
  for (let j = 0; j < 16; j++) {
    dst[o + 4 + j] = (q[j]! & 15) | ((q[j + 16]! & 15) << 4);
    qh |= ((q[j]! >> 4) << j) | ((q[j + 16]! >> 4) << (j + 16));
  }
  writeQh(dst, o, qh >>> 0);
}

/** quantize_row_q5_0_ref: d = max/−16 (max = the value of largest magnitude), q = min(31, (int8)(x/d + 16.5)) */
export function quantizeQ5_0Block(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  let amax = 0, max = 0;
  for (let j = 0; j < 32; j++) {
    const v = x[xo + j]!;
    if (amax < Math.abs(v)) { amax = Math.abs(v); max = v; }
  }
  const d = fr(max / -16);
  const id = d !== 0 ? fr(1 / d) : 0;
  writeF16(dst, o, d);
  const q = new Uint8Array(32);
  for (let j = 0; j < 32; j++) q[j] = Math.min(31, Math.trunc(fr(fr(x[xo + j]! * id) + 16.5)));
  packQ5(q, dst, o + 2);
}

/** index of the level nearest to v (levels ascending) */
export function nearestIQ4(v: number): number {
  let best = 0, bestErr = Infinity;
  for (let k = 0; k < 16; k++) {
    const e = Math.abs(KVALUES_IQ4NL[k]! - v);
    if (e < bestErr) { bestErr = e; best = k; }
  }
  return best;
}

/** Best scale s (least squares over a few candidates) for x[o..o+n) ≈ s·KVALUES_IQ4NL[q]. */
export function fitIQ4Scale(x: Float32Array, o: number, n: number): number {
  let amax = 0, max = 0;
  for (let i = 0; i < n; i++) {
    const v = x[o + i]!;
    if (Math.abs(v) > amax) { amax = Math.abs(v); max = v; }
  }
  if (amax === 0) return 0;
  let best = max / -127, bestErr = Infinity;
  for (let k = -7; k <= 7; k++) {
    const s0 = max / (-127 + 4 * k);
    let sxL = 0, sL2 = 0;
    for (let i = 0; i < n; i++) {
      const l = KVALUES_IQ4NL[nearestIQ4(x[o + i]! / s0)]!;
      sxL += x[o + i]! * l; sL2 += l * l;
    }
    const s = sxL / sL2;
    let err = 0;
    for (let i = 0; i < n; i++) err += (s * KVALUES_IQ4NL[nearestIQ4(x[o + i]! / s)]! - x[o + i]!) ** 2;
    if (err < bestErr) { bestErr = err; best = s; }
  }
  return best;
}

export function quantizeIQ4_NLBlock(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  const d = writeF16(dst, o, fitIQ4Scale(x, xo, 32));
  for (let j = 0; j < 16; j++) {
    const a = d !== 0 ? nearestIQ4(x[xo + j]! / d) : 8, b = d !== 0 ? nearestIQ4(x[xo + j + 16]! / d) : 8;
    dst[o + 2 + j] = a | (b << 4);
  }
}
