// AVX-512 dot kernels for MXFP4 (blocks of 32: u8 E8M0 scale e, 16 bytes of nibbles indexing
// kMXFP4Values) with Q8_0 activation rows: one activation row four weight rows at a time, a
// few rows R ≤ 4 at a time, both by one kernel of NW weight rows × R activation rows.
//
// Four blocks per step: their 4 × 16 nibble bytes, block L in 128-bit lane L, masked and
// shifted give values 0..15 (lo) and 16..31 (hi) of each block; two 128-bit lane shuffles put
// the activations in the same order (per step, shared by the weight rows: no reordered copy
// of x as Q4_0's quad order needs). A byte shuffle makes level + 128 (u8) for dpbusd; the
// 128·Σx the bias adds comes back out once per 16 blocks in f32 (Σx per block is in the
// prepared row), as IQ4_NL's. Block scales 2^(e − 128)·dx are made 16 blocks at a time: the e
// bytes, 17 apart, packed into two u64 by scalar loads and shifts, the exponent shifted into
// place; a lane permute gives each quad its four.
//
// Its first form, two blocks a step with |level| and x negated where the level is (exact, no
// bias), and the e bytes stored to a stack array and loaded back as a vector (a failed store
// forward each group), ran a one-row 896 × 4864 matmul in 190 µs where Q4_0 took 68; this
// one in 67-150 µs (the machine was loaded: best of 1000 and 200 calls, alternating).
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

// MXFP4 level + 128 (as u8) of the 16 nibbles, in every 128-bit lane
inline __m512i mxfp4_table_u8() {
  return _mm512_broadcast_i32x4(_mm_setr_epi8(static_cast<char>(128), static_cast<char>(129), static_cast<char>(130),
                                              static_cast<char>(131), static_cast<char>(132), static_cast<char>(134),
                                              static_cast<char>(136), static_cast<char>(140), static_cast<char>(128), 127,
                                              126, 125, 124, 122, 120, 116));
}

// the nibble bytes of the nq ≤ 4 blocks at blk, block L in 128-bit lane L (lanes nq.. zero)
inline __m512i mxfp4_quad(const uint8_t* blk, int nq) {
  if (nq == 4) {
    const __m256i a = _mm256_inserti128_si256(_mm256_castsi128_si256(loadu128(blk + 1)), loadu128(blk + kBytes + 1), 1);
    const __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(loadu128(blk + 2 * kBytes + 1)), loadu128(blk + 3 * kBytes + 1), 1);
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
  }
  __m512i v = _mm512_zextsi128_si512(loadu128(blk + 1));
  if (nq > 1) v = _mm512_inserti32x4(v, loadu128(blk + kBytes + 1), 1);
  if (nq > 2) v = _mm512_inserti32x4(v, loadu128(blk + 2 * kBytes + 1), 2);
  return v;
}

// the e bytes of the 8 blocks at p (17 bytes apart) packed in one u64
inline uint64_t mxfp4_e8(const uint8_t* p) {
  uint64_t v = 0;
  LOOM_UNROLL for (int i = 0; i < 8; i++) v |= static_cast<uint64_t>(p[kBytes * i]) << (8 * i);
  return v;
}
// the same for the first n < 8 of them (the rest 0)
inline uint64_t mxfp4_e8_part(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v |= static_cast<uint64_t>(p[kBytes * i]) << (8 * i);
  return v;
}

// 2^(e − 128) of the n ≤ 16 blocks at blk, as f32 (lanes n.. zero): mxfp4_scale, 16 at once.
// The e bytes are packed by scalar loads and shifts (stored to memory and loaded back as one
// vector they stalled the loop on a failed store forward: a third of the speed).
inline __m512 mxfp4_scales16(const uint8_t* blk, int n) {
  uint64_t lo, hi;
  if (n >= 16) {
    lo = mxfp4_e8(blk);
    hi = mxfp4_e8(blk + 8 * kBytes);
  } else {
    lo = n >= 8 ? mxfp4_e8(blk) : mxfp4_e8_part(blk, n);
    hi = n > 8 ? mxfp4_e8_part(blk + 8 * kBytes, n - 8) : 0;
  }
  const __m128i e8 = _mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo));
  const __m512i ei = _mm512_cvtepu8_epi32(e8);
  const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(ei, _mm512_set1_epi32(1)), 23);
  const __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), ei);
  const __mmask16 small = _mm512_cmplt_epu32_mask(ei, _mm512_set1_epi32(2));
  return _mm512_maskz_mov_ps(n >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << n) - 1),
                             _mm512_castsi512_ps(_mm512_mask_mov_epi32(normal, small, subnormal)));
}

// every dword of lane L ← s[4k + L], the scales of the four blocks of quad k
template <int k>
inline __m512 mxfp4_quad_scale(__m512 s) {
  return _mm512_permutexvar_ps(_mm512_setr_epi32(4 * k, 4 * k, 4 * k, 4 * k, 4 * k + 1, 4 * k + 1, 4 * k + 1, 4 * k + 1,
                                                 4 * k + 2, 4 * k + 2, 4 * k + 2, 4 * k + 2, 4 * k + 3, 4 * k + 3, 4 * k + 3,
                                                 4 * k + 3),
                               s);
}

// res[n·R + r] = weight row n (rows ws apart from w) · prepared row x[r]
template <int NW, int R>
void dot_mxfp4_core(const uint8_t* w, size_t ws, const loom::XQ8_0* x, int K, float* res) {
  __m512 acc[NW][R], corr[NW][R];
  LOOM_UNROLL for (int n = 0; n < NW; n++)
    LOOM_UNROLL for (int r = 0; r < R; r++) acc[n][r] = corr[n][r] = _mm512_setzero_ps();
  const __m512i table = mxfp4_table_u8(), m4 = _mm512_set1_epi8(15);
  const int nb = K / 32;
  for (int g = 0; g < nb; g += 16) {
    const int cnt = nb - g < 16 ? nb - g : 16;
    const __mmask16 live = cnt >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cnt) - 1);
    __m512 s[NW][R];
    LOOM_UNROLL for (int n = 0; n < NW; n++) {
      const __m512 d = mxfp4_scales16(w + ws * n + kBytes * g, cnt);
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        s[n][r] = _mm512_mul_ps(d, _mm512_maskz_loadu_ps(live, x[r].d + g));
        const __m512 sx = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(live, x[r].s + g));
        corr[n][r] = _mm512_fmadd_ps(s[n][r], sx, corr[n][r]);
      }
    }
    const auto quad = [&](auto kc) {
      constexpr int k = decltype(kc)::value;
      if (4 * k >= cnt) return;
      const int b = g + 4 * k;
      const int nq = cnt - 4 * k < 4 ? cnt - 4 * k : 4;
      // activations of the quad as [values 0..15 of blocks 0..3], [16..31 of blocks 0..3]
      __m512i xlo[R], xhi[R];
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        const int8_t* q = x[r].q + 32 * b;
        __m512i xa, xb;
        if (nq == 4) {
          xa = _mm512_loadu_si512(q);
          xb = _mm512_loadu_si512(q + 64);
        } else {
          xa = _mm512_maskz_loadu_epi8(nq >= 2 ? ~__mmask64{0} : __mmask64{0xFFFFFFFF}, q);
          xb = _mm512_maskz_loadu_epi8(nq == 3 ? __mmask64{0xFFFFFFFF} : __mmask64{0}, q + 64);
        }
        xlo[r] = _mm512_shuffle_i64x2(xa, xb, 0x88);
        xhi[r] = _mm512_shuffle_i64x2(xa, xb, 0xDD);
      }
      LOOM_UNROLL for (int n = 0; n < NW; n++) {
        const __m512i v = mxfp4_quad(w + ws * n + kBytes * b, nq);
        const __m512i lo = _mm512_shuffle_epi8(table, _mm512_and_si512(v, m4));
        const __m512i hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
        LOOM_UNROLL for (int r = 0; r < R; r++) {
          const __m512i p = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xlo[r]), hi, xhi[r]);
          acc[n][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), mxfp4_quad_scale<k>(s[n][r]), acc[n][r]);
        }
      }
    };
    unrolled<4>(quad);
  }
  LOOM_UNROLL for (int n = 0; n < NW; n++)
    LOOM_UNROLL for (int r = 0; r < R; r++)
      res[n * R + r] = hsum512(_mm512_fnmadd_ps(_mm512_set1_ps(128.f), corr[n][r], acc[n][r]));
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
