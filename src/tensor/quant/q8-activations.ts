// Activation rounding before a dot product with a weight of a given type, as llama.cpp's CPU
// backend does it (it converts src1 to the weight type's vec_dot_type first):
//   F32 → unchanged; F16 → f16; BF16 → bf16 (ggml_compute_fp32_to_bf16);
//   Q8_0, Q4_0, Q5_0, IQ4_NL → Q8_0 blocks of 32 (Q4_1, Q5_1 → Q8_1: the same values);
//   Q2_K..Q6_K, IQ4_XS → Q8_K blocks of 256 (each type's row in ../weight-types.ts names its pairing).
// out[i] is the value the int8 dot product stands for: scale · q.
//
// Which code path we match (x86 with AVX2 / AVX-512, ggml-cpu/arch/x86/quants.c):
// - quantize_row_q8_0 there is the AVX/AVX2 branch (AVX-512 builds take it too), not the
//   scalar quantize_row_q8_0_ref: amax = max|x|; the stored scale is f16(amax/127) but the
//   multiplier is id = 127/amax (not 1/d), and q = round-half-even(x·id) (_mm256_round_ps
//   with _MM_ROUND_NEAREST), where the reference uses roundf (halves away from zero). The
//   repacked Q4_0 path (ggml_quantize_mat_q8_0_4x8, AVX2) computes the same numbers.
// - quantize_row_q8_K on x86 is quantize_row_q8_K_ref: max = the value of largest |x| (first
//   one), iscale = −127/max, q = min(127, nearest_int(iscale·x)) where nearest_int is the
//   float magic-number trick (round half even), d = 1/iscale kept in f32 (not f16). The
//   repacked Q4_K path (ggml_quantize_mat_q8_K_4x8, AVX2) picks ±127/amax by the sign of the
//   max and rounds half even: the same d·q values, since negating both iscale and q is exact.
// All arithmetic is f32 (Math.fround at each step), as in the C code.
import { InvalidArgumentError } from '../../errors.js';
import { GGMLType, typeName, weightType } from '../weight-types.js';
import { roundToBF16, roundToF16, writeF16 } from '../half.js';

const fr = Math.fround;

/** nearest integer, halves to even (x86 default rounding mode) */
export function roundHalfEven(v: number): number {
  const r = Math.round(v); // halves toward +inf
  return r - v === 0.5 && (r & 1) !== 0 ? r - 1 : r;
}

/** out[0..n) = x[0..n) rounded as llama.cpp rounds activations for a weight of `type`: to the
 *  activation type its row pairs it with. */
export function roundActivations(type: GGMLType, x: Float32Array, n: number, out: Float32Array): void {
  if (x.length < n || out.length < n) throw new InvalidArgumentError(`roundActivations: arrays shorter than n=${n}`);
  switch (weightType(type)?.compute?.activation) {
    case GGMLType.F32:
      if (out !== x) out.set(x.subarray(0, n));
      return;
    case GGMLType.F16:
      for (let i = 0; i < n; i++) out[i] = roundToF16(x[i]!);
      return;
    case GGMLType.BF16:
      for (let i = 0; i < n; i++) out[i] = roundToBF16(x[i]!);
      return;
    case GGMLType.Q8_0:
      checkBlocks(type, n, 32);
      for (let b = 0; b < n; b += 32) roundQ8_0Block(x, b, out);
      return;
    case GGMLType.Q8_K:
      checkBlocks(type, n, 256);
      for (let b = 0; b < n; b += 256) roundQ8_KBlock(x, b, out);
      return;
    default:
      throw new InvalidArgumentError(`roundActivations: ${typeName(type)} is not a type loom computes with`);
  }
}

function checkBlocks(type: GGMLType, n: number, block: number): void {
  if (n % block !== 0) {
    throw new InvalidArgumentError(`roundActivations: n=${n} is not a multiple of ${block}, the activation block size for ${typeName(type)} weights`);
  }
}

/** x86 AVX2 quantize_row_q8_0 of x[xo..xo+32) into one block_q8_0 (f16 d, int8 q[32]) at
 *  dst[o..o+34): what llama.cpp's CPU backend writes into a q8_0 KV cache */
export function quantizeQ8_0BlockX86(x: Float32Array, xo: number, dst: Uint8Array, o: number): void {
  let amax = 0;
  for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[xo + j]!));
  writeF16(dst, o, fr(amax / 127));
  const id = amax !== 0 ? fr(127 / amax) : 0;
  for (let j = 0; j < 32; j++) {
    const v = fr(x[xo + j]! * id);
    dst[o + 2 + j] = (Number.isFinite(v) ? Math.max(-128, Math.min(127, roundHalfEven(v))) : -128) & 0xff;
  }
}

/** x86 AVX2 quantize_row_q8_0, then d·q with d as stored (f16) */
function roundQ8_0Block(x: Float32Array, o: number, out: Float32Array): void {
  let amax = 0;
  for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[o + j]!));
  const d = roundToF16(fr(amax / 127));
  const id = amax !== 0 ? fr(127 / amax) : 0;
  for (let j = 0; j < 32; j++) {
    const v = fr(x[o + j]! * id);
    // cvtps_epi32 of NaN/inf is INT_MIN, which the int16/int8 packs saturate to −128
    const q = Number.isFinite(v) ? Math.max(-128, Math.min(127, roundHalfEven(v))) : -128;
    out[o + j] = d * q;
  }
}

/** quantize_row_q8_K_ref, then d·q with d in f32 */
function roundQ8_KBlock(x: Float32Array, o: number, out: Float32Array): void {
  let max = 0, amax = 0;
  for (let j = 0; j < 256; j++) {
    const ax = Math.abs(x[o + j]!);
    if (ax > amax) { amax = ax; max = x[o + j]!; }
  }
  if (amax === 0) {
    out.fill(0, o, o + 256);
    return;
  }
  const iscale = fr(-127 / max);
  const d = fr(1 / iscale);
  for (let j = 0; j < 256; j++) {
    const q = Math.min(127, roundHalfEven(fr(iscale * x[o + j]!)));
    out[o + j] = d * q;
  }
}
