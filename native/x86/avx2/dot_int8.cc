// AVX2 dot kernels for the integer types (the 256-bit kernels of ../dot256.h with
// maddubs+madd for dpbusd): every row count R ≤ 4 activation rows at a time.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../quant.h"
#include "../../weight-types.h"
#include "../dot256.h"
#include "../matmul_x86.h"

namespace loom {
namespace x86 {
namespace {

// dot_rows_driver over R-row kernels KERNEL<1..4> reading prepared rows through VIEW
#define LOOM_ROWS_ENTRY(NAME, VIEW, KERNEL)                                                                         \
  void NAME(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0, int o1, \
            float* out, int N) {                                                                                   \
    dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, VIEW, KERNEL<1>, KERNEL<2>, KERNEL<3>,        \
                    KERNEL<4>);                                                                                     \
  }
template <int R>
void q4_1_rows(const uint8_t* w, const loom::XQ8_0* x, int K, float* res) { dot_q32_rows<R, Q32::kQ4_1>(w, x, K, res); }
template <int R>
void q5_0_rows(const uint8_t* w, const loom::XQ8_0* x, int K, float* res) { dot_q32_rows<R, Q32::kQ5_0>(w, x, K, res); }
template <int R>
void q5_1_rows(const uint8_t* w, const loom::XQ8_0* x, int K, float* res) { dot_q32_rows<R, Q32::kQ5_1>(w, x, K, res); }
template <int R>
void iq4_nl_rows(const uint8_t* w, const loom::XQ8_0* x, int K, float* res) { dot_q32_rows<R, Q32::kIQ4_NL>(w, x, K, res); }

LOOM_ROWS_ENTRY(dot_q8_0, loom::xq8_0_view, dot_q8_0_rows)
LOOM_ROWS_ENTRY(dot_q4_0, loom::xq8_0_view, dot_q4_0_rows)
LOOM_ROWS_ENTRY(dot_q4_1, loom::xq8_0_view, q4_1_rows)
LOOM_ROWS_ENTRY(dot_q5_0, loom::xq8_0_view, q5_0_rows)
LOOM_ROWS_ENTRY(dot_q5_1, loom::xq8_0_view, q5_1_rows)
LOOM_ROWS_ENTRY(dot_iq4_nl, loom::xq8_0_view, iq4_nl_rows)
LOOM_ROWS_ENTRY(dot_q4_k, loom::xq8_k_view, dot_q4_k_rows)
LOOM_ROWS_ENTRY(dot_q6_k, loom::xq8_k_view, dot_q6_k_rows)
LOOM_ROWS_ENTRY(dot_q2_k, loom::xq8_k_view, dot_q2_k_rows)
LOOM_ROWS_ENTRY(dot_q3_k, loom::xq8_k_view, dot_q3_k_rows)
LOOM_ROWS_ENTRY(dot_q5_k, loom::xq8_k_view, dot_q5_k_rows)
LOOM_ROWS_ENTRY(dot_iq4_xs, loom::xq8_k_view, dot_iq4_xs_rows)
#undef LOOM_ROWS_ENTRY

constexpr DotKernel one(DotFn fn, const char* name) { return {fn, name, name}; }

constexpr DotEntry kInt8[] = {
    {kQ8_0, one(dot_q8_0, "avx2:dot_q8_0_rows")},
    {kQ4_0, one(dot_q4_0, "avx2:dot_q4_0_rows")},
    {kQ4_1, one(dot_q4_1, "avx2:dot_q32_rows<Q4_1>")},
    {kQ5_0, one(dot_q5_0, "avx2:dot_q32_rows<Q5_0>")},
    {kQ5_1, one(dot_q5_1, "avx2:dot_q32_rows<Q5_1>")},
    {kIQ4_NL, one(dot_iq4_nl, "avx2:dot_q32_rows<IQ4_NL>")},
    {kQ2_K, one(dot_q2_k, "avx2:dot_q2_k_rows")},
    {kQ3_K, one(dot_q3_k, "avx2:dot_q3_k_rows")},
    {kQ4_K, one(dot_q4_k, "avx2:dot_q4_k_rows")},
    {kQ5_K, one(dot_q5_k, "avx2:dot_q5_k_rows")},
    {kQ6_K, one(dot_q6_k, "avx2:dot_q6_k_rows")},
    {kIQ4_XS, one(dot_iq4_xs, "avx2:dot_iq4_xs_rows")},
};

}  // namespace

extern const KernelRegistration kAvx2DotInt8 = {kIsaAvx2, kInt8, 12, nullptr, 0};

}  // namespace x86
}  // namespace loom
#endif
