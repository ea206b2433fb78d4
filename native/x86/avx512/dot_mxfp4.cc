// AVX-512 dot kernels for MXFP4 (blocks of 32: u8 E8M0 scale e, 16 bytes of nibbles indexing
// kMXFP4Values) with Q8_0 activation rows: one activation row four weight rows at a time, a
// few rows R ≤ 4 at a time, both by one kernel of NW weight rows × R activation rows.
//
// Two blocks per VNNI step: the 2 × 16 nibble bytes, each copied to two 128-bit lanes and the
// upper copy shifted down a nibble, give [block b values 0..15, 16..31, block b+1 0..15,
// 16..31], the activations' own order. A byte shuffle makes |level| (u8, ≤ 12), and the
// activations are negated where the level is negative (nibble bit 3): dpbusd then sums
// level·x exactly, no bias to take back out. Block scales 2^(e − 128)·dx are made 16 blocks at
// a time (the e bytes, 17 apart, picked out by scalar loads; the exponent shifted into place)
// and a lane permute gives each pair of blocks its two.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "../../quant.h"
#include "../../weight-types.h"
#include "../dot256.h"
#include "../matmul_x86.h"
#include "common.h"

namespace loom {
namespace x86 {
namespace {

constexpr int kBytes = 17;

// |level| of the 16 MXFP4 nibbles, in every 128-bit lane
inline __m512i mxfp4_abs_table() {
  return _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12));
}

// the nibbles of block b at blk (and of b + 1 when `two`, else zero) as u8 in value order
inline __m512i mxfp4_nibbles(const uint8_t* blk, bool two) {
  const __m256i v = two ? _mm256_inserti128_si256(_mm256_castsi128_si256(loadu128(blk + 1)), loadu128(blk + kBytes + 1), 1)
                        : _mm256_zextsi128_si256(loadu128(blk + 1));
  const __m512i v4 = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), _mm512_castsi256_si512(v));
  return _mm512_and_si512(_mm512_srlv_epi64(v4, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4)), _mm512_set1_epi8(15));
}

// 2^(e − 128) of the n ≤ 16 blocks at blk, as f32 (lanes n.. zero): mxfp4_scale, 16 at once
inline __m512 mxfp4_scales16(const uint8_t* blk, int n) {
  alignas(16) uint8_t e[16] = {};
  for (int i = 0; i < n; i++) e[i] = blk[kBytes * i];
  const __m512i ei = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(e)));
  const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(ei, _mm512_set1_epi32(1)), 23);
  const __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), ei);
  const __mmask16 small = _mm512_cmplt_epu32_mask(ei, _mm512_set1_epi32(2));
  return _mm512_maskz_mov_ps(n >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << n) - 1),
                             _mm512_castsi512_ps(_mm512_mask_mov_epi32(normal, small, subnormal)));
}

// lanes 0..7 ← s[2k], lanes 8..15 ← s[2k + 1]
template <int k>
inline __m512 mxfp4_pair_scale(__m512 s) {
  return _mm512_permutexvar_ps(_mm512_setr_epi32(2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k + 1,
                                                 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1,
                                                 2 * k + 1),
                               s);
}

// res[n·R + r] = weight row n (rows ws apart from w) · prepared row x[r]
template <int NW, int R>
void dot_mxfp4_core(const uint8_t* w, size_t ws, const loom::XQ8_0* x, int K, float* res) {
  __m512 acc[NW][R];
  LOOM_UNROLL for (int n = 0; n < NW; n++)
    LOOM_UNROLL for (int r = 0; r < R; r++) acc[n][r] = _mm512_setzero_ps();
  const __m512i table = mxfp4_abs_table(), m8 = _mm512_set1_epi8(8), zero = _mm512_setzero_si512();
  const int nb = K / 32;
  for (int g = 0; g < nb; g += 16) {
    const int cnt = nb - g < 16 ? nb - g : 16;
    const __mmask16 live = cnt >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cnt) - 1);
    __m512 s[NW][R];
    LOOM_UNROLL for (int n = 0; n < NW; n++) {
      const __m512 d = mxfp4_scales16(w + ws * n + kBytes * g, cnt);
      LOOM_UNROLL for (int r = 0; r < R; r++) s[n][r] = _mm512_mul_ps(d, _mm512_maskz_loadu_ps(live, x[r].d + g));
    }
    const auto pair = [&](auto kc) {
      constexpr int k = decltype(kc)::value;
      if (2 * k >= cnt) return;
      const int b = g + 2 * k;
      const bool two = 2 * k + 1 < cnt;
      __m512i xv[R];
      LOOM_UNROLL for (int r = 0; r < R; r++)
        xv[r] = two ? _mm512_loadu_si512(x[r].q + 32 * b) : _mm512_zextsi256_si512(loadu256(x[r].q + 32 * b));
      LOOM_UNROLL for (int n = 0; n < NW; n++) {
        const __m512i nib = mxfp4_nibbles(w + ws * n + kBytes * b, two);
        const __m512i u = _mm512_shuffle_epi8(table, nib);
        const __mmask64 neg = _mm512_test_epi8_mask(nib, m8);
        LOOM_UNROLL for (int r = 0; r < R; r++) {
          const __m512i sx = _mm512_mask_sub_epi8(xv[r], neg, zero, xv[r]);
          const __m512 p = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zero, u, sx));
          acc[n][r] = _mm512_fmadd_ps(p, mxfp4_pair_scale<k>(s[n][r]), acc[n][r]);
        }
      }
    };
    unrolled<8>(pair);
  }
  LOOM_UNROLL for (int n = 0; n < NW; n++)
    LOOM_UNROLL for (int r = 0; r < R; r++) res[n * R + r] = hsum512(acc[n][r]);
}

// NW weight rows (ws apart) against one prepared row (one_row_in_stretches)
template <int NW>
void dot_mxfp4_wrows512(const uint8_t* w, size_t ws, const loom::XQ8_0& x, int K, float* res) {
  dot_mxfp4_core<NW, 1>(w, ws, &x, K, res);
}
// one weight row against R prepared rows (dot_rows_driver)
template <int R>
void dot_mxfp4_rows512(const uint8_t* w, const loom::XQ8_0* x, int K, float* res) {
  dot_mxfp4_core<1, R>(w, 0, x, K, res);
}

void dot_mxfp4(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0, int o1,
               float* out, int N) {
  if (rows == 1) {
    one_row_in_stretches(loom::xq8_0_view(xa, K), w, wstride, K, o0, o1, out, dot_mxfp4_wrows512<4>,
                         dot_mxfp4_wrows512<1>);
    return;
  }
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, loom::xq8_0_view, dot_mxfp4_rows512<1>,
                  dot_mxfp4_rows512<2>, dot_mxfp4_rows512<3>, dot_mxfp4_rows512<4>);
}

constexpr DotEntry kDots[] = {
    {kMXFP4, {dot_mxfp4, "avx512:dot_mxfp4_wrows512", "avx512:dot_mxfp4_rows512"}},
};

}  // namespace

extern const KernelRegistration kAvx512DotMXFP4 = {kIsaAvx512, kDots, 1, nullptr, 0};

}  // namespace x86
}  // namespace loom
#endif
