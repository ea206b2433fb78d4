// Activation rounding and quantization before a matmul, and weight dequantization.
//
// Before a dot product with a weight of type T the activations are rounded to T's dot type,
// exactly as llama.cpp's x86 CPU backend does (see src/model/quant/q8-activations.ts, the
// oracle these functions must match bit for bit):
//   F32 → unchanged;  F16 → f16 values;  BF16 → bf16 bits;
//   blocks of 32 (Act::kQ8_0) → 8-bit blocks of 32 (AVX2 quantize_row_q8_0: d = f16(amax/127),
//               q = round_half_even(x · (127/amax)), saturated to int8);
//   K-quants, IQ4_XS (Act::kQ8_K) → 8-bit blocks of 256 (quantize_row_q8_K_ref: iscale = −127/max where max is
//               the first element of largest |x|, d = 1/iscale in f32, q = min(127, rne(iscale·x))).
//
// Prepared activation rows ("xa rows") have one layout per weight type, shared by every
// backend (scalar, AVX2, AVX-512) and set by the type's Act (weight-types.h), each row
// `prepared_row_bytes(type, K)` long (a multiple of 64):
//   F32:        float x[K]                       (a copy; the kernels may also read x directly)
//   F16:        float v[K]                       (values rounded to f16, as f32)
//   BF16:       uint16 b[K]                      (bf16 bit patterns)
//   Act::kQ8_0: int8 q[K]; float d[K/32]; int32 s[K/32]           s = Σ q over the block
//   Act::kQ8_K: int8 q[K]; float d[K/256]; int16 s16[K/16]; int16 s32[K/32]
//               s16 / s32 = Σ q over each 16 / 32 values (|s32| ≤ 4064 fits int16)
// Every function defined here is `static inline` (internal linkage): this header is included
// by translation units built with -mavx512f etc., whose copies must never replace the
// portable ones at link time.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "half.h"

namespace loom {

static inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// ---- weight block layouts (ggml) ----

constexpr int kQK = 32;    // Q8_0 / Q4_0 block
constexpr int kQKK = 256;  // K-quant super-block
constexpr int kQ8_0Bytes = 34;  // f16 d, int8 q[32]
constexpr int kQ4_0Bytes = 18;  // f16 d, u8 nibbles[16]
constexpr int kQ4_KBytes = 144; // f16 d, f16 dmin, u8 scales[12], u8 qs[128]
constexpr int kQ6_KBytes = 210; // u8 ql[128], u8 qh[64], int8 scales[16], f16 d

// Block size (values) of a weight type, 0 if unsupported.
int weight_block_values(int type);
// Bytes of one weight row of n values (n a multiple of the block size).
size_t weight_row_bytes(int type, int n);

// Q4_K sub-block j (0..7) scale and min from the 12 packed bytes.
static inline void q4k_scale_min(const uint8_t* s, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// Q6_K 6-bit value i (0..255) of a block, unsigned 0..63 (the weight is d·scales[i/16]·(q−32)).
static inline int q6k_value(const uint8_t* blk, int i) {
  const int h = i / 128, r = i % 128, l = r % 32, quarter = r / 32;
  const uint8_t* ql = blk + 64 * h;
  const uint8_t* qh = blk + 128 + 32 * h;
  const int lo = (quarter & 1) ? ql[l + 32] : ql[l];
  const int low4 = quarter < 2 ? (lo & 15) : (lo >> 4);
  return low4 | (((qh[l] >> (2 * quarter)) & 3) << 4);
}

// out[0..n) = one weight row of `type` dequantized (as ggml's dequantize_row_*); interleaved layouts
// (kQ4_0_R16, kQ8_0_R16) have no contiguous row: r16.h dequantizes theirs, this leaves out untouched.
void dequantize_row(int type, const uint8_t* row, int n, float* out);

// ---- prepared activation rows ----

// Bytes of one prepared activation row for weight `type` and K inputs (a multiple of 64).
size_t prepared_row_bytes(int type, int K);

// Views of a prepared Q8_0 / Q8_K row.
struct XQ8_0 {
  const int8_t* q;   // [K]
  const float* d;    // [K/32]
  const int32_t* s;  // [K/32]
};
struct XQ8_K {
  const int8_t* q;     // [K]
  const float* d;      // [K/256]
  const int16_t* s16;  // [K/16]
  const int16_t* s32;  // [K/32]
};
static inline XQ8_0 xq8_0_view(const uint8_t* row, int K) {
  return {reinterpret_cast<const int8_t*>(row), reinterpret_cast<const float*>(row + K),
          reinterpret_cast<const int32_t*>(row + K + 4 * (K / 32))};
}
static inline XQ8_K xq8_k_view(const uint8_t* row, int K) {
  return {reinterpret_cast<const int8_t*>(row), reinterpret_cast<const float*>(row + K),
          reinterpret_cast<const int16_t*>(row + K + 4 * (K / 256)),
          reinterpret_cast<const int16_t*>(row + K + 4 * (K / 256) + 2 * (K / 16))};
}

// Portable preparation of one activation row x[0..K) for `type` into dst
// (prepared_row_bytes(type, K) bytes, 4-byte aligned).
void prepare_row_scalar(int type, const float* x, int K, uint8_t* dst);

// The value each prepared element stands for (d·q, or the rounded value): out[0..K).
void prepared_row_values(int type, const uint8_t* row, int K, float* out);

}  // namespace loom
