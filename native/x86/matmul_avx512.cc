// AVX-512 kernels (built with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni
// -mavx512bf16 -mbmi2 -mavx2 -mfma -mf16c; matmul.cc calls them only on CPUs that have all of these).
// Few rows: dot kernels (VNNI for the integer types, dpbf16 for BF16). Many rows: the packed
// GEMM of gemm_avx512_pack.h and gemm_avx512.h. Q4_0 and Q8_0 interleaved by 16 rows: one
// kernel for every row count (dot_r16_avx512.h).
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "../matmul.h"
#include "../r16.h"
#include "../quant.h"
#include "matmul_x86.h"

namespace loom {
namespace x86 {
namespace {

inline __m256i dpbusd(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_epi32(acc, u8, s8); }

#include "dot_int8.h"
#include "dot_int8_avx512.h"
#include "dot_int8_avx512_ext.h"
#include "gemm_avx512_pack.h"
#include "gemm_avx512.h"
#include "dot_r16_avx512.h"

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
    LOOM_PREFETCH(w + (kHalf ? 2 : 4) * i);
    if (!kHalf) LOOM_PREFETCH(w + 4 * i + 64);
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
    LOOM_PREFETCH(w + 2 * i);
    LOOM_PREFETCH(w + 2 * i + 64);
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

const float* as_f32(const uint8_t* row, int) { return reinterpret_cast<const float*>(row); }
const uint8_t* as_bytes(const uint8_t* row, int) { return row; }

}  // namespace

void avx512_prepare_row(int type, const float* x, int K, uint8_t* dst) { avx2_prepare_row(type, x, K, dst); }

void avx512_dot(int type, const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K,
                int o0, int o1, float* out, int N) {
  switch (type) {
#define LOOM_Q0(TYPE, KIND)                                                                                        \
  case TYPE:                                                                                                       \
    if (rows == 1) {                                                                                               \
      one_row_in_stretches(xq8_0_view(xa, K), w, wstride, K, o0, o1, out, dot_q_0_wrows512<4, KIND>,               \
                           dot_q_0_wrows512<1, KIND>);                                                             \
      return;                                                                                                      \
    }                                                                                                              \
    dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, xq8_0_view, dot_q_0_rows512<1, KIND>,        \
                    dot_q_0_rows512<2, KIND>, dot_q_0_rows512<3, KIND>, dot_q_0_rows512<4, KIND>);                 \
    return;
    LOOM_Q0(kQ8_0, Q0::kQ8_0)
    case kQ4_0: dot_quad_driver<Q0::kQ4_0>(xa, xstride, rows, w, wstride, K, o0, o1, out, N); return;
    case kIQ4_NL: dot_quad_driver<Q0::kIQ4_NL>(xa, xstride, rows, w, wstride, K, o0, o1, out, N); return;
    case kQ5_0: dot_quad_driver<Q0::kQ5_0>(xa, xstride, rows, w, wstride, K, o0, o1, out, N); return;
    LOOM_Q0(kQ4_1, Q0::kQ4_1)
    LOOM_Q0(kQ5_1, Q0::kQ5_1)
#undef LOOM_Q0
    case kQ4_0_R16: dot_r16<kQ4_0_R16>(xa, xstride, rows, w, wstride, K, o0, o1, out, N); return;
    case kQ8_0_R16: dot_r16<kQ8_0_R16>(xa, xstride, rows, w, wstride, K, o0, o1, out, N); return;
    case kQ4_K: dot_q45_k<4>(xa, xstride, rows, w, wstride, K, o0, o1, out, N); return;
    case kQ5_K: dot_q45_k<5>(xa, xstride, rows, w, wstride, K, o0, o1, out, N); return;
    case kQ6_K:
      if (rows == 1) {
        one_row_in_stretches(xq8_k_view(xa, K), w, wstride, K, o0, o1, out, dot_q6_k_wrows512<4>, dot_q6_k_wrows512<1>);
        return;
      }
      dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, xq8_k_view, dot_q6_k_rows512<1>,
                      dot_q6_k_rows512<2>, dot_q6_k_rows512<3>, dot_q6_k_rows512<4>);
      return;
    case kQ3_K:
      dot_nw_r<dot_q3_k_512<4, 1>, dot_q3_k_512<1, 1>, dot_q3_k_512<1, 2>, dot_q3_k_512<1, 3>, dot_q3_k_512<1, 4>>(
          xa, xstride, rows, w, wstride, K, o0, o1, out, N);
      return;
    case kIQ4_XS:
      if (rows == 1) {
        one_row_in_stretches(xq8_k_view(xa, K), w, wstride, K, o0, o1, out, dot_iq4_xs_wrows512<4>, dot_iq4_xs_wrows512<1>);
        return;
      }
      break;  // a few rows: the 256-bit kernel (dot_int8)
    case kQ2_K:
      dot_nw_r<dot_q2_k_512<4, 1>, dot_q2_k_512<1, 1>, dot_q2_k_512<1, 2>, dot_q2_k_512<1, 3>, dot_q2_k_512<1, 4>>(
          xa, xstride, rows, w, wstride, K, o0, o1, out, N);
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
    case kQ6_K:
    case kQ5_0:
    case kIQ4_NL:
    case kQ3_K:
    case kQ5_K:
    case kIQ4_XS: return true;  // Q4_1, Q5_1, Q2_K (a min per 16 values): dot kernels
    case kBF16: return K % 2 == 0;
    default: return false;
  }
}

size_t avx512_gemm_tile_bytes(int type, int K) { return tile_bytes(type, K); }

void avx512_gemm_pack(int type, const float* x, int rows, int K, int tile, uint8_t* dst_tile) {
  pack_tile(type, x, rows, K, tile, dst_tile);
}

void avx512_gemm(int type, const uint8_t* packed, int r0, int r1, const uint8_t* w, size_t wstride, int K, int o0,
                 int o1, float* out, int N, PrefetchRange next) {
  for (int o = o0; o < o1; o += kPanel) {
    const int oe = imin(o1, o + kPanel);
    // the next panel of this call, else the caller's next range
    const PrefetchRange ahead = oe < o1 ? PrefetchRange{w + wstride * oe, wstride * static_cast<size_t>(imin(o1, oe + kPanel) - oe)} : next;
    gemm_panel(type, packed, r0, r1, w, wstride, K, o, oe, out, N, ahead);
  }
}

}  // namespace x86
}  // namespace loom
#endif
