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

size_t avx512_gemm_tile_bytes(int type, int K) { return tile_bytes(type, K); }

void avx512_gemm_pack(int type, const float* x, int rows, int K, int tile, uint8_t* dst_tile) {
  pack_tile(type, x, rows, K, tile, dst_tile);
}

// ---- the registrations: one entry function per type over output rows [o0, o1) ----

namespace {

#define LOOM_DOT_ARGS                                                                                              \
  const uint8_t *xa, size_t xstride, int rows, const uint8_t *w, size_t wstride, int K, int o0, int o1, float *out, \
      int N

void dot_f32(LOOM_DOT_ARGS) {
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, as_f32, dot_float_rows<1, false>,
                  dot_float_rows<2, false>, dot_float_rows<3, false>, dot_float_rows<4, false>);
}
void dot_f16(LOOM_DOT_ARGS) {
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, as_f32, dot_float_rows<1, true>,
                  dot_float_rows<2, true>, dot_float_rows<3, true>, dot_float_rows<4, true>);
}
void dot_bf16(LOOM_DOT_ARGS) {
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, as_bytes, dot_bf16_rows<1>, dot_bf16_rows<2>,
                  dot_bf16_rows<3>, dot_bf16_rows<4>);
}

// Q8_0, Q4_1, Q5_1: one activation row four weight rows at a time, else R-row kernels
template <Q0 T>
void dot_q_0(LOOM_DOT_ARGS) {
  if (rows == 1) {
    one_row_in_stretches(xq8_0_view(xa, K), w, wstride, K, o0, o1, out, dot_q_0_wrows512<4, T>, dot_q_0_wrows512<1, T>);
    return;
  }
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, xq8_0_view, dot_q_0_rows512<1, T>,
                  dot_q_0_rows512<2, T>, dot_q_0_rows512<3, T>, dot_q_0_rows512<4, T>);
}

void dot_q6_k(LOOM_DOT_ARGS) {
  if (rows == 1) {
    one_row_in_stretches(xq8_k_view(xa, K), w, wstride, K, o0, o1, out, dot_q6_k_wrows512<4>, dot_q6_k_wrows512<1>);
    return;
  }
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, xq8_k_view, dot_q6_k_rows512<1>,
                  dot_q6_k_rows512<2>, dot_q6_k_rows512<3>, dot_q6_k_rows512<4>);
}

// IQ4_XS: one row four weight rows at a time; a few rows by the 256-bit kernel (dot_int8)
void dot_iq4_xs(LOOM_DOT_ARGS) {
  if (rows == 1) {
    one_row_in_stretches(xq8_k_view(xa, K), w, wstride, K, o0, o1, out, dot_iq4_xs_wrows512<4>, dot_iq4_xs_wrows512<1>);
    return;
  }
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, loom::xq8_k_view, dot_iq4_xs_rows<1>,
                  dot_iq4_xs_rows<2>, dot_iq4_xs_rows<3>, dot_iq4_xs_rows<4>);
}
#undef LOOM_DOT_ARGS

constexpr DotKernel one(DotFn fn, const char* name) { return {fn, name, name}; }

constexpr DotEntry kFloat[] = {
    {kF32, one(dot_f32, "avx512:dot_float_rows<f32>")},
    {kF16, one(dot_f16, "avx512:dot_float_rows<f16>")},
    {kBF16, one(dot_bf16, "avx512:dot_bf16_rows")},
};
constexpr DotEntry kQ0s[] = {
    {kQ8_0, {dot_q_0<Q0::kQ8_0>, "avx512:dot_q_0_wrows512<Q8_0>", "avx512:dot_q_0_rows512<Q8_0>"}},
    {kQ4_1, {dot_q_0<Q0::kQ4_1>, "avx512:dot_q_0_wrows512<Q4_1>", "avx512:dot_q_0_rows512<Q4_1>"}},
    {kQ5_1, {dot_q_0<Q0::kQ5_1>, "avx512:dot_q_0_wrows512<Q5_1>", "avx512:dot_q_0_rows512<Q5_1>"}},
};
constexpr DotEntry kQuads[] = {
    {kQ4_0, {dot_quad_driver<Q0::kQ4_0>, "avx512:dot_q_0_quad_wrows512<Q4_0>", "avx512:dot_q_0_quad_rows512<Q4_0>"}},
    {kIQ4_NL, {dot_quad_driver<Q0::kIQ4_NL>, "avx512:dot_q_0_quad_wrows512<IQ4_NL>", "avx512:dot_q_0_quad_rows512<IQ4_NL>"}},
    {kQ5_0, {dot_quad_driver<Q0::kQ5_0>, "avx512:dot_q_0_quad_wrows512<Q5_0>", "avx512:dot_q_0_quad_rows512<Q5_0>"}},
};
constexpr DotEntry kQ45Ks[] = {
    {kQ4_K, {dot_q45_k<4>, "avx512:dot_q4_k_wrows512<4>", "avx512:dot_q4_k_rows512<4>"}},
    {kQ5_K, {dot_q45_k<5>, "avx512:dot_q4_k_wrows512<5>", "avx512:dot_q4_k_rows512<5>"}},
};
constexpr DotEntry kQ6Ks[] = {
    {kQ6_K, {dot_q6_k, "avx512:dot_q6_k_wrows512", "avx512:dot_q6_k_rows512"}},
};
constexpr DotEntry kQ23Ks[] = {
    {kQ3_K, one(dot_nw_r<dot_q3_k_512<4, 1>, dot_q3_k_512<1, 1>, dot_q3_k_512<1, 2>, dot_q3_k_512<1, 3>, dot_q3_k_512<1, 4>>,
                "avx512:dot_q3_k_512")},
    {kQ2_K, one(dot_nw_r<dot_q2_k_512<4, 1>, dot_q2_k_512<1, 1>, dot_q2_k_512<1, 2>, dot_q2_k_512<1, 3>, dot_q2_k_512<1, 4>>,
                "avx512:dot_q2_k_512")},
};
constexpr DotEntry kIQ4XSs[] = {
    {kIQ4_XS, {dot_iq4_xs, "avx512:dot_iq4_xs_wrows512", "avx512:dot_iq4_xs_rows"}},
};
constexpr DotEntry kR16s[] = {
    {kQ4_0_R16, one(dot_r16<kQ4_0_R16>, "avx512:dot_r16<Q4_0_R16>")},
    {kQ8_0_R16, one(dot_r16<kQ8_0_R16>, "avx512:dot_r16<Q8_0_R16>")},
};

// A type's GEMM: panels of kPanel outputs, each prepared by Prepare for family F's micro-kernels
template <PanelFn Prepare, const GemmFamily& F>
void gemm(const uint8_t* packed, int r0, int r1, const uint8_t* w, size_t wstride, int K, int o0, int o1, float* out,
          int N, GemmPrefetch next, size_t tb) {
  for (int o = o0; o < o1; o += kPanel) {
    const int oe = imin(o1, o + kPanel);
    // the next panel of this call, else the caller's next range
    const GemmPrefetch ahead = oe < o1 ? GemmPrefetch{w + wstride * oe, wstride * static_cast<size_t>(imin(o1, oe + kPanel) - oe)} : next;
    gemm_panel(Prepare, F, tb, packed, r0, r1, w, wstride, K, o, oe, out, N, ahead);
  }
}
template <int kType, PanelFn Prepare, const GemmFamily& F>
void gemm_of(const uint8_t* packed, int r0, int r1, const uint8_t* w, size_t wstride, int K, int o0, int o1, float* out,
             int N, GemmPrefetch next) {
  gemm<Prepare, F>(packed, r0, r1, w, wstride, K, o0, o1, out, N, next, tile_bytes(kType, K));
}

// Rows at which the packed GEMM (16-row tiles) beats the dot kernels: where the dot
// kernels' cost, linear in rows, crosses the GEMM's, which is about flat up to 16 rows (its
// per-panel weight unpacking dominates there). Measured on an AMD EPYC (Zen 4-class AVX-512)
// at 2048 × 2048 and 2048 × 8192, dot / GEMM ms at 8 rows: Q4_K 0.27 / 0.37, Q6_K 0.24 / 0.45,
// Q3_K 0.32 / 0.51, Q5_K 0.33 / 0.36, IQ4_XS 0.49 / 0.53, Q8_0 0.38 / 0.35, Q4_0 0.42 / 0.41.
// After the quad-order dot kernels (2048 × 8192, 2 threads, dot / GEMM ms): Q4_0 at 8 rows
// 1.19–1.31 / 1.46–1.53, at 9 1.43–1.57 / 1.48–1.51, at 10 1.56–1.69 / 1.50; Q5_0 at 9
// 1.66 / 1.73–1.76, at 10 1.77–1.78 / 1.75–1.77. After the Q4_K and Q6_K panels' tables
// were vectorized (µs, dot / GEMM): Q6_K at 9 rows 1111–1115 / 1130–1236, at 10 1195–1201 /
// 1121–1127; Q4_K at 9 1158–1237 / 1058–1173. F16 and BF16: 12. Q4_1, Q5_1, Q2_K (a min per
// 16 values) have no GEMM: their dot kernels run at every row count.
constexpr GemmEntry kGemms[] = {
    {kF32, {gemm_of<kF32, panel_in_place, kFamilyF32>, "f32", 8, 1}},
    {kF16, {gemm_of<kF16, panel_f16, kFamilyF32>, "f32", 12, 1}},
    {kBF16, {gemm_of<kBF16, panel_in_place, kFamilyBF16>, "bf16", 12, 2}},
    {kQ8_0, {gemm_of<kQ8_0, panel_q8_0, kFamilyQ8>, "q8", 7, 1}},
    {kQ4_0, {gemm_of<kQ4_0, panel_s8_32<18, s8_q4_0>, kFamilyQ8>, "q8", 9, 1}},
    {kIQ4_NL, {gemm_of<kIQ4_NL, panel_s8_32<18, s8_iq4_nl>, kFamilyQ8>, "q8", 9, 1}},
    {kQ5_0, {gemm_of<kQ5_0, panel_s8_32<22, s8_q5_0>, kFamilyQ8>, "q8", 10, 1}},
    {kQ4_K, {gemm_of<kQ4_K, panel_kquant<144, Q4KTab, panel_q4_k, &Panel::q4k>, kFamilyQ4K>, "q4k", 9, 1}},
    {kQ5_K, {gemm_of<kQ5_K, panel_kquant<176, Q4KTab, panel_q5_k, &Panel::q4k>, kFamilyQ4K>, "q4k", 9, 1}},
    {kQ6_K, {gemm_of<kQ6_K, panel_kquant<210, Q6KTab, panel_q6_k, &Panel::q6k>, kFamilyQ6K>, "q6k", 10, 1}},
    {kQ3_K, {gemm_of<kQ3_K, panel_kquant<110, Q6KTab, panel_q3_k, &Panel::q6k>, kFamilyQ6K>, "q6k", 12, 1}},
    {kIQ4_XS, {gemm_of<kIQ4_XS, panel_kquant<136, Q6KTab, panel_iq4_xs, &Panel::q6k>, kFamilyQ6K>, "q6k", 9, 1}},
};

template <size_t n>
constexpr int count(const DotEntry (&)[n]) {
  return static_cast<int>(n);
}

}  // namespace

extern const KernelRegistration kAvx512DotFloat = {kIsaAvx512, kFloat, count(kFloat), nullptr, 0};
extern const KernelRegistration kAvx512DotQ0 = {kIsaAvx512, kQ0s, count(kQ0s), nullptr, 0};
extern const KernelRegistration kAvx512DotQuad = {kIsaAvx512, kQuads, count(kQuads), nullptr, 0};
extern const KernelRegistration kAvx512DotQ45K = {kIsaAvx512, kQ45Ks, count(kQ45Ks), nullptr, 0};
extern const KernelRegistration kAvx512DotQ6K = {kIsaAvx512, kQ6Ks, count(kQ6Ks), nullptr, 0};
extern const KernelRegistration kAvx512DotQ23K = {kIsaAvx512, kQ23Ks, count(kQ23Ks), nullptr, 0};
extern const KernelRegistration kAvx512DotIQ4XS = {kIsaAvx512, kIQ4XSs, count(kIQ4XSs), nullptr, 0};
extern const KernelRegistration kAvx512DotR16 = {kIsaAvx512, kR16s, count(kR16s), nullptr, 0};
extern const KernelRegistration kAvx512Gemm = {kIsaAvx512, nullptr, 0, kGemms, sizeof(kGemms) / sizeof(kGemms[0])};

}  // namespace x86
}  // namespace loom
#endif
