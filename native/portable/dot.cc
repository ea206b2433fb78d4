// Portable C++ dot kernels (no -m flags: every CPU, and the oracle the SIMD ones are tested
// against): one weight row · one prepared activation row at a time. F32, F16, BF16, Q8_0,
// Q4_0, Q4_K and Q6_K have kernels of their own; the other block types dequantize each
// weight block and dot it with the prepared values. Registered as kPortableDots.
#include <cstddef>
#include <cstdint>

#include "../quant.h"
#include "../weight-types.h"

namespace loom {
namespace {

// Float dots keep 8 partial sums (less rounding error than one running sum, and vectorizable).
template <typename W, typename X>
float dot_float(W wval, X xval, int K) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= K; i += 8)
    for (int j = 0; j < 8; j++) s[j] += wval(i + j) * xval(i + j);
  for (; i < K; i++) s[0] += wval(i) * xval(i);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

float dot_f32(const float* w, const float* x, int K) {
  return dot_float([w](int i) { return w[i]; }, [x](int i) { return x[i]; }, K);
}

float dot_f16(const uint8_t* w, const float* x, int K) {
  return dot_float([w](int i) { return f16_to_f32(load_u16(w + 2 * i)); }, [x](int i) { return x[i]; }, K);
}

float dot_bf16(const uint8_t* w, const uint8_t* x, int K) {
  return dot_float([w](int i) { return bf16_to_f32(load_u16(w + 2 * i)); },
                   [x](int i) { return bf16_to_f32(load_u16(x + 2 * i)); }, K);
}

// Σ_b dw·dx·Σ q_w·q_x over Q8_0 blocks
float dot_q8_0(const uint8_t* w, const XQ8_0& x, int K) {
  float s = 0;
  for (int b = 0; b < K / kQK; b++) {
    const uint8_t* blk = w + kQ8_0Bytes * b;
    const int8_t* qw = reinterpret_cast<const int8_t*>(blk + 2);
    const int8_t* qx = x.q + kQK * b;
    int32_t isum = 0;
    for (int j = 0; j < kQK; j++) isum += qw[j] * qx[j];
    s += f16_to_f32(load_u16(blk)) * x.d[b] * static_cast<float>(isum);
  }
  return s;
}

// Q4_0 value (q − 8)·d: Σ q·x − 8·Σx per block
float dot_q4_0(const uint8_t* w, const XQ8_0& x, int K) {
  float s = 0;
  for (int b = 0; b < K / kQK; b++) {
    const uint8_t* blk = w + kQ4_0Bytes * b;
    const int8_t* qx = x.q + kQK * b;
    int32_t isum = 0;
    for (int j = 0; j < 16; j++) isum += (blk[2 + j] & 15) * qx[j] + (blk[2 + j] >> 4) * qx[j + 16];
    isum -= 8 * x.s[b];
    s += f16_to_f32(load_u16(blk)) * x.d[b] * static_cast<float>(isum);
  }
  return s;
}

// Q4_K: dx·(d·Σ_j sc_j·Σ q·x − dmin·Σ_j m_j·Σx) per super-block
float dot_q4_k(const uint8_t* w, const XQ8_K& x, int K) {
  float s = 0;
  for (int b = 0; b < K / kQKK; b++) {
    const uint8_t* blk = w + kQ4_KBytes * b;
    const int8_t* qx = x.q + kQKK * b;
    int32_t main = 0, mins = 0;
    for (int c = 0; c < 4; c++) {
      const uint8_t* qs = blk + 16 + 32 * c;
      int32_t lo = 0, hi = 0;
      for (int l = 0; l < 32; l++) {
        lo += (qs[l] & 15) * qx[64 * c + l];
        hi += (qs[l] >> 4) * qx[64 * c + 32 + l];
      }
      uint8_t s1, m1, s2, m2;
      q4k_scale_min(blk + 4, 2 * c, &s1, &m1);
      q4k_scale_min(blk + 4, 2 * c + 1, &s2, &m2);
      main += s1 * lo + s2 * hi;
      mins += m1 * x.s32[8 * b + 2 * c] + m2 * x.s32[8 * b + 2 * c + 1];
    }
    const float d = f16_to_f32(load_u16(blk)), dmin = f16_to_f32(load_u16(blk + 2));
    s += x.d[b] * (d * static_cast<float>(main) - dmin * static_cast<float>(mins));
  }
  return s;
}

// Q6_K: d·dx·Σ_j sc_j·(Σ q·x − 32·Σx) over sub-blocks of 16
float dot_q6_k(const uint8_t* w, const XQ8_K& x, int K) {
  float s = 0;
  for (int b = 0; b < K / kQKK; b++) {
    const uint8_t* blk = w + kQ6_KBytes * b;
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
    const int8_t* qx = x.q + kQKK * b;
    int32_t isum = 0;
    for (int j = 0; j < 16; j++) {
      int32_t sub = 0;
      for (int i = 16 * j; i < 16 * j + 16; i++) sub += q6k_value(blk, i) * qx[i];
      isum += sc[j] * (sub - 32 * x.s16[16 * b + j]);
    }
    s += f16_to_f32(load_u16(blk + 208)) * x.d[b] * static_cast<float>(isum);
  }
  return s;
}

// Any block type: each weight block dequantized, then dotted with the prepared values
// (the types without an integer kernel of their own here; the x86 paths have them all).
float dot_dequantized(int type, const uint8_t* w, const uint8_t* xa, int K) {
  const WeightTraits* t = weight_traits(type);
  const int bv = t->block_values;
  float wv[256], xv[256];
  double s = 0;
  for (int b = 0; b < K / bv; b++) {
    t->dequantize(w + static_cast<size_t>(t->block_bytes) * b, wv);
    if (t->act == Act::kQ8_0) {
      const XQ8_0 x = xq8_0_view(xa, K);
      for (int i = 0; i < bv; i++) xv[i] = x.d[b] * x.q[bv * b + i];
    } else {
      const XQ8_K x = xq8_k_view(xa, K);
      for (int i = 0; i < bv; i++) xv[i] = x.d[b] * x.q[bv * b + i];
    }
    float part = 0;
    for (int i = 0; i < bv; i++) part += wv[i] * xv[i];
    s += part;
  }
  return static_cast<float>(s);
}

// ---- the registration: each kernel over output rows [o0, o1) and every activation row ----

using RowDot = float (*)(const uint8_t* w, const uint8_t* xa, int K);

template <RowDot Dot>
void dot_each(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0, int o1,
              float* out, int N) {
  for (int o = o0; o < o1; o++)
    for (int r = 0; r < rows; r++) out[static_cast<size_t>(r) * N + o] = Dot(w + wstride * o, xa + xstride * r, K);
}

float row_f32(const uint8_t* w, const uint8_t* xa, int K) {
  return dot_f32(reinterpret_cast<const float*>(w), reinterpret_cast<const float*>(xa), K);
}
float row_f16(const uint8_t* w, const uint8_t* xa, int K) { return dot_f16(w, reinterpret_cast<const float*>(xa), K); }
float row_q8_0(const uint8_t* w, const uint8_t* xa, int K) { return dot_q8_0(w, xq8_0_view(xa, K), K); }
float row_q4_0(const uint8_t* w, const uint8_t* xa, int K) { return dot_q4_0(w, xq8_0_view(xa, K), K); }
float row_q4_k(const uint8_t* w, const uint8_t* xa, int K) { return dot_q4_k(w, xq8_k_view(xa, K), K); }
float row_q6_k(const uint8_t* w, const uint8_t* xa, int K) { return dot_q6_k(w, xq8_k_view(xa, K), K); }
template <int kType>
float row_dequantized(const uint8_t* w, const uint8_t* xa, int K) {
  return dot_dequantized(kType, w, xa, K);
}

constexpr DotKernel one(DotFn fn, const char* name) { return {fn, name, name}; }
constexpr const char* kDequantized = "portable:dot_dequantized";

constexpr DotEntry kDots[] = {
    {kF32, one(dot_each<row_f32>, "portable:dot_f32")},
    {kF16, one(dot_each<row_f16>, "portable:dot_f16")},
    {kBF16, one(dot_each<dot_bf16>, "portable:dot_bf16")},
    {kQ8_0, one(dot_each<row_q8_0>, "portable:dot_q8_0")},
    {kQ4_0, one(dot_each<row_q4_0>, "portable:dot_q4_0")},
    {kQ4_K, one(dot_each<row_q4_k>, "portable:dot_q4_k")},
    {kQ6_K, one(dot_each<row_q6_k>, "portable:dot_q6_k")},
    {kQ4_1, one(dot_each<row_dequantized<kQ4_1>>, kDequantized)},
    {kQ5_0, one(dot_each<row_dequantized<kQ5_0>>, kDequantized)},
    {kQ5_1, one(dot_each<row_dequantized<kQ5_1>>, kDequantized)},
    {kIQ4_NL, one(dot_each<row_dequantized<kIQ4_NL>>, kDequantized)},
    {kQ2_K, one(dot_each<row_dequantized<kQ2_K>>, kDequantized)},
    {kQ3_K, one(dot_each<row_dequantized<kQ3_K>>, kDequantized)},
    {kQ5_K, one(dot_each<row_dequantized<kQ5_K>>, kDequantized)},
    {kIQ4_XS, one(dot_each<row_dequantized<kIQ4_XS>>, kDequantized)},
};

}  // namespace

extern const KernelRegistration kPortableDots = {kIsaPortable, kDots, sizeof(kDots) / sizeof(kDots[0]), nullptr, 0};

}  // namespace loom
