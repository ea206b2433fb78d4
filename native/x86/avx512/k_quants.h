// Helpers shared by the AVX-512 K-quant dot kernels (dot_q45_k.cc, dot_q6_k.cc): the scale
// shuffles of "dpbusd, pack, dpwssd", and the masked add of a bit plane. Internal linkage, as
// dot256.h.
#pragma once
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace loom {
namespace x86 {
namespace {

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

// int16 lanes 8i .. 8i+7 ← sc[4k + i], i < 4 (sc: the 16 scales as int16 in the low half)
template <int k>
inline __m512i q6_k_quad_scales(__m512i sc) {
  constexpr short a = 4 * k, b = 4 * k + 1, c = 4 * k + 2, d = 4 * k + 3;
  return _mm512_permutexvar_epi16(_mm512_set_epi16(d, d, d, d, d, d, d, d, c, c, c, c, c, c, c, c, b, b, b, b, b, b, b, b, a,
                                                   a, a, a, a, a, a, a),
                                  sc);
}

}  // namespace
}  // namespace x86
}  // namespace loom
#endif
