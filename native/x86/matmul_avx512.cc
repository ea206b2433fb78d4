// AVX-512 kernels (built with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni
// -mavx512bf16 -mavx2 -mfma -mf16c; matmul.cc calls them only on CPUs that have all of these).
// Few rows: dot kernels (VNNI for the integer types, dpbf16 for BF16). Many rows: the packed
// GEMM of gemm_avx512_pack.h and gemm_avx512.h.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <new>

#include "../matmul.h"
#include "../quant.h"
#include "matmul_x86.h"

namespace loom {
namespace x86 {
namespace {

inline __m256i dpbusd(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_epi32(acc, u8, s8); }

#include "dot_int8.h"
#include "gemm_avx512_pack.h"
#include "gemm_avx512.h"

inline float hsum512(__m512 v) {
  return hsum256(_mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

// ---- float dot kernels: R ≤ 4 activation rows against one weight row, 32 values a step ----

inline __m512 load_f16x16(const uint8_t* p) { return _mm512_cvtph_ps(loadu256(p)); }

// F32 / F16 weights; x rows are f32 values (rounded to f16 for F16 weights).
template <int R, bool kHalf>
void dot_float_rows(const uint8_t* w, const float* const* x, int K, float* res) {
  __m512 acc[2][R];
  LOOM_UNROLL for (int u = 0; u < 2; u++)
    LOOM_UNROLL for (int r = 0; r < R; r++) acc[u][r] = _mm512_setzero_ps();
  auto wload = [&](int i) {
    return kHalf ? load_f16x16(w + 2 * i) : _mm512_loadu_ps(reinterpret_cast<const float*>(w) + i);
  };
  int i = 0;
  for (; i + 32 <= K; i += 32) {
    const __m512 w0 = wload(i), w1 = wload(i + 16);
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      acc[0][r] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x[r] + i), acc[0][r]);
      acc[1][r] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x[r] + i + 16), acc[1][r]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum512(_mm512_add_ps(acc[0][r], acc[1][r]));
  for (; i < K; i++) {
    const float wi = kHalf ? f16_to_f32(load_u16(w + 2 * i)) : reinterpret_cast<const float*>(w)[i];
    LOOM_UNROLL for (int r = 0; r < R; r++) res[r] += wi * x[r][i];
  }
}

// BF16 weights and bf16 x rows: dpbf16 (pairs of exact bf16 products summed in f32).
template <int R>
void dot_bf16_rows(const uint8_t* w, const uint8_t* const* x, int K, float* res) {
  __m512 acc[2][R];
  LOOM_UNROLL for (int u = 0; u < 2; u++)
    LOOM_UNROLL for (int r = 0; r < R; r++) acc[u][r] = _mm512_setzero_ps();
  int i = 0;
  for (; i + 64 <= K; i += 64) {
    const __m512bh w0 = (__m512bh)_mm512_loadu_si512(w + 2 * i), w1 = (__m512bh)_mm512_loadu_si512(w + 2 * i + 64);
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      acc[0][r] = _mm512_dpbf16_ps(acc[0][r], w0, (__m512bh)_mm512_loadu_si512(x[r] + 2 * i));
      acc[1][r] = _mm512_dpbf16_ps(acc[1][r], w1, (__m512bh)_mm512_loadu_si512(x[r] + 2 * i + 64));
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum512(_mm512_add_ps(acc[0][r], acc[1][r]));
  for (; i < K; i++) {
    const float wi = bf16_to_f32(load_u16(w + 2 * i));
    LOOM_UNROLL for (int r = 0; r < R; r++) res[r] += wi * bf16_to_f32(load_u16(x[r] + 2 * i));
  }
}

// ---- one activation row, Q8_0 / Q4_0: two blocks per 512-bit VNNI step ----

// s[i] = f16 d of block b + i (stride `bstride` bytes) · dx[b + i], for i < n ≤ 16 (others 0).
inline __m512 block_scales(const uint8_t* w, int bstride, const float* dx, int b, int n) {
  const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
  const __m512i offs = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(bstride));
  const __m512i raw = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offs, w + bstride * b, 1);
  const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(raw));
  return _mm512_mul_ps(d, _mm512_maskz_loadu_ps(m, dx + b));
}

// lanes 0..7 ← s[2k], lanes 8..15 ← s[2k + 1]
inline __m512 pair_scale(__m512 s, int k) {
  const __m512i idx = _mm512_add_epi32(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                       _mm512_set1_epi32(2 * k));
  return _mm512_permutexvar_ps(idx, s);
}

// 64 s8 weights of blocks b, b+1 (Q8_0) → |w| and x with the sign of w: Σ|w|·(±x) = Σ w·x
inline __m512i q8_0_pair(const uint8_t* blk) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(loadu256(blk + 2)), loadu256(blk + 36), 1);
}

// 64 u8 nibbles (0..15) of Q4_0 blocks b, b+1, each block's 32 values in order
inline __m512i q4_0_pair(const uint8_t* blk) {
  const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(loadu128(blk + 2)), loadu128(blk + 20), 1);
  const __m256i m = _mm256_set1_epi8(15);
  const __m512i lohi = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(v, m)),
                                          _mm256_and_si256(_mm256_srli_epi16(v, 4), m), 1);
  return _mm512_shuffle_i64x2(lohi, lohi, 0xd8);  // [loA, loB, hiA, hiB] → [loA, hiA, loB, hiB]
}

template <bool kQ4>
void dot1_q_0(const uint8_t* w, const XQ8_0* xv, int K, float* res) {
  const XQ8_0& x = xv[0];
  const int nb = K / 32, bstride = kQ4 ? 18 : 34;
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps(), corr = _mm512_setzero_ps();
  for (int b0 = 0; b0 < nb; b0 += 16) {
    const int n = imin(16, nb - b0);
    const __m512 s = block_scales(w, bstride, x.d, b0, n);
    if (kQ4) {  // Σ_b scale_b · 8 · Σx_b, taken off at the end
      const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
      corr = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, x.s + b0)), corr);
    }
    int k = 0;
    for (; 2 * k + 1 < n; k++) {
      const int b = b0 + 2 * k;
      const uint8_t* blk = w + bstride * b;
      const __m512i xq = _mm512_loadu_si512(x.q + 32 * b);
      __m512i p;
      if (kQ4) {
        p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q4_0_pair(blk), xq);
      } else {
        const __m512i q = q8_0_pair(blk);
        const __mmask64 neg = _mm512_movepi8_mask(q);
        const __m512i sx = _mm512_mask_sub_epi8(xq, neg, _mm512_setzero_si512(), xq);
        p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(q), sx);
      }
      if (k & 1) acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), pair_scale(s, k), acc1);
      else acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), pair_scale(s, k), acc0);
    }
    if (2 * k < n) {  // odd last block: 256 bits
      const int b = b0 + 2 * k;
      const uint8_t* blk = w + bstride * b;
      const __m256i xq = loadu256(x.q + 32 * b);
      __m256i p;
      if (kQ4) {
        p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q4_0_unpack(blk + 2), xq);
      } else {
        const __m256i q = loadu256(blk + 2);
        p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(q, q), _mm256_sign_epi8(xq, q));
      }
      const __m512 t = _mm512_castps256_ps512(_mm256_mul_ps(_mm256_cvtepi32_ps(p), _mm512_castps512_ps256(pair_scale(s, k))));
      acc0 = _mm512_add_ps(acc0, _mm512_maskz_mov_ps(0xff, t));
    }
  }
  float r = hsum512(_mm512_add_ps(acc0, acc1));
  if (kQ4) r -= 8.f * hsum512(corr);
  res[0] = r;
}

const float* as_f32(const uint8_t* row, int) { return reinterpret_cast<const float*>(row); }
const uint8_t* as_bytes(const uint8_t* row, int) { return row; }

}  // namespace

void avx512_prepare_row(int type, const float* x, int K, uint8_t* dst) { avx2_prepare_row(type, x, K, dst); }

void avx512_dot(int type, const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K,
                int o0, int o1, float* out, int N) {
  switch (type) {
    case kQ8_0:
      dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, xq8_0_view, dot1_q_0<false>,
                      dot_q8_0_rows<2>, dot_q8_0_rows<3>, dot_q8_0_rows<4>);
      return;
    case kQ4_0:
      dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, xq8_0_view, dot1_q_0<true>,
                      dot_q4_0_rows<2>, dot_q4_0_rows<3>, dot_q4_0_rows<4>);
      return;
    default: break;
  }
  if (dot_int8(type, xa, xstride, rows, w, wstride, K, o0, o1, out, N)) return;
  switch (type) {
    case kF32:
      dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, as_f32, dot_float_rows<1, false>,
                      dot_float_rows<2, false>, dot_float_rows<3, false>, dot_float_rows<4, false>);
      return;
    case kF16:
      dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, as_f32, dot_float_rows<1, true>,
                      dot_float_rows<2, true>, dot_float_rows<3, true>, dot_float_rows<4, true>);
      return;
    case kBF16:
      dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, as_bytes, dot_bf16_rows<1>,
                      dot_bf16_rows<2>, dot_bf16_rows<3>, dot_bf16_rows<4>);
      return;
    default: return;
  }
}

bool avx512_gemm_supports(int type, int K) {
  switch (type) {
    case kF32:
    case kF16:
    case kQ8_0:
    case kQ4_0:
    case kQ4_K:
    case kQ6_K: return true;
    case kBF16: return K % 2 == 0;
    default: return false;
  }
}

size_t avx512_gemm_tile_bytes(int type, int K) { return tile_bytes(type, K); }

void avx512_gemm_pack(int type, const float* x, int rows, int K, int tile, uint8_t* dst_tile) {
  pack_tile(type, x, rows, K, tile, dst_tile);
}

void avx512_gemm(int type, const uint8_t* packed, int r0, int r1, const uint8_t* w, size_t wstride, int K, int o0,
                 int o1, float* out, int N) {
  for (int o = o0; o < o1; o += kPanel)
    gemm_panel(type, packed, r0, r1, w, wstride, K, o, imin(o1, o + kPanel), out, N);
}

}  // namespace x86
}  // namespace loom
#endif
