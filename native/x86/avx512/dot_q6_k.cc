// AVX-512 dot kernels for the K-quants with sub-blocks of 16 and Q8_K activation rows: Q6_K,
// Q3_K, Q2_K, one block of 256 a step; one activation row four weight rows at a time, a few
// rows R ≤ 4 at a time.
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
#include "k_quants.h"
namespace loom {
namespace x86 {
namespace {

// ---- Q6_K · Q8_K: one 256-value block per step, 64 values per vector ----
//
// Half h of a block (values 128h .. 128h+127): its 64 ql bytes hold the low nibbles of
// values 0..63 and, shifted down 4, of 64..127; its 32 qh bytes, broadcast to both 256-bit
// halves and shifted per half, give the top 2 bits. Weights are d·sc_j·(q − 32) over
// sub-blocks j of 16 values: Σ sc_j·Σ q·x by maddubs + dpwssd, the −32 by Σ sc_j·Σx_j.

// Half h after dpbusd of its low (values 0..63) and high (64..127) parts and
// packs_epi32(low, high) (see q4_k_packed_scales; exact: 4·63·128 < 2^15): per 128-bit lane
// k, int16 lanes 0..3 hold 4-value sums of sub-block 8h + k, lanes 4..7 of 8h + 4 + k; their
// scales so (sc as in q6_k_quad_scales)
template <int h>
inline __m512i q6_k_packed_scales(__m512i sc) {
  constexpr short a = 8 * h, b = 8 * h + 4;
  return _mm512_permutexvar_epi16(
      _mm512_set_epi16(b + 3, b + 3, b + 3, b + 3, a + 3, a + 3, a + 3, a + 3, b + 2, b + 2, b + 2, b + 2, a + 2, a + 2, a + 2,
                       a + 2, b + 1, b + 1, b + 1, b + 1, a + 1, a + 1, a + 1, a + 1, b, b, b, b, a, a, a, a),
      sc);
}

template <int R>
void dot_q6_k_rows512(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m512 acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
  const __m512i up = _mm512_setr_epi64(4, 4, 4, 4, 2, 2, 2, 2), down = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
  for (int b = 0; b < K / 256; b++) {
    const uint8_t* blk = w + loom::kQ6_KBytes * b;
    LOOM_PREFETCH(blk);  // 210 bytes: four lines, mostly
    LOOM_PREFETCH(blk + 64);
    LOOM_PREFETCH(blk + 128);
    LOOM_PREFETCH(blk + 192);
    const __m256i sc16 = _mm256_cvtepi8_epi16(loadu128(blk + 192));  // 16 sub-block scales
    const __m512i sc = _mm512_castsi256_si512(sc16);
    const float d = f16_scalar(blk + 208);
    __m512i isum[R];
    __m256i corr[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      isum[r] = _mm512_setzero_si512();
      corr[r] = _mm256_madd_epi16(sc16, loadu256(x[r].s16 + 16 * b));  // Σ sc_j·Σx_j, 8 int32
    }
    const auto half = [&](auto hc) {
      constexpr int h = decltype(hc)::value;
      const __m512i ql = _mm512_loadu_si512(blk + 64 * h);
      const __m512i qh = _mm512_broadcast_i64x4(loadu256(blk + 128 + 32 * h));
      // q = low nibble | top bits: 0xF8 = a | (b & c) for (a, b, c) = (nibble, shifted qh, 0x30)
      const __m512i lo = _mm512_ternarylogic_epi32(_mm512_and_si512(ql, m4), _mm512_sllv_epi64(qh, up), m30, 0xF8);
      const __m512i hi = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), _mm512_srlv_epi64(qh, down), m30, 0xF8);
      const __m512i s_lo = q6_k_quad_scales<2 * h>(sc), s_hi = q6_k_quad_scales<2 * h + 1>(sc);
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        const int8_t* q8 = x[r].q + 256 * b + 128 * h;
        isum[r] = _mm512_dpwssd_epi32(isum[r], _mm512_maddubs_epi16(lo, _mm512_loadu_si512(q8)), s_lo);
        isum[r] = _mm512_dpwssd_epi32(isum[r], _mm512_maddubs_epi16(hi, _mm512_loadu_si512(q8 + 64)), s_hi);
      }
    };
    half(std::integral_constant<int, 0>());
    half(std::integral_constant<int, 1>());
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m512i t = _mm512_sub_epi32(isum[r], _mm512_zextsi256_si512(_mm256_slli_epi32(corr[r], 5)));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_set1_ps(d * x[r].d[b]), acc[r]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum512(acc[r]);
}

// NW weight rows (ws apart) against one prepared row (see one_row_in_stretches)
template <int NW>
void dot_q6_k_wrows512(const uint8_t* w, size_t ws, const loom::XQ8_K& x, int K, float* res) {
  __m512 acc[NW];
  LOOM_UNROLL for (int n = 0; n < NW; n++) acc[n] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
  const __m512i up = _mm512_setr_epi64(4, 4, 4, 4, 2, 2, 2, 2), down = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
  for (int b = 0; b < K / 256; b++) {
    const __m256i xs16 = loadu256(x.s16 + 16 * b);
    prefetch_rows_ahead<NW>(w, ws, static_cast<size_t>(loom::kQ6_KBytes) * b, loom::kQ6_KBytes);
    __m512i sc[NW], isum[NW];
    __m256i corr[NW];
    LOOM_UNROLL for (int n = 0; n < NW; n++) {
      const uint8_t* blk = w + ws * n + loom::kQ6_KBytes * b;
      const __m256i sc16 = _mm256_cvtepi8_epi16(loadu128(blk + 192));
      sc[n] = _mm512_castsi256_si512(sc16);
      corr[n] = _mm256_madd_epi16(sc16, xs16);
      isum[n] = _mm512_setzero_si512();
    }
    const auto half = [&](auto hc) {
      constexpr int h = decltype(hc)::value;
      const int8_t* q8 = x.q + 256 * b + 128 * h;
      const __m512i x0 = _mm512_loadu_si512(q8), x1 = _mm512_loadu_si512(q8 + 64);
      LOOM_UNROLL for (int n = 0; n < NW; n++) {
        const uint8_t* blk = w + ws * n + loom::kQ6_KBytes * b;
        const __m512i ql = _mm512_loadu_si512(blk + 64 * h);
        const __m512i qh = _mm512_broadcast_i64x4(loadu256(blk + 128 + 32 * h));
        const __m512i lo = _mm512_ternarylogic_epi32(_mm512_and_si512(ql, m4), _mm512_sllv_epi64(qh, up), m30, 0xF8);
        const __m512i hi = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), _mm512_srlv_epi64(qh, down), m30, 0xF8);
        const __m512i p = _mm512_packs_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, x0),
                                             _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, x1));
        isum[n] = _mm512_dpwssd_epi32(isum[n], p, q6_k_packed_scales<h>(sc[n]));
      }
    };
    half(std::integral_constant<int, 0>());
    half(std::integral_constant<int, 1>());
    LOOM_UNROLL for (int n = 0; n < NW; n++) {
      const float d = f16_scalar(w + ws * n + loom::kQ6_KBytes * b + 208);
      const __m512i t = _mm512_sub_epi32(isum[n], _mm512_zextsi256_si512(_mm256_slli_epi32(corr[n], 5)));
      acc[n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_set1_ps(d * x.d[b]), acc[n]);
    }
  }
  hsum512_rows<NW>(acc, res);
}

// ---- Q3_K, Q2_K · Q8_K: one 256-value block per step, 64 values per vector ----
//
// Both store value 128n + 32j + l (l < 32) in bits 2j..2j+1 of qs[32n + l] (Q3_K: its third
// bit is bit 4n + j of hmask[l]), sub-blocks of 16 values: the two 32-value rows j, j+1 of a
// half n make one vector (sub-blocks 8n + 2j .. 8n + 2j + 3), multiplied by maddubs, scaled by
// dpwssd with q6_k_quad_scales.

// Q3_K's 16 six-bit scales minus 32 as int16, from the 12 bytes at blk + 96 (read as bytes
// 2..13 of the 16 at blk + 94, inside the block): low nibble of byte k (k < 8) or high nibble
// of byte k − 8, and bits 2·(k / 4) of byte 8 + k % 4 above them
inline __m256i q3_k_scales16(const uint8_t* blk) {
  const __m128i v = loadu128(blk + 94);
  const __m128i t = _mm_shuffle_epi8(v, _mm_setr_epi8(2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5, 6, 7, 8, 9));
  const __m128i lo = _mm_and_si128(_mm_mask_blend_epi8(0xFF00, t, _mm_srli_epi16(t, 4)), _mm_set1_epi8(15));
  const __m128i h = _mm_shuffle_epi8(v, _mm_setr_epi8(10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13));
  const __m128i hi = _mm_and_si128(_mm_srlv_epi16(h, _mm_setr_epi16(0, 0, 2, 2, 4, 4, 6, 6)), _mm_set1_epi8(3));
  const __m128i sc = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
  return _mm256_cvtepi8_epi16(sc);
}

// Q2_K / Q3_K: the 2-bit values of quarter c (rows j = 2(c % 2) and j + 1 of half c / 2),
// from that half's 32 bytes
template <int c>
inline __m512i two_bit_quarter(const uint8_t* half) {
  constexpr int s = 4 * (c % 2);  // row j at bits 2j..2j+1
  const __m512i qs = _mm512_broadcast_i64x4(loadu256(half));
  return _mm512_and_si512(_mm512_srlv_epi64(qs, _mm512_setr_epi64(s, s, s, s, s + 2, s + 2, s + 2, s + 2)), _mm512_set1_epi8(3));
}

// Q3_K: d·dx·Σ_j sc_j·(Σ q·x − 4·Σx_j), q = 2 low bits | hmask bit << 2 in 0..7.
// NW weight rows (ws apart) against R prepared rows, res[n·R + r]: one weight row against a few
// activation rows (dot_rows_driver), or four weight rows against one (one_row_in_stretches).
template <int NW, int R>
void dot_q3_k_512(const uint8_t* w, size_t ws, const loom::XQ8_K* x, int K, float* res) {
  __m512 acc[NW][R];
  LOOM_UNROLL for (int n = 0; n < NW; n++) LOOM_UNROLL for (int r = 0; r < R; r++) acc[n][r] = _mm512_setzero_ps();
  for (int b = 0; b < K / 256; b++) {
    if (NW == 1) {  // one weight stream (see LOOM_PREFETCH_AHEAD): 110 bytes, two lines mostly
      LOOM_PREFETCH(w + 110 * b);
      LOOM_PREFETCH(w + 110 * b + 64);
    }
    __m512i sc[NW], hm[NW], isum[NW][R];
    __m256i corr[NW][R];
    float d[NW];
    LOOM_UNROLL for (int n = 0; n < NW; n++) {
      const uint8_t* blk = w + ws * n + 110 * b;
      const __m256i sc16 = q3_k_scales16(blk);
      sc[n] = _mm512_castsi256_si512(sc16);
      d[n] = f16_scalar(blk + 108);
      hm[n] = _mm512_broadcast_i64x4(loadu256(blk));
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        isum[n][r] = _mm512_setzero_si512();
        corr[n][r] = _mm256_madd_epi16(sc16, loadu256(x[r].s16 + 16 * b));  // Σ sc_j·Σx_j, 8 int32
      }
    }
    const auto quarter = [&](auto qc) {  // half h = c / 2, rows j = 2(c % 2), +1
      constexpr int c = decltype(qc)::value, h = c / 2, j = 2 * (c % 2);
      __m512i xc[R];
      LOOM_UNROLL for (int r = 0; r < R; r++) xc[r] = _mm512_loadu_si512(x[r].q + 256 * b + 64 * c);
      LOOM_UNROLL for (int n = 0; n < NW; n++) {
        const __m512i lo = two_bit_quarter<c>(w + ws * n + 110 * b + 32 + 32 * h);
        // + 4 where the third bit is set: bit 4h + j of the hmask bytes for row j, the next for row j + 1
        const __m512i q = add_where_bit<4 * h + j, 4 * h + j + 1, 4>(lo, hm[n]);
        const __m512i s = q6_k_quad_scales<c>(sc[n]);
        LOOM_UNROLL for (int r = 0; r < R; r++) isum[n][r] = _mm512_dpwssd_epi32(isum[n][r], _mm512_maddubs_epi16(q, xc[r]), s);
      }
    };
    unrolled<4>(quarter);
    LOOM_UNROLL for (int n = 0; n < NW; n++) LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m512i t = _mm512_sub_epi32(isum[n][r], _mm512_zextsi256_si512(_mm256_slli_epi32(corr[n][r], 2)));
      acc[n][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_set1_ps(d[n] * x[r].d[b]), acc[n][r]);
    }
  }
  LOOM_UNROLL for (int n = 0; n < NW; n++) LOOM_UNROLL for (int r = 0; r < R; r++) res[n * R + r] = hsum512(acc[n][r]);
}

// Q2_K: dx·(d·Σ_j sc_j·Σ q·x − dmin·Σ_j m_j·Σx_j), q in 0..3, scales[j] = sc | m << 4; NW
// weight rows against R prepared rows as dot_q3_k_512
template <int NW, int R>
void dot_q2_k_512(const uint8_t* w, size_t ws, const loom::XQ8_K* x, int K, float* res) {
  __m512 acc[NW][R];
  __m256 mins_acc[NW][R];
  LOOM_UNROLL for (int n = 0; n < NW; n++) LOOM_UNROLL for (int r = 0; r < R; r++) {
    acc[n][r] = _mm512_setzero_ps();
    mins_acc[n][r] = _mm256_setzero_ps();
  }
  for (int b = 0; b < K / 256; b++) {
    if (NW == 1) {  // one weight stream: 84 bytes, two lines at most
      LOOM_PREFETCH(w + 84 * b);
      LOOM_PREFETCH(w + 84 * b + 64);
    }
    __m512i sc[NW], isum[NW][R];
    __m256i mins16[NW];
    float d[NW], dmin[NW];
    LOOM_UNROLL for (int n = 0; n < NW; n++) {
      const uint8_t* blk = w + ws * n + 84 * b;
      const __m128i sm = loadu128(blk);
      sc[n] = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(sm, _mm_set1_epi8(15))));
      mins16[n] = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), _mm_set1_epi8(15)));
      d[n] = f16_scalar(blk + 80);
      dmin[n] = f16_scalar(blk + 82);
      LOOM_UNROLL for (int r = 0; r < R; r++) isum[n][r] = _mm512_setzero_si512();
    }
    const auto quarter = [&](auto qc) {
      constexpr int c = decltype(qc)::value, h = c / 2;
      __m512i xc[R];
      LOOM_UNROLL for (int r = 0; r < R; r++) xc[r] = _mm512_loadu_si512(x[r].q + 256 * b + 64 * c);
      LOOM_UNROLL for (int n = 0; n < NW; n++) {
        const __m512i q = two_bit_quarter<c>(w + ws * n + 84 * b + 16 + 32 * h);
        const __m512i s = q6_k_quad_scales<c>(sc[n]);
        LOOM_UNROLL for (int r = 0; r < R; r++) isum[n][r] = _mm512_dpwssd_epi32(isum[n][r], _mm512_maddubs_epi16(q, xc[r]), s);
      }
    };
    unrolled<4>(quarter);
    LOOM_UNROLL for (int n = 0; n < NW; n++) LOOM_UNROLL for (int r = 0; r < R; r++) {
      const float dx = x[r].d[b];
      acc[n][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[n][r]), _mm512_set1_ps(d[n] * dx), acc[n][r]);
      const __m256i mm = _mm256_madd_epi16(mins16[n], loadu256(x[r].s16 + 16 * b));
      mins_acc[n][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mm), _mm256_set1_ps(dmin[n] * dx), mins_acc[n][r]);
    }
  }
  LOOM_UNROLL for (int n = 0; n < NW; n++) LOOM_UNROLL for (int r = 0; r < R; r++)
    res[n * R + r] = hsum512(acc[n][r]) - hsum256(mins_acc[n][r]);
}

// The two drivers' kernel shapes over a <NW, R> kernel: R activation rows against one weight
// row; NW weight rows against one activation row
template <void (*F)(const uint8_t*, size_t, const loom::XQ8_K*, int, float*)>
void xrows_of(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  F(w, 0, x, K, res);
}
template <void (*F)(const uint8_t*, size_t, const loom::XQ8_K*, int, float*)>
void wrows_of(const uint8_t* w, size_t ws, const loom::XQ8_K& x, int K, float* res) {
  F(w, ws, &x, K, res);
}

using QkKernel = void (*)(const uint8_t*, size_t, const loom::XQ8_K*, int, float*);

// One activation row: W4 (four weight rows) over stretches, W1 for the last rows; a few rows:
// W1, R2, R3, R4 (one weight row against 1..4 activation rows)
template <QkKernel W4, QkKernel W1, QkKernel R2, QkKernel R3, QkKernel R4>
void dot_nw_r(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0, int o1,
              float* out, int N) {
  if (rows == 1) {
    one_row_in_stretches(loom::xq8_k_view(xa, K), w, wstride, K, o0, o1, out, wrows_of<W4>, wrows_of<W1>);
    return;
  }
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, loom::xq8_k_view, xrows_of<W1>, xrows_of<R2>,
                  xrows_of<R3>, xrows_of<R4>);
}

#define LOOM_DOT_ARGS                                                                                              \
  const uint8_t *xa, size_t xstride, int rows, const uint8_t *w, size_t wstride, int K, int o0, int o1, float *out, \
      int N

void dot_q6_k(LOOM_DOT_ARGS) {
  if (rows == 1) {
    one_row_in_stretches(xq8_k_view(xa, K), w, wstride, K, o0, o1, out, dot_q6_k_wrows512<4>, dot_q6_k_wrows512<1>);
    return;
  }
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, xq8_k_view, dot_q6_k_rows512<1>,
                  dot_q6_k_rows512<2>, dot_q6_k_rows512<3>, dot_q6_k_rows512<4>);
}
#undef LOOM_DOT_ARGS

template <size_t n>
constexpr int count(const DotEntry (&)[n]) {
  return static_cast<int>(n);
}
constexpr DotKernel one(DotFn fn, const char* name) { return {fn, name, name}; }

constexpr DotEntry kDots[] = {
    {kQ6_K, {dot_q6_k, "avx512:dot_q6_k_wrows512", "avx512:dot_q6_k_rows512"}},
    {kQ3_K, one(dot_nw_r<dot_q3_k_512<4, 1>, dot_q3_k_512<1, 1>, dot_q3_k_512<1, 2>, dot_q3_k_512<1, 3>, dot_q3_k_512<1, 4>>,
                "avx512:dot_q3_k_512")},
    {kQ2_K, one(dot_nw_r<dot_q2_k_512<4, 1>, dot_q2_k_512<1, 1>, dot_q2_k_512<1, 2>, dot_q2_k_512<1, 3>, dot_q2_k_512<1, 4>>,
                "avx512:dot_q2_k_512")},
};
}  // namespace

extern const KernelRegistration kAvx512DotQ6K = {kIsaAvx512, kDots, count(kDots), nullptr, 0};

}  // namespace x86
}  // namespace loom
#endif
