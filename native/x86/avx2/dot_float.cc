// AVX2 + FMA + F16C dot kernels for F32, F16 and BF16: R ≤ 4 activation rows against one
// weight row, 16 values a step.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../half.h"
#include "../../quant.h"
#include "../../weight-types.h"
#include "../dot256.h"
#include "../matmul_x86.h"

namespace loom {
namespace x86 {
namespace {

// ---- float dot kernels: R ≤ 4 activation rows against one weight row ----

inline __m256 load_f16x8(const uint8_t* p) { return _mm256_cvtph_ps(loadu128(p)); }
inline __m256 load_bf16x8(const uint8_t* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(loadu128(p)), 16));
}

// F32 / F16: x rows are f32 values; the weight row is f32 or f16.
template <int R, bool kHalf>
void dot_float_rows(const uint8_t* w, const float* const* x, int K, float* res) {
  __m256 acc[2][R];
  LOOM_UNROLL for (int u = 0; u < 2; u++)
    LOOM_UNROLL for (int r = 0; r < R; r++) acc[u][r] = _mm256_setzero_ps();
  auto wload = [&](int i) {
    return kHalf ? load_f16x8(w + 2 * i) : _mm256_loadu_ps(reinterpret_cast<const float*>(w) + i);
  };
  int i = 0;
  for (; i + 16 <= K; i += 16) {
    if (!kHalf || (i & 31) == 0) LOOM_PREFETCH(w + (kHalf ? 2 : 4) * i);  // a line per 64 bytes
    const __m256 w0 = wload(i), w1 = wload(i + 8);
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      acc[0][r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[r] + i), acc[0][r]);
      acc[1][r] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x[r] + i + 8), acc[1][r]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(_mm256_add_ps(acc[0][r], acc[1][r]));
  for (; i < K; i++) {
    const float wi = kHalf ? f16_to_f32(load_u16(w + 2 * i)) : reinterpret_cast<const float*>(w)[i];
    LOOM_UNROLL for (int r = 0; r < R; r++) res[r] += wi * x[r][i];
  }
}

// BF16: x rows are bf16 bit patterns; products of two bf16 values are exact in f32.
template <int R>
void dot_bf16_rows(const uint8_t* w, const uint8_t* const* x, int K, float* res) {
  __m256 acc[2][R];
  LOOM_UNROLL for (int u = 0; u < 2; u++)
    LOOM_UNROLL for (int r = 0; r < R; r++) acc[u][r] = _mm256_setzero_ps();
  int i = 0;
  for (; i + 16 <= K; i += 16) {
    if ((i & 31) == 0) LOOM_PREFETCH(w + 2 * i);
    const __m256 w0 = load_bf16x8(w + 2 * i), w1 = load_bf16x8(w + 2 * i + 16);
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      acc[0][r] = _mm256_fmadd_ps(w0, load_bf16x8(x[r] + 2 * i), acc[0][r]);
      acc[1][r] = _mm256_fmadd_ps(w1, load_bf16x8(x[r] + 2 * i + 16), acc[1][r]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(_mm256_add_ps(acc[0][r], acc[1][r]));
  for (; i < K; i++) {
    const float wi = bf16_to_f32(load_u16(w + 2 * i));
    LOOM_UNROLL for (int r = 0; r < R; r++) res[r] += wi * bf16_to_f32(load_u16(x[r] + 2 * i));
  }
}

const float* as_f32(const uint8_t* row, int) { return reinterpret_cast<const float*>(row); }
const uint8_t* as_bytes(const uint8_t* row, int) { return row; }

// dot_rows_driver over R-row kernels KERNEL<1..4> reading prepared rows through VIEW
#define LOOM_ROWS_ENTRY(NAME, VIEW, KERNEL)                                                                         \
  void NAME(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0, int o1, \
            float* out, int N) {                                                                                   \
    dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, VIEW, KERNEL<1>, KERNEL<2>, KERNEL<3>,        \
                    KERNEL<4>);                                                                                     \
  }
template <int R>
void f32_rows(const uint8_t* w, const float* const* x, int K, float* res) { dot_float_rows<R, false>(w, x, K, res); }
template <int R>
void f16_rows(const uint8_t* w, const float* const* x, int K, float* res) { dot_float_rows<R, true>(w, x, K, res); }
LOOM_ROWS_ENTRY(dot_f32, as_f32, f32_rows)
LOOM_ROWS_ENTRY(dot_f16, as_f32, f16_rows)
LOOM_ROWS_ENTRY(dot_bf16, as_bytes, dot_bf16_rows)
#undef LOOM_ROWS_ENTRY

constexpr DotKernel one(DotFn fn, const char* name) { return {fn, name, name}; }

constexpr DotEntry kFloat[] = {
    {kF32, one(dot_f32, "avx2:dot_float_rows<f32>")},
    {kF16, one(dot_f16, "avx2:dot_float_rows<f16>")},
    {kBF16, one(dot_bf16, "avx2:dot_bf16_rows")},
};

}  // namespace

extern const KernelRegistration kAvx2DotFloat = {kIsaAvx2, kFloat, 3, nullptr, 0};

}  // namespace x86
}  // namespace loom
#endif
