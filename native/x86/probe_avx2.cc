// AVX2 + FMA probe loops (built with -mavx2 -mfma; called only when use_avx2()).
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "../probe.h"
#include "matmul_x86.h"

namespace loom {
namespace x86 {

float fma_chains_avx2(int64_t iters) {
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
  __m256 a0 = _mm256_set1_ps(1.0f), a1 = _mm256_set1_ps(1.1f), a2 = _mm256_set1_ps(1.2f), a3 = _mm256_set1_ps(1.3f);
  __m256 a4 = _mm256_set1_ps(1.4f), a5 = _mm256_set1_ps(1.5f), a6 = _mm256_set1_ps(1.6f), a7 = _mm256_set1_ps(1.7f);
  __m256 a8 = _mm256_set1_ps(1.8f), a9 = _mm256_set1_ps(1.9f), a10 = _mm256_set1_ps(2.0f), a11 = _mm256_set1_ps(2.1f);
  for (int64_t i = 0; i < iters; i++) {
    a0 = _mm256_fmadd_ps(a0, m, c); a1 = _mm256_fmadd_ps(a1, m, c); a2 = _mm256_fmadd_ps(a2, m, c);
    a3 = _mm256_fmadd_ps(a3, m, c); a4 = _mm256_fmadd_ps(a4, m, c); a5 = _mm256_fmadd_ps(a5, m, c);
    a6 = _mm256_fmadd_ps(a6, m, c); a7 = _mm256_fmadd_ps(a7, m, c); a8 = _mm256_fmadd_ps(a8, m, c);
    a9 = _mm256_fmadd_ps(a9, m, c); a10 = _mm256_fmadd_ps(a10, m, c); a11 = _mm256_fmadd_ps(a11, m, c);
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                           _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

float int8_chains_avx2(int64_t iters) {
  // u changes every round as far as the compiler knows (an empty asm), so no product is
  // hoisted out of the loop; each chain has its own s8 operand
  __m256i u = _mm256_set1_epi8(3);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i w[kInt8Chains], acc[kInt8Chains];
  for (int k = 0; k < kInt8Chains; k++) {
    w[k] = _mm256_set1_epi8(static_cast<char>(k - 4));
    acc[k] = _mm256_setzero_si256();
  }
  for (int64_t i = 0; i < iters; i++) {
    asm volatile("" : "+x"(u));
    LOOM_UNROLL for (int k = 0; k < kInt8Chains; k++)
      acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(_mm256_maddubs_epi16(u, w[k]), ones));
  }
  __m256i s = acc[0];
  for (int k = 1; k < kInt8Chains; k++) s = _mm256_add_epi32(s, acc[k]);
  return static_cast<float>(_mm256_extract_epi32(s, 0));
}

uint64_t read_sum_avx2(const uint64_t* p, int64_t n, int64_t ahead) {
  __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  const char* c = reinterpret_cast<const char*>(p) + ahead;
  for (; i + 16 <= n; i += 16) {
    if (ahead > 0) {
      _mm_prefetch(c + 8 * i, _MM_HINT_T0);
      _mm_prefetch(c + 8 * i + 64, _MM_HINT_T0);
    }
    s0 = _mm256_add_epi64(s0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    s1 = _mm256_add_epi64(s1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
    s2 = _mm256_add_epi64(s2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
    s3 = _mm256_add_epi64(s3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
  }
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
  alignas(32) uint64_t l[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(l), s);
  uint64_t sum = l[0] + l[1] + l[2] + l[3];
  for (; i < n; i++) sum += p[i];
  return sum;
}

}  // namespace x86
}  // namespace loom
#endif
