// AVX2 dot kernel for MXFP4 (blocks of 32: u8 E8M0 scale e, 16 bytes of nibbles indexing
// kMXFP4Values) with Q8_0 activation rows: R ≤ 4 activation rows at a time, one weight block
// per step as IQ4_NL's (dot256.h): a byte shuffle turns the nibbles into the s8 levels, the
// sign trick makes them u8 for maddubs, the integer sum is exact (|level| ≤ 12) and the
// block's f32 scale is mxfp4_scale(e)·dx, as ggml_vec_dot_mxfp4_q8_0.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "../../quant.h"
#include "../../weight-types.h"
#include "../dot256.h"
#include "../matmul_x86.h"

namespace loom {
namespace x86 {
namespace {

// the 16 MXFP4 levels, in both 128-bit lanes (for a byte shuffle)
inline __m256i mxfp4_table() {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMXFP4Values)));
}

template <int R>
void dot_mxfp4_rows(const uint8_t* w, const loom::XQ8_0* x, int K, float* res) {
  __m256 acc[2][R];
  LOOM_UNROLL for (int r = 0; r < R; r++) acc[0][r] = acc[1][r] = _mm256_setzero_ps();
  const __m256i table = mxfp4_table();
  const int nb = K / 32;
  for (int b = 0; b < nb; b++) {
    const uint8_t* blk = w + 17 * b;
    if ((b & 3) == 0) LOOM_PREFETCH(blk);  // 68 bytes four blocks
    const __m256i q = _mm256_shuffle_epi8(table, q4_0_unpack(blk + 1));
    const float dw = mxfp4_scale(blk[0]);
    const int u = b & 1;
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m256i p = dot_s8(q, loadu256(x[r].q + 32 * b));
      acc[u][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * x[r].d[b]), acc[u][r]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(_mm256_add_ps(acc[0][r], acc[1][r]));
}

void dot_mxfp4(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0, int o1,
               float* out, int N) {
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, loom::xq8_0_view, dot_mxfp4_rows<1>,
                  dot_mxfp4_rows<2>, dot_mxfp4_rows<3>, dot_mxfp4_rows<4>);
}

constexpr DotEntry kDots[] = {
    {kMXFP4, {dot_mxfp4, "avx2:dot_mxfp4_rows", "avx2:dot_mxfp4_rows"}},
};

}  // namespace

extern const KernelRegistration kAvx2DotMXFP4 = {kIsaAvx2, kDots, 1, nullptr, 0};

}  // namespace x86
}  // namespace loom
#endif
