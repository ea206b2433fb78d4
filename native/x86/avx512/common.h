// Helpers shared by the AVX-512 dot kernels (x86/avx512/dot_*.cc): horizontal sums, the
// one-row drivers (four weight rows at a time, in stretches), compile-time unrolling and the
// per-call reordering of prepared activation rows. Internal linkage, as dot256.h.
//
// A one-row decode must keep up with memory (40-50 GB/s per core here). What held the
// first versions back was per-block bookkeeping, not the multiply units: a hardware gather
// of the block scales, sign handling, Q4_K headers decoded one block at a time.
#pragma once
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "../dot256.h"

namespace loom {
namespace x86 {
namespace {

inline uint32_t load32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// one 32-bit word of p in every lane
inline __m512i bcast32(const void* p) { return _mm512_set1_epi32(static_cast<int>(load32(p))); }

inline float hsum512(__m512 v) {
  return hsum256(_mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

// IQ4_NL levels + 128 (as u8), in every 128-bit lane
inline __m512i iq4nl_table_u8() {
  return _mm512_broadcast_i32x4(_mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, -127, -115, -103, -90, -75, -59, -39, -15));
}

// f(integral_constant<int, k>()) for k = 0 .. N−1, each a constant in its copy
template <class F, int... k>
inline void unrolled_impl(F& f, std::integer_sequence<int, k...>) {
  (f(std::integral_constant<int, k>()), ...);
}
template <int N, class F>
inline void unrolled(F&& f) {
  unrolled_impl(f, std::make_integer_sequence<int, N>());
}

// ---- one activation row (decode): four weight rows at a time ----
//
// Kernels that take 4 weight rows against one prepared row load each x vector once for the
// 4, and their 4 independent chains hide the latencies that leave the vector pipes idle
// when one row is done at a time (on Zen 4 they can take two 512-bit operations a cycle).
// The 4 rows come from 4 separate stretches of the task's rows, so each is read
// sequentially: 4 adjacent rows read side by side made the hardware prefetcher lose the
// stream (a 42 MB Q4_0 matrix: 27 GB/s one row at a time, 17 adjacent, 33 in stretches).
// These kernels issue none of the far software prefetches (LOOM_PREFETCH): the hardware
// prefetchers follow 4 streams a core well, and the extra requests, each holding an L1 miss
// buffer, capped the weights at 30-35 GB/s where a plain read reached 60 (a 128 MB Q8_0
// matrix, 2 threads, alternating: 29 -> 35 GB/s in the machine's slower phase, up to 66 in
// its faster one; one-sequence decode of Qwen2.5-0.5B Q4_K_M 72 -> 78 tok/s, 1.5B 31 -> 39).
// The K-quant ones do fetch a short way ahead: see prefetch_rows_ahead.

// The K-quant four-row kernels touch, block by block, each row's bytes kRowPrefetchAhead
// further on. Their work per block group is longer than the out-of-order window, so a load
// that misses (the group's headers first) stalls the core with no later load issued, and
// when the memory is busy the hardware prefetcher falls behind. Half a KB is 3-4 blocks a
// row; 256 bytes gained less, 1 KB and more less too. One request per block and row, spread
// through the group: the group's 36-44 requests issued at once filled the miss buffers and
// made decode 25% slower. One-sequence decode in-process, 2 threads, alternating with the
// build before (3 pairs): Qwen2.5-1.5B Q4_K_M 44.9-45.9 -> 32.8-37.4 ms a token (FFN
// 30-31 -> 21-25 ms, the Q6_K LM head 9.5 -> 6.5-8.0), Llama-3.2-1B Q5_K_M 37.9-47.8 ->
// 34.6-37.8. In the native harness (a Qwen2.5-1.5B FFN as 36 calls, distances interleaved
// pass by pass, medians of 30) 512 bytes against none: Q4_K 14.1 -> 10.7 and 13.2 -> 10.2 ms,
// Q5_K 19.9 -> 16.4 and 16.4 -> 13.8, Q6_K 16.5 -> 14.5 and 19.1 -> 15.4; the best passes
// stayed where they were: what the prefetch buys is the time the memory is slow.
constexpr int kRowPrefetchAhead = 512;

template <int NW>
inline void prefetch_rows_ahead(const uint8_t* w, size_t ws, size_t at, int bytes) {
  LOOM_UNROLL for (int r = 0; r < NW; r++) {
    const char* p = reinterpret_cast<const char*>(w + ws * r + at) + kRowPrefetchAhead;
    for (int o = 0; o < bytes; o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
  }
}

// out[o] for o in [o0, o1): kernel4(first row, distance between the 4 rows, x, K, res[4]);
// the last (o1 − o0) mod 4 rows by kernel1
template <class View, class Kernel4, class Kernel1>
void one_row_in_stretches(const View& x, const uint8_t* w, size_t wstride, int K, int o0, int o1, float* out,
                          Kernel4 kernel4, Kernel1 kernel1) {
  const int q = (o1 - o0) / 4;
  for (int i = 0; i < q; i++) {
    float r4[4];
    kernel4(w + wstride * static_cast<size_t>(o0 + i), wstride * q, x, K, r4);
    for (int j = 0; j < 4; j++) out[o0 + i + j * q] = r4[j];
  }
  for (int o = o0 + 4 * q; o < o1; o++) kernel1(w + wstride * static_cast<size_t>(o), wstride, x, K, out + o);
}

// res[0..3] ← hsum of v[0..3]
inline void hsum512x4(const __m512 (&v)[4], float* res) {
  __m256 h[4];
  LOOM_UNROLL for (int n = 0; n < 4; n++)
    h[n] = _mm256_add_ps(_mm512_castps512_ps256(v[n]), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v[n]), 1)));
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(h[0], h[1]), _mm256_hadd_ps(h[2], h[3]));
  _mm_storeu_ps(res, _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
}

// res[n] ← hsum of v[n], n < NW
template <int NW>
inline void hsum512_rows(const __m512 (&v)[NW], float* res) {
  if constexpr (NW == 4) hsum512x4(v, res);
  else
    LOOM_UNROLL for (int n = 0; n < NW; n++) res[n] = hsum512(v[n]);
}

// A thread-local copy of `rows` prepared rows (xstride apart) whose K activations `order`
// rearranged (a few KB a call); the block scales and sums after them are copied as they are
inline const uint8_t* reordered_rows(const uint8_t* xa, size_t xstride, int rows, int K,
                                     void (*order)(const int8_t*, int, int8_t*)) {
  thread_local std::vector<uint8_t> copy;
  copy.resize(xstride * static_cast<size_t>(rows));
  for (int r = 0; r < rows; r++) {
    const uint8_t* src = xa + xstride * static_cast<size_t>(r);
    uint8_t* dst = copy.data() + xstride * static_cast<size_t>(r);
    order(reinterpret_cast<const int8_t*>(src), K, reinterpret_cast<int8_t*>(dst));
    std::memcpy(dst + K, src + K, xstride - K);
  }
  return copy.data();
}

}  // namespace
}  // namespace x86
}  // namespace loom
#endif
