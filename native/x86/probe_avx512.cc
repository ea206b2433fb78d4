// AVX-512 probe loops (built with the AVX-512 flags; called only when use_avx512()).
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "../probe.h"
#include "matmul_x86.h"

namespace loom {
namespace x86 {

// 12 independent chains: enough to cover FMA latency × throughput on current x86 cores.
float fma_chains_avx512(int64_t iters) {
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
  __m512 a0 = _mm512_set1_ps(1.0f), a1 = _mm512_set1_ps(1.1f), a2 = _mm512_set1_ps(1.2f), a3 = _mm512_set1_ps(1.3f);
  __m512 a4 = _mm512_set1_ps(1.4f), a5 = _mm512_set1_ps(1.5f), a6 = _mm512_set1_ps(1.6f), a7 = _mm512_set1_ps(1.7f);
  __m512 a8 = _mm512_set1_ps(1.8f), a9 = _mm512_set1_ps(1.9f), a10 = _mm512_set1_ps(2.0f), a11 = _mm512_set1_ps(2.1f);
  for (int64_t i = 0; i < iters; i++) {
    a0 = _mm512_fmadd_ps(a0, m, c); a1 = _mm512_fmadd_ps(a1, m, c); a2 = _mm512_fmadd_ps(a2, m, c);
    a3 = _mm512_fmadd_ps(a3, m, c); a4 = _mm512_fmadd_ps(a4, m, c); a5 = _mm512_fmadd_ps(a5, m, c);
    a6 = _mm512_fmadd_ps(a6, m, c); a7 = _mm512_fmadd_ps(a7, m, c); a8 = _mm512_fmadd_ps(a8, m, c);
    a9 = _mm512_fmadd_ps(a9, m, c); a10 = _mm512_fmadd_ps(a10, m, c); a11 = _mm512_fmadd_ps(a11, m, c);
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                           _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  return _mm512_reduce_add_ps(s);
}

// Σ of n uint64 (n a multiple of 32 is fastest; the tail is summed scalar), prefetching
// `ahead` bytes ahead when ahead > 0.
float int8_chains_avx512(int64_t iters) {
  // each chain has its own operands; the accumulator chain keeps every round
  __m512i u = _mm512_set1_epi8(3), w[kInt8Chains], acc[kInt8Chains];
  for (int k = 0; k < kInt8Chains; k++) {
    w[k] = _mm512_set1_epi8(static_cast<char>(k - 4));
    acc[k] = _mm512_setzero_si512();
  }
  for (int64_t i = 0; i < iters; i++) {
    asm volatile("" : "+v"(u));
    LOOM_UNROLL for (int k = 0; k < kInt8Chains; k++) acc[k] = _mm512_dpbusd_epi32(acc[k], u, w[k]);
  }
  __m512i s = acc[0];
  for (int k = 1; k < kInt8Chains; k++) s = _mm512_add_epi32(s, acc[k]);
  return static_cast<float>(_mm512_reduce_add_epi32(s));
}

uint64_t read_sum_avx512(const uint64_t* p, int64_t n, int64_t ahead) {
  __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  const char* c = reinterpret_cast<const char*>(p) + ahead;
  for (; i + 32 <= n; i += 32) {
    if (ahead > 0)
      for (int l = 0; l < 4; l++) _mm_prefetch(c + 8 * i + 64 * l, _MM_HINT_T0);
    s0 = _mm512_add_epi64(s0, _mm512_loadu_si512(p + i));
    s1 = _mm512_add_epi64(s1, _mm512_loadu_si512(p + i + 8));
    s2 = _mm512_add_epi64(s2, _mm512_loadu_si512(p + i + 16));
    s3 = _mm512_add_epi64(s3, _mm512_loadu_si512(p + i + 24));
  }
  uint64_t sum = static_cast<uint64_t>(_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(s0, s1), _mm512_add_epi64(s2, s3))));
  for (; i < n; i++) sum += p[i];
  return sum;
}

}  // namespace x86
}  // namespace loom
#endif
