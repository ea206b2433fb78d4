// AVX-512 dot kernels for the super-blocks of 256 with Q8_K activation rows: Q4_K and Q5_K
// (four blocks a group), Q6_K, Q3_K, Q2_K (one block a step, sub-blocks of 16), IQ4_XS; one
// activation row four weight rows at a time, a few rows R ≤ 4 at a time (IQ4_XS: by the
// 256-bit kernel of dot256.h).
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

// ---- Q4_K and Q5_K · Q8_K: 4 blocks of 256 values a group, 64 values per vector ----
//
// Each block's headers (d, dmin, 12 bytes of packed scales and mins) are decoded for four
// blocks at once, one block per 128-bit lane, and the mins term of four blocks is one
// 512-bit multiply-add: the per-block bookkeeping is a third of what one block at a time costs.
// Q5_K (kBits = 5) has the same headers, then 32 bytes qh of fifth bits before its 128 bytes
// of nibbles: bit 2c of qh[l] for value 64c + l, bit 2c + 1 for value 64c + 32 + l.

template <int kBits>
constexpr int kQ45_KBytes = kBits == 4 ? loom::kQ4_KBytes : 176;
template <int kBits>
constexpr int kQ45_KNibbles = kBits == 4 ? 16 : 48;  // offset of the nibbles in a block

// Per 128-bit lane i: the 8 scales then the 8 mins (6-bit, as u8) of block i, from its 16
// header bytes in that lane (d, dmin, then the 12 packed bytes).
inline __m512i q4_k_scales_mins4(__m512i s) {
  const __m512i a = _mm512_shuffle_epi8(
      s, _mm512_broadcast_i32x4(_mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15)));
  const __m512i b = _mm512_shuffle_epi8(s, _mm512_broadcast_i32x4(_mm_setr_epi8(4, 4, 4, 4, 4, 5, 6, 7, 4, 4, 4, 4, 8, 9, 10, 11)));
  // scales 0..3, mins 0..3: low 6 bits; scales 4..7: low nibble of bytes 8..11; mins 4..7:
  // their high nibble; both 4..7 take bits 4..5 from the top 2 bits of bytes 0..3 / 4..7
  const __m512i lo = _mm512_and_si512(a, _mm512_broadcast_i32x4(_mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0)));
  const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(a, 4),
                                      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15)));
  const __m512i top = _mm512_and_si512(_mm512_srli_epi16(b, 2),
                                       _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 0, 0, 48, 48, 48, 48, 0, 0, 0, 0, 48, 48, 48, 48)));
  return _mm512_ternarylogic_epi32(lo, hi, top, 0xfe);  // lo | hi | top
}

// Sub-block scales after "dpbusd, pack, dpwssd": dpbusd sums 4 weight·x products into int32,
// packs_epi32 of two such vectors makes them int16 (exact: 4·31·128 < 2^15), and one dpwssd
// applies the scales. Per pair of vectors that is 2 dpbusd + pack + dpwssd + 1 scale shuffle
// where maddubs + dpwssd took 2 + 2 + 2 shuffles; the one-row kernels, compute-bound when
// the memory is fast, gained 5-6% (Q4_K 57.5 -> 61, Q5_K 50 -> 52, Q6_K 71.5 -> 75 GB/s of
// weights from L3, 2 threads, alternating), the four-row Q4_K one 1-2%; the four-row Q6_K
// one lost 7%, and keeps maddubs.
// Here: per 128-bit lane k, int16 lanes 0..3 come from the first vector and 4..7 from the
// second; their scales are those of sub-blocks a (first) and b (second) in lanes k < 2, e and
// f in lanes k ≥ 2.
template <int a, int b, int e, int f>
inline __m512i q4_k_packed_scales(__m512i sm) {
  constexpr char z = -1;
  const __m128i low = _mm_setr_epi8(a, z, a, z, a, z, a, z, b, z, b, z, b, z, b, z);
  const __m128i high = _mm_setr_epi8(e, z, e, z, e, z, e, z, f, z, f, z, f, z, f, z);
  return _mm512_shuffle_epi8(sm, _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_broadcastsi128_si256(low)),
                                                    _mm256_broadcastsi128_si256(high), 1));
}

// + `add` on the bytes of q whose high bit is set in `bits` (32 bytes broadcast to both
// halves): bit a of bits[l] for byte l of the lower half, bit b for byte l of the upper half.
// One test and one masked add (Q5_K's fifth bit, Q3_K's third).
template <int a, int b, int add>
inline __m512i add_where_bit(__m512i q, __m512i bits) {
  const __m512i bit = _mm512_mask_blend_epi64(0xF0, _mm512_set1_epi8(1 << a), _mm512_set1_epi8(1 << b));
  return _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(bits, bit), q, _mm512_set1_epi8(add));
}

// Q5_K: + 16 on the bytes of q whose fifth bit is set (bits a / b of qh, as add_where_bit)
template <int a, int b>
inline __m512i q5_k_add_fifth(__m512i q, const uint8_t* blk) {
  return add_where_bit<a, b, 16>(q, _mm512_broadcast_i64x4(loadu256(blk + 16)));
}

// Headers of Q4_K / Q5_K blocks 0 .. n−1 at g: sm ← their scales and mins
// (q4_k_scales_mins4), dd ← d0, dmin0, d1, dmin1, … as f32
template <int kBits>
inline void q4_k_headers(const uint8_t* g, int n, __m512i& sm, __m256& dd) {
  constexpr int kB = kQ45_KBytes<kBits>;
  __m512i packed = _mm512_setzero_si512();
  const auto header = [&](auto ic) {
    constexpr int i = decltype(ic)::value;
    if (i >= n) return;
    packed = _mm512_inserti32x4(packed, loadu128(g + kB * i), i);  // d, dmin, 12 scale bytes
  };
  header(std::integral_constant<int, 0>());
  header(std::integral_constant<int, 1>());
  header(std::integral_constant<int, 2>());
  header(std::integral_constant<int, 3>());
  sm = q4_k_scales_mins4(packed);
  // the four (d, dmin) words, one from each lane's start
  dd = _mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), packed)));
}

// dx of blocks b0 .. b0+n−1 of a prepared row, each twice (to multiply d, dmin pairs)
inline __m256 q4_k_dx_pairs(const loom::XQ8_K& x, int b0, int n) {
  return _mm256_permutexvar_ps(_mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3),
                               _mm256_castps128_ps256(_mm_maskz_loadu_ps(static_cast<__mmask8>((1u << n) - 1), x.d + b0)));
}

// mins_acc += Σ_j m_j·Σx_j·dmin·dx over the group's blocks (sm: their scales and mins; xs32:
// the row's Σx per sub-block of 32; ddx: d·dx, dmin·dx pairs)
inline __m512 q4_k_mins_term(__m512i sm, __m512i xs32, __m256 ddx, __m512 mins_acc) {
  const __m512i mins = _mm512_shuffle_epi8(  // mins as int16, 8 per block
      sm, _mm512_broadcast_i32x4(_mm_setr_epi8(8, -1, 9, -1, 10, -1, 11, -1, 12, -1, 13, -1, 14, -1, 15, -1)));
  const __m512 mscale = _mm512_permutexvar_ps(_mm512_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3, 5, 5, 5, 5, 7, 7, 7, 7),
                                              _mm512_castps256_ps512(ddx));
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_madd_epi16(mins, xs32)), mscale, mins_acc);
}

// 64 u8 weights of Q4_K / Q5_K chunk c (values 64c .. 64c+63) of the block at blk
template <int c, int kBits>
inline __m512i q4_k_chunk(const uint8_t* blk) {
  const __m512i raw = _mm512_broadcast_i64x4(loadu256(blk + kQ45_KNibbles<kBits> + 32 * c));  // low nibbles, then high
  const __m512i q = _mm512_and_si512(_mm512_srlv_epi64(raw, _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4)), _mm512_set1_epi8(15));
  if constexpr (kBits == 4) return q;
  else return q5_k_add_fifth<2 * c, 2 * c + 1>(q, blk);
}

// Activations in "nibble order" for the one-row Q4_K / Q5_K kernel: per 128 values (chunks c,
// c + 1 of a block, each 32 low-nibble values then 32 high ones) the low-nibble values of
// both chunks, then their high ones, so that one 64-byte load of the two chunks' nibbles,
// masked, and shifted once, matches 128 activations (one shift where two were needed)
inline void nibble_order(const int8_t* q, int K, int8_t* dst) {
  for (int i = 0; i < K; i += 128) {
    const __m256i lo0 = loadu256(q + i), hi0 = loadu256(q + i + 32), lo1 = loadu256(q + i + 64), hi1 = loadu256(q + i + 96);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), lo0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i + 32), lo1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i + 64), hi0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i + 96), hi1);
  }
}

// acc += isum·d·dx of block i of the group
template <int i>
inline __m512 q4_k_block_acc(__m512i isum, __m256 ddx, __m512 acc) {
  const __m512 dscale = _mm512_permutexvar_ps(_mm512_set1_epi32(2 * i), _mm512_castps256_ps512(ddx));
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), dscale, acc);
}

// Blocks b0 .. b0+n−1 (n ≤ 4) of one weight row against R prepared rows; kWhole: n = 4.
template <int R, bool kWhole, int kBits>
inline void q4_k_group(const uint8_t* w, const loom::XQ8_K* x, int b0, int n, __m512 (&acc)[R], __m512 (&mins_acc)[R]) {
  constexpr int kB = kQ45_KBytes<kBits>;
  if (kWhole) n = 4;
  const uint8_t* g = w + kB * b0;
  __m512i sm;
  __m256 dd;
  q4_k_headers<kBits>(g, n, sm, dd);
  const __mmask32 mw = n == 4 ? ~__mmask32{0} : static_cast<__mmask32>((1u << (8 * n)) - 1);
  __m256 ddx[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    ddx[r] = _mm256_mul_ps(dd, q4_k_dx_pairs(x[r], b0, n));  // d·dx, dmin·dx per block
    mins_acc[r] = q4_k_mins_term(sm, _mm512_maskz_loadu_epi16(mw, x[r].s32 + 8 * b0), ddx[r], mins_acc[r]);
  }
  const auto block = [&](auto ic) {
    constexpr int i = decltype(ic)::value;
    if (i >= n) return;
    const uint8_t* blk = g + kB * i;
    LOOM_PREFETCH(blk);  // 144 or 176 bytes: three lines, mostly
    LOOM_PREFETCH(blk + 64);
    LOOM_PREFETCH(blk + 128);
    const __m512i smi = _mm512_shuffle_i32x4(sm, sm, i * 0x55);  // block i's lane everywhere
    __m512i isum[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) isum[r] = _mm512_setzero_si512();
    const auto chunks = [&](auto pc) {  // chunks c, c + 1
      constexpr int c = 2 * decltype(pc)::value;
      const __m512i q0 = q4_k_chunk<c, kBits>(blk), q1 = q4_k_chunk<c + 1, kBits>(blk);
      const __m512i scale = q4_k_packed_scales<2 * c, 2 * c + 2, 2 * c + 1, 2 * c + 3>(smi);
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        const int8_t* xq = x[r].q + 256 * (b0 + i) + 64 * c;
        const __m512i p = _mm512_packs_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), q0, _mm512_loadu_si512(xq)),
                                             _mm512_dpbusd_epi32(_mm512_setzero_si512(), q1, _mm512_loadu_si512(xq + 64)));
        isum[r] = _mm512_dpwssd_epi32(isum[r], p, scale);
      }
    };
    unrolled<2>(chunks);
    LOOM_UNROLL for (int r = 0; r < R; r++) acc[r] = q4_k_block_acc<i>(isum[r], ddx[r], acc[r]);
  };
  block(std::integral_constant<int, 0>());
  block(std::integral_constant<int, 1>());
  block(std::integral_constant<int, 2>());
  block(std::integral_constant<int, 3>());
}

template <int R, int kBits>
void dot_q4_k_rows512(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m512 acc[R], mins_acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) acc[r] = mins_acc[r] = _mm512_setzero_ps();
  const int nb = K / 256;
  int b0 = 0;
  for (; b0 + 4 <= nb; b0 += 4) q4_k_group<R, true, kBits>(w, x, b0, 4, acc, mins_acc);
  if (b0 < nb) q4_k_group<R, false, kBits>(w, x, b0, nb - b0, acc, mins_acc);
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum512(acc[r]) - hsum512(mins_acc[r]);
}

// NW weight rows (ws apart) against one prepared row in nibble order (see
// one_row_in_stretches): as q4_k_group with the roles of the rows swapped, each x vector
// loaded once for the NW, two chunks a step.
template <int NW, int kBits>
void dot_q4_k_wrows512(const uint8_t* w, size_t ws, const loom::XQ8_K& x, int K, float* res) {
  constexpr int kB = kQ45_KBytes<kBits>;
  __m512 acc[NW], mins_acc[NW];
  LOOM_UNROLL for (int r = 0; r < NW; r++) acc[r] = mins_acc[r] = _mm512_setzero_ps();
  const int nb = K / 256;
  for (int b0 = 0; b0 < nb; b0 += 4) {
    const int n = nb - b0 < 4 ? nb - b0 : 4;
    const __mmask32 mw = n == 4 ? ~__mmask32{0} : static_cast<__mmask32>((1u << (8 * n)) - 1);
    const __m256 dx = q4_k_dx_pairs(x, b0, n);
    const __m512i xs32 = _mm512_maskz_loadu_epi16(mw, x.s32 + 8 * b0);
    __m512i sm[NW];
    __m256 ddx[NW];
    LOOM_UNROLL for (int r = 0; r < NW; r++) {
      __m256 dd;
      q4_k_headers<kBits>(w + ws * r + kB * b0, n, sm[r], dd);
      ddx[r] = _mm256_mul_ps(dd, dx);
      mins_acc[r] = q4_k_mins_term(sm[r], xs32, ddx[r], mins_acc[r]);
    }
    const auto block = [&](auto ic) {
      constexpr int i = decltype(ic)::value;
      if (i >= n) return;
      prefetch_rows_ahead<NW>(w, ws, static_cast<size_t>(kB) * (b0 + i), kB);
      __m512i smi[NW], isum[NW];
      LOOM_UNROLL for (int r = 0; r < NW; r++) {
        smi[r] = _mm512_shuffle_i32x4(sm[r], sm[r], i * 0x55);
        isum[r] = _mm512_setzero_si512();
      }
      const auto chunks = [&](auto pc) {  // chunks c, c + 1
        constexpr int c = 2 * decltype(pc)::value;
        const __m512i xlo = _mm512_loadu_si512(x.q + 256 * (b0 + i) + 64 * c);
        const __m512i xhi = _mm512_loadu_si512(x.q + 256 * (b0 + i) + 64 * c + 64);
        LOOM_UNROLL for (int r = 0; r < NW; r++) {
          const uint8_t* blk = w + ws * r + kB * (b0 + i);
          const __m512i v = _mm512_loadu_si512(blk + kQ45_KNibbles<kBits> + 32 * c);
          __m512i lo = _mm512_and_si512(v, _mm512_set1_epi8(15));
          __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(15));
          if constexpr (kBits == 5) {
            lo = q5_k_add_fifth<2 * c, 2 * c + 2>(lo, blk);
            hi = q5_k_add_fifth<2 * c + 1, 2 * c + 3>(hi, blk);
          }
          const __m512i slo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xlo);
          const __m512i shi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, xhi);
          isum[r] = _mm512_dpwssd_epi32(isum[r], _mm512_packs_epi32(slo, shi), q4_k_packed_scales<2 * c, 2 * c + 1, 2 * c + 2, 2 * c + 3>(smi[r]));
        }
      };
      unrolled<2>(chunks);
      LOOM_UNROLL for (int r = 0; r < NW; r++) acc[r] = q4_k_block_acc<i>(isum[r], ddx[r], acc[r]);
    };
    unrolled<4>(block);
  }
  __m512 total[NW];
  LOOM_UNROLL for (int r = 0; r < NW; r++) total[r] = _mm512_sub_ps(acc[r], mins_acc[r]);
  hsum512_rows<NW>(total, res);
}

// Q4_K (kBits 4) or Q5_K (5): one activation row four weight rows at a time, else R-row kernels
template <int kBits>
void dot_q45_k(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0, int o1,
               float* out, int N) {
  if (rows == 1) {
    one_row_in_stretches(loom::xq8_k_view(reordered_rows(xa, xstride, 1, K, nibble_order), K), w, wstride, K, o0, o1, out, dot_q4_k_wrows512<4, kBits>,
                         dot_q4_k_wrows512<1, kBits>);
    return;
  }
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, loom::xq8_k_view, dot_q4_k_rows512<1, kBits>,
                  dot_q4_k_rows512<2, kBits>, dot_q4_k_rows512<3, kBits>, dot_q4_k_rows512<4, kBits>);
}

// ---- Q6_K · Q8_K: one 256-value block per step, 64 values per vector ----
//
// Half h of a block (values 128h .. 128h+127): its 64 ql bytes hold the low nibbles of
// values 0..63 and, shifted down 4, of 64..127; its 32 qh bytes, broadcast to both 256-bit
// halves and shifted per half, give the top 2 bits. Weights are d·sc_j·(q − 32) over
// sub-blocks j of 16 values: Σ sc_j·Σ q·x by maddubs + dpwssd, the −32 by Σ sc_j·Σx_j.

// int16 lanes 8i .. 8i+7 ← sc[4k + i], i < 4 (sc: the 16 scales as int16 in the low half)
template <int k>
inline __m512i q6_k_quad_scales(__m512i sc) {
  constexpr short a = 4 * k, b = 4 * k + 1, c = 4 * k + 2, d = 4 * k + 3;
  return _mm512_permutexvar_epi16(_mm512_set_epi16(d, d, d, d, d, d, d, d, c, c, c, c, c, c, c, c, b, b, b, b, b, b, b, b, a,
                                                   a, a, a, a, a, a, a),
                                  sc);
}

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

void dot_q6_k(LOOM_DOT_ARGS) {
  if (rows == 1) {
    one_row_in_stretches(xq8_k_view(xa, K), w, wstride, K, o0, o1, out, dot_q6_k_wrows512<4>, dot_q6_k_wrows512<1>);
    return;
  }
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, xq8_k_view, dot_q6_k_rows512<1>,
                  dot_q6_k_rows512<2>, dot_q6_k_rows512<3>, dot_q6_k_rows512<4>);
}

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

template <size_t n>
constexpr int count(const DotEntry (&)[n]) {
  return static_cast<int>(n);
}
constexpr DotKernel one(DotFn fn, const char* name) { return {fn, name, name}; }

constexpr DotEntry kDots[] = {
    {kQ4_K, {dot_q45_k<4>, "avx512:dot_q4_k_wrows512<4>", "avx512:dot_q4_k_rows512<4>"}},
    {kQ5_K, {dot_q45_k<5>, "avx512:dot_q4_k_wrows512<5>", "avx512:dot_q4_k_rows512<5>"}},
    {kQ6_K, {dot_q6_k, "avx512:dot_q6_k_wrows512", "avx512:dot_q6_k_rows512"}},
    {kQ3_K, one(dot_nw_r<dot_q3_k_512<4, 1>, dot_q3_k_512<1, 1>, dot_q3_k_512<1, 2>, dot_q3_k_512<1, 3>, dot_q3_k_512<1, 4>>,
                "avx512:dot_q3_k_512")},
    {kQ2_K, one(dot_nw_r<dot_q2_k_512<4, 1>, dot_q2_k_512<1, 1>, dot_q2_k_512<1, 2>, dot_q2_k_512<1, 3>, dot_q2_k_512<1, 4>>,
                "avx512:dot_q2_k_512")},
    {kIQ4_XS, {dot_iq4_xs, "avx512:dot_iq4_xs_wrows512", "avx512:dot_iq4_xs_rows"}},
};

}  // namespace

extern const KernelRegistration kAvx512DotKQuants = {kIsaAvx512, kDots, count(kDots), nullptr, 0};

}  // namespace x86
}  // namespace loom
#endif
