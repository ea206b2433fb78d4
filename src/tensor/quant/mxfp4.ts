// MXFP4 (ggml type 39, gpt-oss's experts): blocks of 32 values, 17 bytes.
//   u8 e, u8 qs[16]     x[j] = 2^(e − 128) · KVALUES_MXFP4[nibble]
// e is an E8M0 scale (2^(e − 127)); the table holds the E2M1 values doubled, so the scale
// used is half of it (ggml's GGML_E8M0_TO_FP32_HALF). Nibble order as Q4_0: qs[j] low
// nibble is value j, high nibble value j+16. Both directions bit-exact with gguf-py's
// class MXFP4 (and ggml's quantize_row_mxfp4_ref / dequantize_row_mxfp4).

/** ggml's kvalues_mxfp4: E2M1's values doubled (index 8 is −0) */
export const KVALUES_MXFP4: readonly number[] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

const fr = Math.fround;

/** GGML_E8M0_TO_FP32_HALF: 2^(e − 128), exact in f32 for every e (e < 2: a subnormal) */
export function e8m0Half(e: number): number {
  return 2 ** (e - 128);
}

export function dequantizeMXFP4Block(src: Uint8Array, p: number, out: Float32Array, y: number): void {
  const d = e8m0Half(src[p]!);
  for (let j = 0; j < 16; j++) {
    const q = src[p + 1 + j]!;
    out[y + j] = d * KVALUES_MXFP4[q & 15]!;
    out[y + j + 16] = d * KVALUES_MXFP4[q >> 4]!;
  }
}

/** the first index of least |d·level − v| (f32 arithmetic, as best_index_mxfp4 and numpy's argmin) */
function bestIndex(v: number, d: number): number {
  let best = 0, bestErr = Math.abs(fr(d * KVALUES_MXFP4[0]! - v));
  for (let i = 1; i < 16; i++) {
    const err = Math.abs(fr(d * KVALUES_MXFP4[i]! - v));
    if (err < bestErr) { best = i; bestErr = err; }
  }
  return best;
}

/** quantize_row_mxfp4_ref: e = floor(log2f(amax)) − 2 + 127 (0 for an all-zero block), each
 *  value the nearest level at 2^(e − 128). log2 is rounded to f32 first, as log2f and numpy's
 *  float32 log2 do (an amax just below 2^k, k ≥ 2, takes e of 2^k). An amax under 2^−125
 *  (e below 0) wraps modulo 256, as the C cast does on x86. */
export function quantizeMXFP4Block(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  let amax = 0;
  for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[xo + j]!));
  const e = amax > 0 ? (Math.floor(fr(Math.log2(amax))) - 2 + 127) & 0xff : 0;
  const d = e8m0Half(e);
  dst[o] = e;
  for (let j = 0; j < 16; j++) dst[o + 1 + j] = bestIndex(x[xo + j]!, d) | (bestIndex(x[xo + 16 + j]!, d) << 4);
}
