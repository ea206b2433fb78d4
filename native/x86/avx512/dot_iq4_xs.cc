// AVX-512 dot kernels for IQ4_XS with Q8_K activation rows: one activation row four weight
// rows at a time; a few rows by the 256-bit kernel of dot256.h.
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

// ---- IQ4_XS · Q8_K: one 256-value block per step, two sub-blocks of 32 per vector ----
//
// A block is f16 d, u16 scales_h, u8 scales_l[4], then 16 bytes per sub-block j of 32
// values: value l (l < 16) in the low nibble of byte l, value 16 + l in its high nibble, a
// nibble indexing the IQ4_NL levels; sub-block j's scale is d·(ls_j − 32), ls_j 6 bits (low 4
// in nibble j of scales_l, high 2 in bits 2j..2j+1 of scales_h). The 32 bytes of sub-blocks
// 2c, 2c+1 broadcast to both halves and shifted by 0 / 4 give 128-bit lanes (2c low, 2c+1 low,
// 2c high, 2c+1 high); the activations' middle lanes are swapped to match (one lane shuffle,
// shared by all weight rows). Levels + 128 as u8 (iq4nl_table_u8) go into dpbusd; the bias
// comes back out as 128·Σ_j scale_j·Σx_j per block.

// The 8 sub-block scales (ls_j − 32) of the block at blk, as f32
inline __m256 iq4_xs_scales(const uint8_t* blk) {
  const __m128i v = loadu128(blk);
  const __m128i l = _mm_shuffle_epi8(v, _mm_setr_epi8(4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1));
  const __m128i lo = _mm_and_si128(_mm_srlv_epi16(l, _mm_setr_epi16(0, 4, 0, 4, 0, 4, 0, 4)), _mm_set1_epi16(15));
  const __m128i h = _mm_shuffle_epi8(v, _mm_setr_epi8(2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3));
  const __m128i hi = _mm_and_si128(_mm_srlv_epi16(h, _mm_setr_epi16(0, 2, 4, 6, 8, 10, 12, 14)), _mm_set1_epi16(3));
  const __m128i ls = _mm_sub_epi16(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi16(32));
  return _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(ls));
}

// NW weight rows (ws apart) against one prepared row (see one_row_in_stretches). (For a few
// activation rows the 256-bit kernel of dot256.h is as fast: 9.4 against 10.5 cycles a
// block of 32 for 4 rows, where this one-weight-row form re-permutes the scales per row.)
template <int NW>
void dot_iq4_xs_wrows512(const uint8_t* w, size_t ws, const loom::XQ8_K& x, int K, float* res) {
  __m512 acc[NW];
  __m256 bias[NW];
  LOOM_UNROLL for (int n = 0; n < NW; n++) {
    acc[n] = _mm512_setzero_ps();
    bias[n] = _mm256_setzero_ps();
  }
  const __m512i table = iq4nl_table_u8();
  for (int b = 0; b < K / 256; b++) {
    const __m256 sx = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(loadu128(x.s32 + 8 * b))), _mm256_set1_ps(128.f));
    __m512 scale[NW];  // sub-block j's d·dx·(ls_j − 32) in lane j
    LOOM_UNROLL for (int n = 0; n < NW; n++) {
      const uint8_t* blk = w + ws * n + 136 * b;
      const __m256 s = _mm256_mul_ps(iq4_xs_scales(blk), _mm256_set1_ps(f16_scalar(blk) * x.d[b]));
      scale[n] = _mm512_castps256_ps512(s);
      bias[n] = _mm256_fmadd_ps(s, sx, bias[n]);
    }
    const auto chunk = [&](auto cc) {  // sub-blocks 2c, 2c+1
      constexpr int c = decltype(cc)::value;
      const __m512i xv = _mm512_loadu_si512(x.q + 256 * b + 64 * c);
      const __m512i xc = _mm512_shuffle_i32x4(xv, xv, 0xD8);  // lanes 0, 2, 1, 3
      const __m512i idx = _mm512_setr_epi32(2 * c, 2 * c, 2 * c, 2 * c, 2 * c + 1, 2 * c + 1, 2 * c + 1, 2 * c + 1,  //
                                            2 * c, 2 * c, 2 * c, 2 * c, 2 * c + 1, 2 * c + 1, 2 * c + 1, 2 * c + 1);
      LOOM_UNROLL for (int n = 0; n < NW; n++) {
        const __m512i raw = _mm512_broadcast_i64x4(loadu256(w + ws * n + 136 * b + 8 + 32 * c));
        const __m512i nib = _mm512_and_si512(_mm512_srlv_epi64(raw, _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4)), _mm512_set1_epi8(15));
        const __m512 p = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_shuffle_epi8(table, nib), xc));
        acc[n] = _mm512_fmadd_ps(p, _mm512_permutexvar_ps(idx, scale[n]), acc[n]);
      }
    };
    unrolled<4>(chunk);
  }
  __m512 total[NW];
  LOOM_UNROLL for (int n = 0; n < NW; n++)
    total[n] = _mm512_sub_ps(acc[n], _mm512_zextps256_ps512(bias[n]));
  hsum512_rows<NW>(total, res);
}

#define LOOM_DOT_ARGS                                                                                              \
  const uint8_t *xa, size_t xstride, int rows, const uint8_t *w, size_t wstride, int K, int o0, int o1, float *out, \
      int N

// IQ4_XS: one row four weight rows at a time; a few rows by the 256-bit kernel (dot256.h)
void dot_iq4_xs(LOOM_DOT_ARGS) {
  if (rows == 1) {
    one_row_in_stretches(xq8_k_view(xa, K), w, wstride, K, o0, o1, out, dot_iq4_xs_wrows512<4>, dot_iq4_xs_wrows512<1>);
    return;
  }
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, loom::xq8_k_view, dot_iq4_xs_rows<1>,
                  dot_iq4_xs_rows<2>, dot_iq4_xs_rows<3>, dot_iq4_xs_rows<4>);
}
#undef LOOM_DOT_ARGS

constexpr DotEntry kDots[] = {
    {kIQ4_XS, {dot_iq4_xs, "avx512:dot_iq4_xs_wrows512", "avx512:dot_iq4_xs_rows"}},
};
}  // namespace

extern const KernelRegistration kAvx512DotIQ4XS = {kIsaAvx512, kDots, 1, nullptr, 0};

}  // namespace x86
}  // namespace loom
#endif
