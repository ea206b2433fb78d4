// AVX-512 dot kernels for F32, F16 (FMA) and BF16 (dpbf16): R ≤ 4 activation rows against
// one weight row, 32 values a step (64 for BF16).
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../quant.h"
#include "../../weight-types.h"
#include "../dot256.h"
#include "../matmul_x86.h"
#include "common.h"

namespace loom {
namespace x86 {
namespace {

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
#undef LOOM_DOT_ARGS

template <size_t n>
constexpr int count(const DotEntry (&)[n]) {
  return static_cast<int>(n);
}
constexpr DotKernel one(DotFn fn, const char* name) { return {fn, name, name}; }

constexpr DotEntry kDots[] = {
    {kF32, one(dot_f32, "avx512:dot_float_rows<f32>")},
    {kF16, one(dot_f16, "avx512:dot_float_rows<f16>")},
    {kBF16, one(dot_bf16, "avx512:dot_bf16_rows")},
};

}  // namespace

extern const KernelRegistration kAvx512DotFloat = {kIsaAvx512, kDots, count(kDots), nullptr, 0};

}  // namespace x86
}  // namespace loom
#endif
