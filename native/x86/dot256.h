// 256-bit integer dot kernels for a few activation rows, shared by the AVX2 kernels
// (x86/avx2/dot_int8.cc) and the AVX-512 ones that have no 512-bit kernel of their own for a
// few rows (IQ4_XS): every kernel reads one weight row once for R ≤ 4 prepared activation
// rows, integer sums exact, only the per-block scaling and the final sums f32. Types: Q8_0,
// Q4_0, Q4_K, Q6_K, Q4_1, Q5_0, Q5_1, IQ4_NL (Q8_0 activation rows) and Q2_K, Q3_K, Q5_K,
// IQ4_XS (Q8_K rows); dot_rows_driver runs R-row kernels over activation and output rows.
//
// Everything here has internal linkage (an anonymous namespace): each translation unit that
// includes it has its own copy built for its own instruction set, which the linker never
// merges with another's. dpbusd is VNNI's where the unit is built with it, else maddubs+madd.
#pragma once
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "../quant.h"
#include "matmul_x86.h"

namespace loom {
namespace x86 {
namespace {

// acc + Σ of 4 u8·s8 products per int32 lane. Without VNNI: maddubs pairs, then madd pairs;
// the int16 pair sums cannot saturate: one factor is ≤ 127 in magnitude (|w|, or a ≤ 6-bit q).
#ifdef __AVX512VNNI__
inline __m256i dpbusd(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_epi32(acc, u8, s8); }
#else
inline __m256i dpbusd(__m256i acc, __m256i u8, __m256i s8) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
}
#endif

inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int32_t hsum256_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

inline __m256i loadu256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i loadu128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
inline float f16_scalar(const uint8_t* p) { return _cvtsh_ss(loom::load_u16(p)); }

// u8 nibbles of 16 bytes: low nibbles in bytes 0..15, high nibbles in 16..31 (Q4_0 order).
inline __m256i q4_0_unpack(const uint8_t* qs) {
  const __m128i b = loadu128(qs);
  const __m128i m = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

// ---- Q8_0 · Q8_0: Σ_b dw·dx·Σ qw·qx; sign trick: |qw| (u8) · sign(qx, qw) (s8) ----
template <int R>
void dot_q8_0_rows(const uint8_t* w, const loom::XQ8_0* x, int K, float* res) {
  __m256 acc[2][R];
  LOOM_UNROLL for (int u = 0; u < 2; u++)
    LOOM_UNROLL for (int r = 0; r < R; r++) acc[u][r] = _mm256_setzero_ps();
  const int nb = K / 32;
  for (int b = 0; b < nb; b++) {
    const uint8_t* blk = w + 34 * b;
    LOOM_PREFETCH(blk);
    const __m256i qw = loadu256(blk + 2);
    const __m256i aw = _mm256_sign_epi8(qw, qw);
    const float dw = f16_scalar(blk);
    const int u = b & 1;
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m256i sx = _mm256_sign_epi8(loadu256(x[r].q + 32 * b), qw);
      const __m256 p = _mm256_cvtepi32_ps(dpbusd(_mm256_setzero_si256(), aw, sx));
      acc[u][r] = _mm256_fmadd_ps(p, _mm256_set1_ps(dw * x[r].d[b]), acc[u][r]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(_mm256_add_ps(acc[0][r], acc[1][r]));
}

// ---- Q4_0 · Q8_0: q in 0..15 is already u8; Σ (q−8)·x = Σ q·x − 8·Σx ----
template <int R>
void dot_q4_0_rows(const uint8_t* w, const loom::XQ8_0* x, int K, float* res) {
  __m256 acc[2][R];
  LOOM_UNROLL for (int u = 0; u < 2; u++)
    LOOM_UNROLL for (int r = 0; r < R; r++) acc[u][r] = _mm256_setzero_ps();
  const int nb = K / 32;
  for (int b = 0; b < nb; b++) {
    const uint8_t* blk = w + 18 * b;
    if ((b & 1) == 0) LOOM_PREFETCH(blk);  // 36 bytes a pair of blocks
    const __m256i q = q4_0_unpack(blk + 2);
    const float dw = f16_scalar(blk);
    const int u = b & 1;
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m256i init = _mm256_castsi128_si256(_mm_cvtsi32_si128(-8 * x[r].s[b]));
      const __m256 p = _mm256_cvtepi32_ps(dpbusd(init, q, loadu256(x[r].q + 32 * b)));
      acc[u][r] = _mm256_fmadd_ps(p, _mm256_set1_ps(dw * x[r].d[b]), acc[u][r]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(_mm256_add_ps(acc[0][r], acc[1][r]));
}

// Q4_K scales/mins of one block as bytes: out[0..7] = scales, out[8..15] = mins.
inline void q4_k_scales(const uint8_t* s, uint8_t out[16]) {
  uint32_t u[4];
  std::memcpy(u, s, 12);
  const uint32_t m1 = 0x3f3f3f3f, m2 = 0x0f0f0f0f, m3 = 0x03030303;
  u[3] = ((u[2] >> 4) & m2) | (((u[1] >> 6) & m3) << 4);  // mins 4..7
  const uint32_t mins_lo = u[1] & m1;                      // mins 0..3
  u[1] = (u[2] & m2) | (((u[0] >> 6) & m3) << 4);          // scales 4..7
  u[2] = mins_lo;
  u[0] &= m1;                                              // scales 0..3
  std::memcpy(out, u, 16);
}

// maddubs(u8 q, s8 x) pairs → int16, then madd with an int16 scale: Σ over 32 values of
// sc·q·x in 8 int32 lanes. |pair| ≤ 2·63·128 fits int16 for 4- and 6-bit q.
inline __m256i scaled_dot(__m256i q, __m256i x, __m256i scale16) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(q, x), scale16);
}

// ---- Q4_K · Q8_K: dx·(d·Σ_j sc_j·Σ q·x − dmin·Σ_j m_j·Σx) ----
template <int R>
void dot_q4_k_rows(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m256 acc[R];
  float mins_acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    acc[r] = _mm256_setzero_ps();
    mins_acc[r] = 0;
  }
  const __m256i m4 = _mm256_set1_epi8(15);
  for (int b = 0; b < K / 256; b++) {
    const uint8_t* blk = w + 144 * b;
    LOOM_PREFETCH(blk);
    LOOM_PREFETCH(blk + 64);
    LOOM_PREFETCH(blk + 128);
    uint8_t sm[16];
    q4_k_scales(blk + 4, sm);
    const float d = f16_scalar(blk), dmin = f16_scalar(blk + 2);
    const __m128i mins16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 8)));
    __m256i isum[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) isum[r] = _mm256_setzero_si256();
    LOOM_UNROLL for (int c = 0; c < 4; c++) {
      const __m256i qs = loadu256(blk + 16 + 32 * c);
      const __m256i lo = _mm256_and_si256(qs, m4), hi = _mm256_and_si256(_mm256_srli_epi16(qs, 4), m4);
      const __m256i s_lo = _mm256_set1_epi16(sm[2 * c]), s_hi = _mm256_set1_epi16(sm[2 * c + 1]);
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        const int8_t* q8 = x[r].q + 256 * b + 64 * c;
        isum[r] = _mm256_add_epi32(isum[r], scaled_dot(lo, loadu256(q8), s_lo));
        isum[r] = _mm256_add_epi32(isum[r], scaled_dot(hi, loadu256(q8 + 32), s_hi));
      }
    }
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const float dx = x[r].d[b];
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_set1_ps(d * dx), acc[r]);
      const __m128i s32 = loadu128(x[r].s32 + 8 * b);
      const __m128i mm = _mm_madd_epi16(mins16, s32);
      const __m128i t = _mm_add_epi32(mm, _mm_shuffle_epi32(mm, 0x4e));
      const int32_t msum = _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1)));
      mins_acc[r] += dmin * dx * static_cast<float>(msum);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(acc[r]) - mins_acc[r];
}

// Q6_K half h (values 128h .. 128h+127) as four vectors of 32 u8 values 0..63, in order.
inline void q6_k_unpack_half(const uint8_t* blk, int h, __m256i q[4]) {
  const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
  const __m256i ql0 = loadu256(blk + 64 * h), ql1 = loadu256(blk + 64 * h + 32);
  const __m256i qh = loadu256(blk + 128 + 32 * h);
  q[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
  q[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
  q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m30));
  q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
}

// ---- Q6_K · Q8_K: d·dx·Σ_j sc_j·(Σ q·x − 32·Σx) over sub-blocks of 16, q in 0..63 ----
template <int R>
void dot_q6_k_rows(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m256 acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
  for (int b = 0; b < K / 256; b++) {
    const uint8_t* blk = w + 210 * b;
    LOOM_PREFETCH(blk);
    LOOM_PREFETCH(blk + 64);
    LOOM_PREFETCH(blk + 128);
    LOOM_PREFETCH(blk + 192);
    const float d = f16_scalar(blk + 208);
    const __m128i sc8 = loadu128(blk + 192);
    const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);  // 16 scales as int16
    __m256i isum[R], corr[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      isum[r] = _mm256_setzero_si256();
      corr[r] = _mm256_madd_epi16(sc16, loadu256(x[r].s16 + 16 * b));  // Σ sc_j·Σx_j
    }
    for (int h = 0; h < 2; h++) {
      __m256i q[4];
      q6_k_unpack_half(blk, h, q);
      LOOM_UNROLL for (int k = 0; k < 4; k++) {
        const int j = 8 * h + 2 * k;  // sub-blocks j, j+1 of this 32-value vector
        const int8_t* scs = reinterpret_cast<const int8_t*>(blk + 192);
        const __m256i scale = _mm256_set_m128i(_mm_set1_epi16(scs[j + 1]), _mm_set1_epi16(scs[j]));
        LOOM_UNROLL for (int r = 0; r < R; r++) {
          const int8_t* q8 = x[r].q + 256 * b + 128 * h + 32 * k;
          isum[r] = _mm256_add_epi32(isum[r], scaled_dot(q[k], loadu256(q8), scale));
        }
      }
    }
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m256i t = _mm256_sub_epi32(isum[r], _mm256_slli_epi32(corr[r], 5));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), _mm256_set1_ps(d * x[r].d[b]), acc[r]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(acc[r]);
}

// byte i = 0xFF where bit i of the 32 bits at p is set, else 0
inline __m256i bits_to_bytes32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(v)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
  return _mm256_cmpeq_epi8(_mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)), _mm256_set1_epi64x(-1));
}

// the 16 IQ4_NL levels, in both 128-bit lanes (for a byte shuffle)
inline __m256i iq4nl_table() {
  return _mm256_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113, -127, -104, -83, -65,
                          -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
}

// Σ of 4 s8·s8 products per int32 lane (|w| ≤ 127; x never −128 from a finite row)
inline __m256i dot_s8(__m256i w, __m256i x) {
  return dpbusd(_mm256_setzero_si256(), _mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

// ---- blocks of 32 with Q8_0 rows ----
// Kind: the u8 (or s8) values of one block in order, its d, and what the dot adds:
//   Q5_0: u = q (0..31), Σ (q−16)·x = dpbusd(u, x) − 16·Σx
//   Q4_1 / Q5_1: u = q, value d·q + m = d·(q − c) + (m + c·d), c = 8 / 16:
//                d·dx·(Σ q·x − c·Σx) + (m + c·d)·dx·Σx
//   IQ4_NL: s8 levels, sign trick
enum class Q32 { kQ4_1, kQ5_0, kQ5_1, kIQ4_NL };

template <Q32 T>
constexpr int q32_bytes() {
  return T == Q32::kQ4_1 ? 20 : T == Q32::kQ5_0 ? 22 : T == Q32::kQ5_1 ? 24 : 18;
}

template <int R, Q32 T>
void dot_q32_rows(const uint8_t* w, const loom::XQ8_0* x, int K, float* res) {
  constexpr int kB = q32_bytes<T>();
  // q taken as q − centre, plus (m + centre·d) for Q4_1/Q5_1: centred sums lose no digits to cancellation
  constexpr int kCentre = T == Q32::kQ4_1 ? 8 : 16;
  __m256 acc[2][R];
  float bias[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    acc[0][r] = acc[1][r] = _mm256_setzero_ps();
    bias[r] = 0;
  }
  const __m256i table = iq4nl_table(), m16 = _mm256_set1_epi8(16);
  const int nb = K / 32;
  for (int b = 0; b < nb; b++) {
    const uint8_t* blk = w + kB * b;
    if ((b & 1) == 0) LOOM_PREFETCH(blk);
    const float dw = f16_scalar(blk);
    __m256i q;
    if (T == Q32::kQ4_1) q = q4_0_unpack(blk + 4);
    if (T == Q32::kQ5_0) q = _mm256_or_si256(q4_0_unpack(blk + 6), _mm256_and_si256(bits_to_bytes32(blk + 2), m16));
    if (T == Q32::kQ5_1) q = _mm256_or_si256(q4_0_unpack(blk + 8), _mm256_and_si256(bits_to_bytes32(blk + 4), m16));
    if (T == Q32::kIQ4_NL) q = _mm256_shuffle_epi8(table, q4_0_unpack(blk + 2));
    const int u = b & 1;
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m256i xv = loadu256(x[r].q + 32 * b);
      __m256i p;
      if (T == Q32::kIQ4_NL) p = dot_s8(q, xv);
      else p = dpbusd(_mm256_castsi128_si256(_mm_cvtsi32_si128(-kCentre * x[r].s[b])), q, xv);
      acc[u][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * x[r].d[b]), acc[u][r]);
      if (T == Q32::kQ4_1 || T == Q32::kQ5_1) bias[r] += (f16_scalar(blk + 2) + kCentre * dw) * x[r].d[b] * static_cast<float>(x[r].s[b]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(_mm256_add_ps(acc[0][r], acc[1][r])) + bias[r];
}

// ---- super-blocks of 256 with Q8_K rows ----

// int16 lanes 0..7 ← a, lanes 8..15 ← b
inline __m256i scale_pair16(int a, int b) { return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(b)), _mm_set1_epi16(static_cast<short>(a))); }

// Q2_K: dx·(d·Σ_j sc_j·Σ q·x − dmin·Σ_j m_j·Σx_j), sub-blocks of 16, q in 0..3
template <int R>
void dot_q2_k_rows(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m256 acc[R];
  float mins_acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    acc[r] = _mm256_setzero_ps();
    mins_acc[r] = 0;
  }
  const __m256i m3 = _mm256_set1_epi8(3);
  for (int b = 0; b < K / 256; b++) {
    const uint8_t* blk = w + 84 * b;
    LOOM_PREFETCH(blk);
    LOOM_PREFETCH(blk + 64);
    const __m128i sm = loadu128(blk);
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), _mm_set1_epi8(15)));
    const float d = f16_scalar(blk + 80), dmin = f16_scalar(blk + 82);
    __m256i isum[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) isum[r] = _mm256_setzero_si256();
    LOOM_UNROLL for (int n = 0; n < 2; n++) {
      const __m256i qs = loadu256(blk + 16 + 32 * n);
      LOOM_UNROLL for (int j = 0; j < 4; j++) {
        const int sb = 8 * n + 2 * j;
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), m3);
        const __m256i sc = scale_pair16(blk[sb] & 15, blk[sb + 1] & 15);
        LOOM_UNROLL for (int r = 0; r < R; r++)
          isum[r] = _mm256_add_epi32(isum[r], scaled_dot(q, loadu256(x[r].q + 256 * b + 16 * sb), sc));
      }
    }
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_set1_ps(d * x[r].d[b]), acc[r]);
      const int32_t msum = hsum256_epi32(_mm256_madd_epi16(mins16, loadu256(x[r].s16 + 16 * b)));
      mins_acc[r] += dmin * x[r].d[b] * static_cast<float>(msum);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(acc[r]) - mins_acc[r];
}

// Q3_K's 16 six-bit scales minus 32, as int16 (ggml's kmask unpacking)
inline void q3_k_scales(const uint8_t* s, int16_t out[16]) {
  uint32_t a[3], u[4];
  std::memcpy(a, s, 12);
  const uint32_t k1 = 0x03030303, k2 = 0x0f0f0f0f;
  u[0] = (a[0] & k2) | ((a[2] & k1) << 4);
  u[1] = (a[1] & k2) | (((a[2] >> 2) & k1) << 4);
  u[2] = ((a[0] >> 4) & k2) | (((a[2] >> 4) & k1) << 4);
  u[3] = ((a[1] >> 4) & k2) | (((a[2] >> 6) & k1) << 4);
  uint8_t b[16];
  std::memcpy(b, u, 16);
  for (int i = 0; i < 16; i++) out[i] = static_cast<int16_t>(b[i] - 32);
}

// Q3_K: d·dx·Σ_j sc_j·(Σ q·x − 4·Σx_j), q = 2 low bits | hmask bit << 2 (0..7, the weight q − 4)
template <int R>
void dot_q3_k_rows(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m256 acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
  const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(4);
  for (int b = 0; b < K / 256; b++) {
    const uint8_t* blk = w + 110 * b;
    LOOM_PREFETCH(blk);
    LOOM_PREFETCH(blk + 64);
    alignas(32) int16_t sc[16];
    q3_k_scales(blk + 96, sc);
    const __m256i sc16 = _mm256_load_si256(reinterpret_cast<const __m256i*>(sc));
    const float d = f16_scalar(blk + 108);
    const __m256i hm = loadu256(blk);
    __m256i isum[R], corr[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      isum[r] = _mm256_setzero_si256();
      corr[r] = _mm256_madd_epi16(sc16, loadu256(x[r].s16 + 16 * b));
    }
    LOOM_UNROLL for (int n = 0; n < 2; n++) {
      const __m256i qs = loadu256(blk + 32 + 32 * n);
      LOOM_UNROLL for (int j = 0; j < 4; j++) {
        const int sb = 8 * n + 2 * j;
        const __m256i hi = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hm, 4 * n + j), 2), m4);
        const __m256i q = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), m3), hi);
        const __m256i s = scale_pair16(sc[sb], sc[sb + 1]);
        LOOM_UNROLL for (int r = 0; r < R; r++)
          isum[r] = _mm256_add_epi32(isum[r], scaled_dot(q, loadu256(x[r].q + 256 * b + 16 * sb), s));
      }
    }
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m256i t = _mm256_sub_epi32(isum[r], _mm256_slli_epi32(corr[r], 2));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), _mm256_set1_ps(d * x[r].d[b]), acc[r]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(acc[r]);
}

// Q5_K: as Q4_K, q += 16 where bit 2c (low nibbles) / 2c+1 (high) of qh[l] is set
template <int R>
void dot_q5_k_rows(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m256 acc[R];
  float mins_acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    acc[r] = _mm256_setzero_ps();
    mins_acc[r] = 0;
  }
  const __m256i m4 = _mm256_set1_epi8(15), m16 = _mm256_set1_epi8(16);
  for (int b = 0; b < K / 256; b++) {
    const uint8_t* blk = w + 176 * b;
    LOOM_PREFETCH(blk);
    LOOM_PREFETCH(blk + 64);
    LOOM_PREFETCH(blk + 128);
    uint8_t sm[16];
    q4_k_scales(blk + 4, sm);
    const float d = f16_scalar(blk), dmin = f16_scalar(blk + 2);
    const __m128i mins16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 8)));
    const __m256i qh = loadu256(blk + 16);
    __m256i isum[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) isum[r] = _mm256_setzero_si256();
    LOOM_UNROLL for (int c = 0; c < 4; c++) {
      const __m256i qs = loadu256(blk + 48 + 32 * c);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(qs, m4), _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c), 4), m16));
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 4), m4),
                                         _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c + 1), 4), m16));
      const __m256i s_lo = _mm256_set1_epi16(sm[2 * c]), s_hi = _mm256_set1_epi16(sm[2 * c + 1]);
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        const int8_t* q8 = x[r].q + 256 * b + 64 * c;
        isum[r] = _mm256_add_epi32(isum[r], scaled_dot(lo, loadu256(q8), s_lo));
        isum[r] = _mm256_add_epi32(isum[r], scaled_dot(hi, loadu256(q8 + 32), s_hi));
      }
    }
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const float dx = x[r].d[b];
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_set1_ps(d * dx), acc[r]);
      const __m128i mm = _mm_madd_epi16(mins16, loadu128(x[r].s32 + 8 * b));
      const __m128i t = _mm_add_epi32(mm, _mm_shuffle_epi32(mm, 0x4e));
      mins_acc[r] += dmin * dx * static_cast<float>(_mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1))));
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(acc[r]) - mins_acc[r];
}

// IQ4_XS: d·dx·Σ_j (ls_j − 32)·Σ level·x over sub-blocks of 32
template <int R>
void dot_iq4_xs_rows(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m256 acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
  const __m256i table = iq4nl_table();
  for (int b = 0; b < K / 256; b++) {
    const uint8_t* blk = w + 136 * b;
    LOOM_PREFETCH(blk);
    LOOM_PREFETCH(blk + 64);
    LOOM_PREFETCH(blk + 128);
    const float d = f16_scalar(blk);
    const int h = blk[2] | (blk[3] << 8);
    __m256i isum[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) isum[r] = _mm256_setzero_si256();
    LOOM_UNROLL for (int j = 0; j < 8; j++) {
      const int ls = (((blk[4 + (j >> 1)] >> (4 * (j & 1))) & 15) | (((h >> (2 * j)) & 3) << 4)) - 32;
      const __m256i v = _mm256_shuffle_epi8(table, q4_0_unpack(blk + 8 + 16 * j));
      const __m256i av = _mm256_sign_epi8(v, v);
      const __m256i s = _mm256_set1_epi16(static_cast<short>(ls));
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        const __m256i sx = _mm256_sign_epi8(loadu256(x[r].q + 256 * b + 32 * j), v);
        isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(_mm256_maddubs_epi16(av, sx), s));
      }
    }
    LOOM_UNROLL for (int r = 0; r < R; r++)
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_set1_ps(d * x[r].d[b]), acc[r]);
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(acc[r]);
}

// out[r·N + o] for r in [0, rows), o in [o0, o1), over activation rows in groups of ≤ 4.
// Rows are taken 16 at a time (they stay in L1) while the weight rows stream past.
template <typename View, typename Kernel1, typename Kernel2, typename Kernel3, typename Kernel4>
void dot_rows_driver(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0,
                     int o1, float* out, int N, View (*view)(const uint8_t*, int), Kernel1 k1, Kernel2 k2,
                     Kernel3 k3, Kernel4 k4) {
  for (int rb = 0; rb < rows; rb += 16) {
    const int re = rows < rb + 16 ? rows : rb + 16;
    for (int o = o0; o < o1; o++) {
      const uint8_t* wr = w + wstride * static_cast<size_t>(o);
      for (int r = rb; r < re; r += 4) {
        const int n = re - r < 4 ? re - r : 4;
        View xv[4];
        for (int i = 0; i < n; i++) xv[i] = view(xa + xstride * static_cast<size_t>(r + i), K);
        float res[4];
        switch (n) {
          case 1: k1(wr, xv, K, res); break;
          case 2: k2(wr, xv, K, res); break;
          case 3: k3(wr, xv, K, res); break;
          default: k4(wr, xv, K, res); break;
        }
        for (int i = 0; i < n; i++) out[static_cast<size_t>(r + i) * N + o] = res[i];
      }
    }
  }
}

}  // namespace
}  // namespace x86
}  // namespace loom
#endif
