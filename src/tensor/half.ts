// IEEE binary16 (f16) and bfloat16 (bf16) conversions, as 16-bit patterns held in numbers.
// f32 → f16: round to nearest even, subnormals kept, overflow → ±inf, NaN stays a quiet NaN
//            (what x86 F16C vcvtps2ph does, and so what ggml's CPU path computes).
// f32 → bf16: ggml_compute_fp32_to_bf16: round to nearest even on the top 16 bits, NaN forced
//            quiet (bit 6 set), subnormals not flushed.
// Inputs are first taken to f32 (Math.fround), as a C float would be.

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function bitsOf(x: number): number {
  f32[0] = x;
  return u32[0]!;
}

function floatOf(bits: number): number {
  u32[0] = bits >>> 0;
  return f32[0]!;
}

/** f32 value → f16 bit pattern (0..0xffff), round to nearest even */
export function f32ToF16(x: number): number {
  const u = bitsOf(x);
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  const mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 | (mant >>> 13) : 0);
  const e = exp - 112; // f16 biased exponent (127 - 15)
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    // f16 subnormal (or zero): value / 2^-24 = (1.mant) * 2^(exp-126)
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e; // 14..24
    let q = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rem > halfway || (rem === halfway && (q & 1) === 1)) q++;
    return sign | q; // q may carry into 0x400, the smallest normal: still the right encoding
  }
  let q = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (q & 1) === 1)) q++; // carry may reach 0x7c00 = inf
  return sign | q;
}

let F16_TABLE: Float32Array | undefined;

function decodeF16(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant !== 0 ? floatOf(((h & 0x8000) << 16) | 0x7f800000 | (mant << 13)) : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** f16 bit pattern → its exact value (as f32, which holds every f16 exactly) */
export function f16ToF32(h: number): number {
  F16_TABLE ??= buildF16Table();
  return F16_TABLE[h & 0xffff]!;
}

function buildF16Table(): Float32Array {
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) t[h] = decodeF16(h);
  return t;
}

/** x rounded to the nearest f16 value */
export function roundToF16(x: number): number {
  return f16ToF32(f32ToF16(x));
}

/** f32 value → bf16 bit pattern, as ggml_compute_fp32_to_bf16 */
export function f32ToBF16(x: number): number {
  const u = bitsOf(x);
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) | 64) & 0xffff;
  return ((u + (0x7fff + ((u >>> 16) & 1))) >>> 16) & 0xffff;
}

/** bf16 bit pattern → value */
export function bf16ToF32(h: number): number {
  return floatOf((h & 0xffff) << 16);
}

/** x rounded to the nearest bf16 value */
export function roundToBF16(x: number): number {
  return bf16ToF32(f32ToBF16(x));
}

/** src (f32 values) → f16 bit patterns; out defaults to a new array of src.length */
export function f32ArrayToF16(src: ArrayLike<number>, out: Uint16Array = new Uint16Array(src.length)): Uint16Array {
  for (let i = 0; i < src.length; i++) out[i] = f32ToF16(src[i]!);
  return out;
}

/** f16 bit patterns → f32 values */
export function f16ArrayToF32(src: ArrayLike<number>, out: Float32Array = new Float32Array(src.length)): Float32Array {
  for (let i = 0; i < src.length; i++) out[i] = f16ToF32(src[i]!);
  return out;
}

/** src (f32 values) → bf16 bit patterns */
export function f32ArrayToBF16(src: ArrayLike<number>, out: Uint16Array = new Uint16Array(src.length)): Uint16Array {
  for (let i = 0; i < src.length; i++) out[i] = f32ToBF16(src[i]!);
  return out;
}

/** bf16 bit patterns → f32 values */
export function bf16ArrayToF32(src: ArrayLike<number>, out: Float32Array = new Float32Array(src.length)): Float32Array {
  for (let i = 0; i < src.length; i++) out[i] = bf16ToF32(src[i]!);
  return out;
}

/** f16 stored little-endian at bytes[o..o+2), as a value */
export function readF16(bytes: Uint8Array, o: number): number {
  return f16ToF32(bytes[o]! | (bytes[o + 1]! << 8));
}

/** store x as f16 (little-endian) at bytes[o..o+2); returns the value stored */
export function writeF16(bytes: Uint8Array, o: number, x: number): number {
  const h = f32ToF16(x);
  bytes[o] = h & 0xff;
  bytes[o + 1] = h >>> 8;
  return f16ToF32(h);
}
