// f16 / bf16 conversions on 16-bit patterns, bit-exact with src/model/half.ts:
//   f32 → f16: round to nearest even, subnormals kept, overflow → ±inf, NaN keeps its top
//              payload bits and is made quiet (what x86 F16C vcvtps2ph does);
//   f32 → bf16: ggml_compute_fp32_to_bf16 (round to nearest even, NaN forced quiet).
// Every function here is `static inline` (internal linkage) on purpose: this header is
// included by translation units compiled with -mavx512f etc., and an inline function with
// external linkage could be merged by the linker into the portable code's copy.
#pragma once
#include <cstdint>
#include <cstring>

namespace loom {

static inline uint32_t f32_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

static inline float f32_from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

static inline uint16_t f32_to_f16(float x) {
  const uint32_t u = f32_bits(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const int exp = static_cast<int>((u >> 23) & 0xffu);
  const uint32_t mant = u & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant != 0 ? 0x200u | (mant >> 13) : 0u));
  const int e = exp - 112;  // f16 biased exponent
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    const uint32_t m = mant | 0x800000u;
    const int shift = 14 - e;  // 14..24
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1))) q++;
    return static_cast<uint16_t>(sign | q);  // a carry into 0x400 is the smallest normal
  }
  uint32_t q = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) q++;  // may carry to 0x7c00 = inf
  return static_cast<uint16_t>(sign | q);
}

static inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // zero or subnormal: mant · 2^-24, exact in f32
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exp == 31) return f32_from_bits(sign | 0x7f800000u | (mant << 13));
  return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

static inline float round_to_f16(float x) { return f16_to_f32(f32_to_f16(x)); }

// GELU from a table of f16(gelu(h)) over every f16 bit pattern h: 0 below −10, x above 10
// (act.cc builds the table; the SIMD kernels vectorize the same steps)
static inline float gelu_from_table(float x, const uint16_t* table) {
  return x <= -10.0f ? 0.0f : x >= 10.0f ? x : f16_to_f32(table[f32_to_f16(x)]);
}

static inline uint16_t f32_to_bf16(float x) {
  const uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 64u);
  return static_cast<uint16_t>((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

static inline float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

}  // namespace loom
