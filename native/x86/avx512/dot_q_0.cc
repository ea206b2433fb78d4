// AVX-512 dot kernels for the types in blocks of 32 with Q8_0 activation rows: Q8_0, Q4_1,
// Q5_1 (two blocks per VNNI step, pair order), Q4_0, Q5_0, IQ4_NL (four blocks a step, quad
// order); one activation row four weight rows at a time, a few rows R ≤ 4 at a time.
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

// ---- blocks of 32 (Q8_0, Q4_0, IQ4_NL, Q5_0, Q4_1, Q5_1): two blocks per VNNI step, scales
// 16 blocks at a time ----
//
// Weights become unsigned bytes u = q + bias (Q8_0: q ^ 0x80 = q + 128; Q4_0: the nibble,
// which is q + 8; IQ4_NL: level + 128 by a table; Q5_0: the 5-bit value, q + 16; Q4_1/Q5_1:
// the nibble / 5-bit value, taken as q − 8 / q − 16 plus an offset m + 8d / m + 16d), so
// dpbusd(u, x) = Σ q·x + bias·Σx; the bias·Σx part (Σx per block is in the prepared row) is
// taken off once per row, in f32, and Σ_b offset·dx·Σx added for the types with a min (centred
// so: with q itself, d·Σ q·x and m·Σx are each many times the result, and f32 sums of them lose
// digits to the cancellation). Block scales d (and m) are gathered 16 at a
// time into one vector (word permutes for Q8_0/Q4_0 — a hardware gather is several times
// slower here — word inserts for the other strides).

enum class Q0 { kQ8_0, kQ4_0, kIQ4_NL, kQ5_0, kQ4_1, kQ5_1 };

template <Q0 T>
constexpr int kQ0Bias = T == Q0::kQ8_0 || T == Q0::kIQ4_NL ? 128 : T == Q0::kQ4_0 || T == Q0::kQ4_1 ? 8 : 16;
template <Q0 T>
constexpr int kQ0Stride = T == Q0::kQ8_0 ? 34 : T == Q0::kQ4_0 || T == Q0::kIQ4_NL ? 18 : T == Q0::kQ5_0 ? 22 : T == Q0::kQ4_1 ? 20 : 24;
template <Q0 T>
constexpr bool kQ0Min = T == Q0::kQ4_1 || T == Q0::kQ5_1;
// byte offsets in a block of the nibbles and (Q5_0/Q5_1) of the 32 high bits
template <Q0 T>
constexpr int kQ0Nibbles = T == Q0::kQ5_0 ? 6 : T == Q0::kQ4_1 ? 4 : T == Q0::kQ5_1 ? 8 : 2;
template <Q0 T>
constexpr int kQ0High = T == Q0::kQ5_0 ? 2 : 4;

// f32 d of 16 whole Q8_0 blocks at p: d sits at word 17·i of the 544 bytes, picked out of
// eight 64-byte loads by four two-source word permutes.
inline __m512 q8_0_group_d16(const uint8_t* p) {
  const __m512i idx = _mm512_setr_epi32(0 | (17 << 16), 34 | (51 << 16), 4 | (21 << 16), 38 | (55 << 16),
                                        8 | (25 << 16), 42 | (59 << 16), 12 | (29 << 16), 46 | (63 << 16),
                                        0, 0, 0, 0, 0, 0, 0, 0);
  const auto two = [&](int off) {
    return _mm512_permutex2var_epi16(_mm512_loadu_si512(p + off), idx, _mm512_loadu_si512(p + off + 64));
  };
  __m512i h = two(0);
  h = _mm512_mask_mov_epi16(h, 0x00F0, two(128));
  h = _mm512_mask_mov_epi16(h, 0x0F00, two(256));
  h = _mm512_mask_mov_epi16(h, 0xF000, two(384));
  return _mm512_cvtph_ps(_mm512_castsi512_si256(h));
}

// The same for 16 whole Q4_0 blocks at p: d at word 9·i of the 288 bytes; blocks 0..7 from
// words 0..63, blocks 8..15 from words 72..135, each by one two-source word permute.
inline __m512 q4_0_group_d16(const uint8_t* p) {
  const __m512i idx = _mm512_setr_epi32(0 | (9 << 16), 18 | (27 << 16), 36 | (45 << 16), 54 | (63 << 16),
                                        0 | (9 << 16), 18 | (27 << 16), 36 | (45 << 16), 54 | (63 << 16),
                                        0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i lo = _mm512_permutex2var_epi16(_mm512_loadu_si512(p), idx, _mm512_loadu_si512(p + 64));
  const __m512i hi = _mm512_permutex2var_epi16(_mm512_loadu_si512(p + 144), idx, _mm512_loadu_si512(p + 208));
  return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_mask_mov_epi16(lo, 0xFF00, hi)));
}

// the f16 words at byte `off` of 8 blocks `stride` bytes apart (word inserts)
template <int kStride, int off>
inline __m128i f16_words8(const uint8_t* p) {
  __m128i v = _mm_setzero_si128();
  const auto word = [&](int i) {
    uint16_t w;
    std::memcpy(&w, p + kStride * i + off, 2);
    return static_cast<int>(w);
  };
  v = _mm_insert_epi16(v, word(0), 0); v = _mm_insert_epi16(v, word(1), 1);
  v = _mm_insert_epi16(v, word(2), 2); v = _mm_insert_epi16(v, word(3), 3);
  v = _mm_insert_epi16(v, word(4), 4); v = _mm_insert_epi16(v, word(5), 5);
  v = _mm_insert_epi16(v, word(6), 6); v = _mm_insert_epi16(v, word(7), 7);
  return v;
}

// f16 at byte `off` of each of 16 blocks `stride` bytes apart, as f32
template <int kStride, int off>
inline __m512 group_f16_16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_set_m128i(f16_words8<kStride, off>(p + 8 * kStride), f16_words8<kStride, off>(p)));
}

// the same for 8 blocks, as f32 in lanes 0..7 (8..15 zero)
template <int kStride, int off>
inline __m512 group_f16_8(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_zextsi128_si256(f16_words8<kStride, off>(p)));
}

template <Q0 T>
inline __m512 q_0_group_d16(const uint8_t* p) {
  if (T == Q0::kQ8_0) return q8_0_group_d16(p);
  if (T == Q0::kQ4_0 || T == Q0::kIQ4_NL) return q4_0_group_d16(p);
  return group_f16_16<kQ0Stride<T>, 0>(p);
}

// lanes 0..7 ← s[2k], lanes 8..15 ← s[2k + 1]
template <int k>
inline __m512 pair_scale(__m512 s) {
  return _mm512_permutexvar_ps(_mm512_setr_epi32(2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k + 1,
                                                 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1,
                                                 2 * k + 1),
                               s);
}

// u8 weights (q + bias) of blocks b, b+1 at blk, each block's 32 values in order; `one`: only
// block b (upper half zero).
template <Q0 T>
inline __m512i q_0_pair(const uint8_t* blk, bool one) {
  constexpr int kS = kQ0Stride<T>;
  if (T == Q0::kQ8_0) {
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
    if (one) return _mm512_zextsi256_si512(_mm256_xor_si256(loadu256(blk + 2), _mm512_castsi512_si256(bias)));
    return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(loadu256(blk + 2)), loadu256(blk + 36), 1), bias);
  }
  constexpr int kN = kQ0Nibbles<T>;
  const __m256i v = one ? _mm256_castsi128_si256(loadu128(blk + kN))
                        : _mm256_inserti128_si256(_mm256_castsi128_si256(loadu128(blk + kN)), loadu128(blk + kS + kN), 1);
  // [A, A, B, B], then the upper copy of each shifted down a nibble: [loA, hiA, loB, hiB]
  const __m512i v4 = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), _mm512_castsi256_si512(v));
  __m512i u = _mm512_and_si512(_mm512_srlv_epi64(v4, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4)), _mm512_set1_epi8(15));
  if (T == Q0::kIQ4_NL) u = _mm512_shuffle_epi8(iq4nl_table_u8(), u);
  if (T == Q0::kQ5_0 || T == Q0::kQ5_1) {  // bit j of qh is the fifth bit of value j
    uint32_t ha, hb = 0;
    std::memcpy(&ha, blk + kQ0High<T>, 4);
    if (!one) std::memcpy(&hb, blk + kS + kQ0High<T>, 4);
    u = _mm512_or_si512(u, _mm512_maskz_mov_epi8(static_cast<__mmask64>(ha) | (static_cast<__mmask64>(hb) << 32), _mm512_set1_epi8(16)));
  }
  return one ? _mm512_zextsi256_si512(_mm512_castsi512_si256(u)) : u;
}

// Blocks b0 .. b0+kN−1 (kN = 16, or 8: half a group, the scales in lanes 0..7) of one weight
// row against R prepared rows; mcorr: Σ m·dx·Σx (types with a min).
template <int R, Q0 T, int kN = 16>
inline void q_0_group(const uint8_t* w, const loom::XQ8_0* x, int b0, __m512 (&acc)[4][R], __m512 (&corr)[R], __m512 (&mcorr)[R]) {
  static_assert(kN == 16 || kN == 8);
  constexpr int kStride = kQ0Stride<T>;
  constexpr __mmask16 kLanes = kN == 16 ? 0xFFFF : 0x00FF;
  const __m512 d = kN == 16 ? q_0_group_d16<T>(w + kStride * b0) : group_f16_8<kStride, 0>(w + kStride * b0);
  __m512 m = _mm512_setzero_ps();
  if (kQ0Min<T>) {
    const __m512 mins = kN == 16 ? group_f16_16<kStride, 2>(w + kStride * b0) : group_f16_8<kStride, 2>(w + kStride * b0);
    m = _mm512_fmadd_ps(d, _mm512_set1_ps(kQ0Bias<T>), mins);
  }
  __m512 s[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    const __m512 dx = _mm512_maskz_loadu_ps(kLanes, x[r].d + b0);
    const __m512 sx = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(kLanes, x[r].s + b0));
    s[r] = _mm512_mul_ps(d, dx);
    corr[r] = _mm512_fmadd_ps(s[r], sx, corr[r]);
    if (kQ0Min<T>) mcorr[r] = _mm512_fmadd_ps(_mm512_mul_ps(m, dx), sx, mcorr[r]);
  }
  // one step per pair of blocks; k is a constant in every copy (pair_scale<k>)
  const auto step = [&](auto kc) {
    constexpr int k = decltype(kc)::value;
    const int b = b0 + 2 * k;
    LOOM_PREFETCH(w + kStride * b);  // 36..68 bytes a pair
    const __m512i u = q_0_pair<T>(w + kStride * b, false);
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m512 p = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u, _mm512_loadu_si512(x[r].q + 32 * b)));
      acc[k & 3][r] = _mm512_fmadd_ps(p, pair_scale<k>(s[r]), acc[k & 3][r]);
    }
  };
  step(std::integral_constant<int, 0>());
  step(std::integral_constant<int, 1>());
  step(std::integral_constant<int, 2>());
  step(std::integral_constant<int, 3>());
  if constexpr (kN == 16) {
    step(std::integral_constant<int, 4>());
    step(std::integral_constant<int, 5>());
    step(std::integral_constant<int, 6>());
    step(std::integral_constant<int, 7>());
  }
}

// The last n < 8 blocks, a pair at a time with scalar scales: a group's scale vector (a
// stack round trip for a partial group) cost more here than a whole group of 16 blocks, and
// most rows of small models (K = 576: 16 + 2 blocks) end in such a tail. The bias·Σx term
// comes off each block's integer sum here (lane 0 of each half), exactly; the offset term is
// summed into mtail.
template <int R, Q0 T>
inline void q_0_tail(const uint8_t* w, const loom::XQ8_0* x, int b0, int n, __m512 (&acc)[4][R], float (&mtail)[R]) {
  constexpr int kStride = kQ0Stride<T>;
  constexpr int kBias = kQ0Bias<T>;
  for (int k = 0; 2 * k < n; k++) {
    const int b = b0 + 2 * k;
    const bool one = 2 * k + 1 == n;
    const uint8_t* blk = w + kStride * b;
    LOOM_PREFETCH(blk);  // as the groups do: a tail is up to 40% of a short row's bytes
    const float da = f16_scalar(blk), db = one ? 0.f : f16_scalar(blk + kStride);
    const __m512i u = q_0_pair<T>(blk, one);
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const int8_t* xq = x[r].q + 32 * b;
      const __m512i xv = one ? _mm512_zextsi256_si512(loadu256(xq)) : _mm512_loadu_si512(xq);
      const __m512i bias = _mm512_mask_set1_epi32(_mm512_maskz_set1_epi32(0x0001, kBias * x[r].s[b]), 0x0100,
                                                  one ? 0 : kBias * x[r].s[b + 1]);
      const __m512i dot = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u, xv), bias);
      const float sa = da * x[r].d[b], sb = one ? 0.f : db * x[r].d[b + 1];
      const __m512 scale = _mm512_insertf32x8(_mm512_set1_ps(sa), _mm256_set1_ps(sb), 1);
      acc[k & 3][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[k & 3][r]);
      if (kQ0Min<T>) {  // (m + bias·d)·dx·Σx
        mtail[r] += (f16_scalar(blk + 2) + kBias * da) * x[r].d[b] * static_cast<float>(x[r].s[b]);
        if (!one) mtail[r] += (f16_scalar(blk + kStride + 2) + kBias * db) * x[r].d[b + 1] * static_cast<float>(x[r].s[b + 1]);
      }
    }
  }
}

template <int R, Q0 T>
void dot_q_0_rows512(const uint8_t* w, const loom::XQ8_0* x, int K, float* res) {
  const int nb = K / 32;
  __m512 acc[4][R], corr[R], mcorr[R];
  float mtail[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    acc[0][r] = acc[1][r] = acc[2][r] = acc[3][r] = corr[r] = mcorr[r] = _mm512_setzero_ps();
    mtail[r] = 0;
  }
  int b0 = 0;
  for (; b0 + 16 <= nb; b0 += 16) q_0_group<R, T>(w, x, b0, acc, corr, mcorr);
  if (b0 + 8 <= nb) {  // half a group: K = 896's 28 blocks are 16 + 8 + a tail of 4
    q_0_group<R, T, 8>(w, x, b0, acc, corr, mcorr);
    b0 += 8;
  }
  if (b0 < nb) q_0_tail<R, T>(w, x, b0, nb - b0, acc, mtail);
  constexpr float kBias = kQ0Bias<T>;
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    // one horizontal sum a row (a short row's fixed cost): the bias and offset terms come off lane-wise
    __m512 a = _mm512_add_ps(_mm512_add_ps(acc[0][r], acc[1][r]), _mm512_add_ps(acc[2][r], acc[3][r]));
    a = _mm512_fnmadd_ps(_mm512_set1_ps(kBias), corr[r], a);
    if (kQ0Min<T>) a = _mm512_add_ps(a, mcorr[r]);
    res[r] = hsum512(a);
    if (kQ0Min<T>) res[r] += mtail[r];
  }
}

// group(integral_constant<int, kN>(), b0) over a row's nb blocks of 32: runs of 16, then one of
// 8, then (kSmallest = 4) one of 4; returns where the runs end (the rest is a tail)
template <int kSmallest, class Group>
inline int block_groups(int nb, Group&& group) {
  int b0 = 0;
  for (; b0 + 16 <= nb; b0 += 16) group(std::integral_constant<int, 16>(), b0);
  if (b0 + 8 <= nb) {
    group(std::integral_constant<int, 8>(), b0);
    b0 += 8;
  }
  if constexpr (kSmallest == 4) {
    if (b0 + 4 <= nb) {
      group(std::integral_constant<int, 4>(), b0);
      b0 += 4;
    }
  }
  return b0;
}

// dx and Σx (as f32) of the kN blocks from b0 of a prepared row (lanes kN.. zero)
template <int kN>
inline void group_x_terms(const loom::XQ8_0& x, int b0, __m512& dx, __m512& sx) {
  constexpr __mmask16 kLanes = static_cast<__mmask16>((1u << kN) - 1);
  dx = _mm512_maskz_loadu_ps(kLanes, x.d + b0);
  sx = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(kLanes, x.s + b0));
}

// the blocks' scales d·dx; their bias term Σ d·dx·Σx goes into corr
inline __m512 group_scales(__m512 d, __m512 dx, __m512 sx, __m512& corr) {
  const __m512 s = _mm512_mul_ps(d, dx);
  corr = _mm512_fmadd_ps(s, sx, corr);
  return s;
}

// One weight row's result vector in the four-row kernels: its last nb − b0 blocks (fewer than
// a group; pair order, natural x) added in, then acc0 + acc1 − bias·Σ s·Σx (+ the offset term
// of types with a min); tail: those blocks' offset term, as a scalar
template <Q0 T>
inline __m512 q_0_row_total(const uint8_t* w, const loom::XQ8_0& x, int b0, int nb, __m512 acc0, __m512 acc1, __m512 corr,
                            __m512 mcorr, float& tail) {
  tail = 0;
  if (b0 < nb) {
    __m512 tacc[4][1] = {{_mm512_setzero_ps()}, {_mm512_setzero_ps()}, {_mm512_setzero_ps()}, {_mm512_setzero_ps()}};
    float mtail[1] = {0};
    q_0_tail<1, T>(w, &x, b0, nb - b0, tacc, mtail);
    acc0 = _mm512_add_ps(acc0, _mm512_add_ps(_mm512_add_ps(tacc[0][0], tacc[1][0]), _mm512_add_ps(tacc[2][0], tacc[3][0])));
    tail = mtail[0];
  }
  const __m512 total = _mm512_fnmadd_ps(_mm512_set1_ps(kQ0Bias<T>), corr, _mm512_add_ps(acc0, acc1));
  return kQ0Min<T> ? _mm512_add_ps(total, mcorr) : total;
}

// NW weight rows (ws apart) against one prepared row, blocks of 32 in pair order (Q8_0, Q5_0,
// Q4_1, Q5_1): q_0_group with the roles of the rows swapped
template <int NW, Q0 T>
void dot_q_0_wrows512(const uint8_t* w, size_t ws, const loom::XQ8_0& x, int K, float* res) {
  constexpr int kStride = kQ0Stride<T>;
  const int nb = K / 32;
  __m512 acc[NW][2], corr[NW], mcorr[NW];
  LOOM_UNROLL for (int n = 0; n < NW; n++) acc[n][0] = acc[n][1] = corr[n] = mcorr[n] = _mm512_setzero_ps();
  const auto group = [&](auto knc, int b0) {
    constexpr int kN = decltype(knc)::value;
    __m512 dx, sx, s[NW];
    group_x_terms<kN>(x, b0, dx, sx);
    LOOM_UNROLL for (int n = 0; n < NW; n++) {
      const uint8_t* g = w + ws * n + kStride * b0;
      const __m512 d = kN == 16 ? q_0_group_d16<T>(g) : group_f16_8<kStride, 0>(g);
      s[n] = group_scales(d, dx, sx, corr[n]);
      if (kQ0Min<T>) {
        const __m512 mins = kN == 16 ? group_f16_16<kStride, 2>(g) : group_f16_8<kStride, 2>(g);
        mcorr[n] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_fmadd_ps(d, _mm512_set1_ps(kQ0Bias<T>), mins), dx), sx, mcorr[n]);
      }
    }
    const auto step = [&](auto kc) {
      constexpr int k = decltype(kc)::value;
      if (2 * k >= kN) return;
      const int b = b0 + 2 * k;
      const __m512i xv = _mm512_loadu_si512(x.q + 32 * b);
      LOOM_UNROLL for (int n = 0; n < NW; n++) {
        const uint8_t* blk = w + ws * n + kStride * b;
        const __m512i u = q_0_pair<T>(blk, false);
        const __m512 p = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u, xv));
        acc[n][k & 1] = _mm512_fmadd_ps(p, pair_scale<k>(s[n]), acc[n][k & 1]);
      }
    };
    unrolled<8>(step);
  };
  const int b0 = block_groups<8>(nb, group);
  __m512 total[NW];
  float tail[NW];
  LOOM_UNROLL for (int n = 0; n < NW; n++)
    total[n] = q_0_row_total<T>(w + ws * n, x, b0, nb, acc[n][0], acc[n][1], corr[n], mcorr[n], tail[n]);
  hsum512_rows<NW>(total, res);
  if (kQ0Min<T>) LOOM_UNROLL for (int n = 0; n < NW; n++) res[n] += tail[n];
}

// ---- Q4_0 and IQ4_NL: four blocks a step ----
//
// A block's 16 bytes hold its values 0..15 in their low nibbles and 16..31 in their high
// ones. One word permute of the 72 bytes of four blocks puts 4 bytes of each block in every
// 128-bit lane, block D in dword D; masking and shifting then give two vectors of u8
// weights in which every dword belongs to one block. The activations are stored in the same
// order (`quad_order`, once per call), so one convert and one FMA cover four blocks, and a
// lane broadcast gives their four scales (pair order: two of each and a cross-lane permute).
// One row of K = 1152 (Gemma's FFN input and LM head), one thread, weights in L2: 4.2
// cycles a block in pair order one weight row at a time, 2.2 in quad order four at a time.

// q in quad order: in each run of 4 whole blocks (128 values), dword 4L + D of the first 64
// bytes is values 4L .. 4L+3 of block D, and of the next 64 bytes values 16 + 4L .. 19 + 4L;
// the last K/32 mod 4 blocks stay as they are
inline void quad_order(const int8_t* q, int K, int8_t* dst) {
  const int quads = K / 128;
  // dword 4L + D of the low half ← dword 8D + L of the 128 bytes; of the high half ← 8D + 4 + L
  const __m512i lo_idx = _mm512_setr_epi32(0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27);
  const __m512i hi_idx = _mm512_add_epi32(lo_idx, _mm512_set1_epi32(4));
  for (int i = 0; i < quads; i++) {
    const __m512i a = _mm512_loadu_si512(q + 128 * i), b = _mm512_loadu_si512(q + 128 * i + 64);
    _mm512_storeu_si512(dst + 128 * i, _mm512_permutex2var_epi32(a, lo_idx, b));
    _mm512_storeu_si512(dst + 128 * i + 64, _mm512_permutex2var_epi32(a, hi_idx, b));
  }
  std::memcpy(dst + 128 * quads, q + 128 * quads, K - 128 * quads);
}

// word 8L + 2D + h (lane L, dword D, half h) ← nibble bytes 4L + 2h, +1 of block D: byte
// stride·D + nibbles + 4L + 2h of the quad (always even), from A = its bytes 0..63 or B =
// bytes 4·stride − 64 .. 4·stride − 1
template <Q0 T>
inline __m512i quad_word_index() {
  constexpr int kS = kQ0Stride<T>, kB = 4 * kS - 64;
  alignas(64) int16_t idx[32];
  for (int L = 0; L < 4; L++)
    for (int D = 0; D < 4; D++)
      for (int h = 0; h < 2; h++) {
        const int byte = kS * D + kQ0Nibbles<T> + 4 * L + 2 * h;
        idx[8 * L + 2 * D + h] = static_cast<int16_t>(byte < 64 ? byte / 2 : 32 + (byte - kB) / 2);
      }
  return _mm512_load_si512(idx);
}

// Q5_0: the fifth bits of blocks b .. b+3 as byte masks in quad order (bit 16L + 4D + e of
// lo ← bit 4L + e of block D's qh, of hi ← bit 16 + 4L + e), from the quad's bytes 0..63 (a)
// and 4·stride − 64 .. 4·stride − 1 (b): one word permute puts block D's qh in dword D of every
// lane, a byte shuffle puts the qh byte that holds lane L's bits in all four bytes of that dword,
// and a test against the bit each byte stands for makes the mask. (The bit deposits this
// replaced, two a block and half, left it at 85 GFLOP/s where it now runs 99: a 896 x 4864
// one-row matmul from L3, 2 threads, alternating.)
inline void q5_0_quad_high(__m512i a, __m512i b, __mmask64& lo, __mmask64& hi) {
  // qh of block D at byte 22D + 2: words 1, 12, 23 of a, and word 22 of b for D = 3
  const __m512i qh = _mm512_permutex2var_epi16(
      a, _mm512_broadcast_i32x4(_mm_setr_epi16(1, 2, 12, 13, 23, 24, 32 + 22, 32 + 23)), b);
  // lane L: byte 4D + e ← byte 4D + L/2 (lo) or 4D + 2 + L/2 (hi); bit 4(L mod 2) + e
  const __m128i l0 = _mm_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12);
  const __m512i lo_idx = _mm512_add_epi8(_mm512_broadcast_i32x4(l0), _mm512_setr_epi64(0, 0, 0, 0, 0x0101010101010101,
                                                                                       0x0101010101010101, 0x0101010101010101,
                                                                                       0x0101010101010101));
  const __m512i hi_idx = _mm512_add_epi8(lo_idx, _mm512_set1_epi8(2));
  const __m512i bits = _mm512_setr_epi64(0x0804020108040201, 0x0804020108040201, 0x8040201080402010, 0x8040201080402010,
                                         0x0804020108040201, 0x0804020108040201, 0x8040201080402010, 0x8040201080402010);
  lo = _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, lo_idx), bits);
  hi = _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, hi_idx), bits);
}

// u8 weights (nibble, IQ4_NL level + 128, or Q5_0's 5-bit value) of blocks b .. b+3 at blk,
// in quad order: lo holds values 0..15 of each block, hi values 16..31 (idx:
// quad_word_index<T>())
template <Q0 T>
inline void q_0_quad(const uint8_t* blk, __m512i idx, __m512i& lo, __m512i& hi) {
  static_assert(T == Q0::kQ4_0 || T == Q0::kIQ4_NL || T == Q0::kQ5_0);
  const __m512i a = _mm512_loadu_si512(blk), b = _mm512_loadu_si512(blk + 4 * kQ0Stride<T> - 64);
  const __m512i v = _mm512_permutex2var_epi16(a, idx, b);
  const __m512i m4 = _mm512_set1_epi8(15);
  lo = _mm512_and_si512(v, m4);
  hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  if (T == Q0::kIQ4_NL) {
    lo = _mm512_shuffle_epi8(iq4nl_table_u8(), lo);
    hi = _mm512_shuffle_epi8(iq4nl_table_u8(), hi);
  }
  if (T == Q0::kQ5_0) {
    __mmask64 klo, khi;
    q5_0_quad_high(a, b, klo, khi);
    const __m512i v16 = _mm512_set1_epi8(16);
    lo = _mm512_mask_add_epi8(lo, klo, lo, v16);
    hi = _mm512_mask_add_epi8(hi, khi, hi, v16);
  }
}

// every 128-bit lane ← s[4k .. 4k+3], the scales of the four blocks of quad k
template <int k>
inline __m512 quad_scale(__m512 s) {
  return _mm512_shuffle_f32x4(s, s, k * 0x55);
}

// the f16 at byte 0 of 4 blocks kStride bytes apart, as f32 in lanes 0..3 (4..15 zero)
template <int kStride>
inline __m512 f16_4(const uint8_t* p) {
  uint16_t h[4];
  for (int i = 0; i < 4; i++) std::memcpy(&h[i], p + kStride * i, 2);
  return _mm512_cvtph_ps(_mm256_zextsi128_si256(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(h))));
}

// the f16 scales of kN = 16, 8 or 4 blocks at g as f32 (lanes kN.. zero)
template <Q0 T, int kN>
inline __m512 quad_group_d(const uint8_t* g) {
  if constexpr (kN == 16) return q_0_group_d16<T>(g);
  else if constexpr (kN == 8) return group_f16_8<kQ0Stride<T>, 0>(g);
  else return f16_4<kQ0Stride<T>>(g);
}

// Blocks b0 .. b0+kN−1 (kN = 16, 8 or 4; a multiple of 4 from the row start) of one weight
// row against R prepared rows in quad order.
template <int R, Q0 T, int kN>
inline void q_0_quad_group(const uint8_t* w, const loom::XQ8_0* x, int b0, __m512 (&acc)[4][R], __m512 (&corr)[R]) {
  static_assert(kN == 16 || kN == 8 || kN == 4);
  const __m512i idx = quad_word_index<T>();
  const __m512 d = quad_group_d<T, kN>(w + kQ0Stride<T> * b0);
  __m512 s[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    __m512 dx, sx;
    group_x_terms<kN>(x[r], b0, dx, sx);
    s[r] = group_scales(d, dx, sx, corr[r]);
  }
  const auto step = [&](auto kc) {
    constexpr int k = decltype(kc)::value;
    if (4 * k >= kN) return;
    const int b = b0 + 4 * k;
    LOOM_PREFETCH(w + kQ0Stride<T> * b);  // 72 or 88 bytes a quad
    LOOM_PREFETCH(w + kQ0Stride<T> * b + 64);
    __m512i lo, hi;
    q_0_quad<T>(w + kQ0Stride<T> * b, idx, lo, hi);
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const int8_t* xq = x[r].q + 32 * b;
      const __m512i p = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_loadu_si512(xq)), hi,
                                            _mm512_loadu_si512(xq + 64));
      acc[k][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), quad_scale<k>(s[r]), acc[k][r]);
    }
  };
  unrolled<4>(step);
}

// x: prepared rows with q in quad order
template <int R, Q0 T>
void dot_q_0_quad_rows512(const uint8_t* w, const loom::XQ8_0* x, int K, float* res) {
  const int nb = K / 32;
  __m512 acc[4][R], corr[R];
  float mtail[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    acc[0][r] = acc[1][r] = acc[2][r] = acc[3][r] = corr[r] = _mm512_setzero_ps();
    mtail[r] = 0;
  }
  const int b0 = block_groups<4>(nb, [&](auto knc, int g0) { q_0_quad_group<R, T, decltype(knc)::value>(w, x, g0, acc, corr); });
  if (b0 < nb) q_0_tail<R, T>(w, x, b0, nb - b0, acc, mtail);  // in natural order
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    __m512 a = _mm512_add_ps(_mm512_add_ps(acc[0][r], acc[1][r]), _mm512_add_ps(acc[2][r], acc[3][r]));
    res[r] = hsum512(_mm512_fnmadd_ps(_mm512_set1_ps(kQ0Bias<T>), corr[r], a));
  }
}

// NW weight rows (ws apart) against one prepared row in quad order
template <int NW, Q0 T>
void dot_q_0_quad_wrows512(const uint8_t* w, size_t ws, const loom::XQ8_0& x, int K, float* res) {
  const int nb = K / 32;
  __m512 acc[NW][2], corr[NW];
  LOOM_UNROLL for (int n = 0; n < NW; n++) acc[n][0] = acc[n][1] = corr[n] = _mm512_setzero_ps();
  const __m512i idx = quad_word_index<T>();
  const auto group = [&](auto knc, int b0) {
    constexpr int kN = decltype(knc)::value;
    __m512 dx, sx, s[NW];
    group_x_terms<kN>(x, b0, dx, sx);
    LOOM_UNROLL for (int n = 0; n < NW; n++) s[n] = group_scales(quad_group_d<T, kN>(w + ws * n + kQ0Stride<T> * b0), dx, sx, corr[n]);
    const auto step = [&](auto kc) {
      constexpr int k = decltype(kc)::value;
      if (4 * k >= kN) return;
      const int b = b0 + 4 * k;
      const __m512i x0 = _mm512_loadu_si512(x.q + 32 * b), x1 = _mm512_loadu_si512(x.q + 32 * b + 64);
      LOOM_UNROLL for (int n = 0; n < NW; n++) {
        const uint8_t* blk = w + ws * n + kQ0Stride<T> * b;
        __m512i lo, hi;
        q_0_quad<T>(blk, idx, lo, hi);
        const __m512i p = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, x0), hi, x1);
        acc[n][k & 1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), quad_scale<k>(s[n]), acc[n][k & 1]);
      }
    };
    unrolled<4>(step);
  };
  const int b0 = block_groups<4>(nb, group);
  __m512 total[NW];
  LOOM_UNROLL for (int n = 0; n < NW; n++) {
    float unused;  // no min in these types
    total[n] = q_0_row_total<T>(w + ws * n, x, b0, nb, acc[n][0], acc[n][1], corr[n], _mm512_setzero_ps(), unused);
  }
  hsum512_rows<NW>(total, res);
}

// dot_rows_driver over copies of the prepared rows with q in quad order (a few KB a call)
template <Q0 T>
void dot_quad_driver(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0, int o1,
                     float* out, int N) {
  const uint8_t* copy = reordered_rows(xa, xstride, rows, K, quad_order);
  if (rows == 1) {
    one_row_in_stretches(loom::xq8_0_view(copy, K), w, wstride, K, o0, o1, out, dot_q_0_quad_wrows512<4, T>,
                         dot_q_0_quad_wrows512<1, T>);
    return;
  }
  dot_rows_driver(copy, xstride, rows, w, wstride, K, o0, o1, out, N, loom::xq8_0_view, dot_q_0_quad_rows512<1, T>,
                  dot_q_0_quad_rows512<2, T>, dot_q_0_quad_rows512<3, T>, dot_q_0_quad_rows512<4, T>);
}

#define LOOM_DOT_ARGS                                                                                              \
  const uint8_t *xa, size_t xstride, int rows, const uint8_t *w, size_t wstride, int K, int o0, int o1, float *out, \
      int N

// Q8_0, Q4_1, Q5_1: one activation row four weight rows at a time, else R-row kernels
template <Q0 T>
void dot_q_0(LOOM_DOT_ARGS) {
  if (rows == 1) {
    one_row_in_stretches(xq8_0_view(xa, K), w, wstride, K, o0, o1, out, dot_q_0_wrows512<4, T>, dot_q_0_wrows512<1, T>);
    return;
  }
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, xq8_0_view, dot_q_0_rows512<1, T>,
                  dot_q_0_rows512<2, T>, dot_q_0_rows512<3, T>, dot_q_0_rows512<4, T>);
}
#undef LOOM_DOT_ARGS

template <size_t n>
constexpr int count(const DotEntry (&)[n]) {
  return static_cast<int>(n);
}
constexpr DotKernel one(DotFn fn, const char* name) { return {fn, name, name}; }

constexpr DotEntry kDots[] = {
    {kQ8_0, {dot_q_0<Q0::kQ8_0>, "avx512:dot_q_0_wrows512<Q8_0>", "avx512:dot_q_0_rows512<Q8_0>"}},
    {kQ4_1, {dot_q_0<Q0::kQ4_1>, "avx512:dot_q_0_wrows512<Q4_1>", "avx512:dot_q_0_rows512<Q4_1>"}},
    {kQ5_1, {dot_q_0<Q0::kQ5_1>, "avx512:dot_q_0_wrows512<Q5_1>", "avx512:dot_q_0_rows512<Q5_1>"}},
    {kQ4_0, {dot_quad_driver<Q0::kQ4_0>, "avx512:dot_q_0_quad_wrows512<Q4_0>", "avx512:dot_q_0_quad_rows512<Q4_0>"}},
    {kIQ4_NL, {dot_quad_driver<Q0::kIQ4_NL>, "avx512:dot_q_0_quad_wrows512<IQ4_NL>", "avx512:dot_q_0_quad_rows512<IQ4_NL>"}},
    {kQ5_0, {dot_quad_driver<Q0::kQ5_0>, "avx512:dot_q_0_quad_wrows512<Q5_0>", "avx512:dot_q_0_quad_rows512<Q5_0>"}},
};

}  // namespace

extern const KernelRegistration kAvx512DotQ0 = {kIsaAvx512, kDots, count(kDots), nullptr, 0};

}  // namespace x86
}  // namespace loom
#endif
