// AVX-512 dot kernels for Q4_K and Q5_K with Q8_K activation rows: four blocks of 256 a
// group; one activation row four weight rows at a time, a few rows R ≤ 4 at a time.
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

template <size_t n>
constexpr int count(const DotEntry (&)[n]) {
  return static_cast<int>(n);
}
constexpr DotKernel one(DotFn fn, const char* name) { return {fn, name, name}; }

constexpr DotEntry kDots[] = {
    {kQ4_K, {dot_q45_k<4>, "avx512:dot_q4_k_wrows512<4>", "avx512:dot_q4_k_rows512<4>"}},
    {kQ5_K, {dot_q45_k<5>, "avx512:dot_q4_k_wrows512<5>", "avx512:dot_q4_k_rows512<5>"}},
};
}  // namespace

extern const KernelRegistration kAvx512DotQ45K = {kIsaAvx512, kDots, count(kDots), nullptr, 0};

}  // namespace x86
}  // namespace loom
#endif
