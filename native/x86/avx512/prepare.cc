// AVX-512 activation preparation for the dot kernels: 8-bit blocks of 32 (Act::kQ8_0) a
// block in two vectors, bit-exact with avx2_prepare_row and prepare_row_scalar (the same
// f32 multiply, round half to even, saturation to int8 and F16C-rounded scale); every other
// activation kind as avx2_prepare_row. At 64 decode rows this preparation was 5.6% of a
// SmolLM2-135M Q8_0 serving profile (AVX2: 8 floats a step, a permute to undo packs' lanes).
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "../../quant.h"
#include "../../weight-types.h"
#include "../matmul_x86.h"

namespace loom {
namespace x86 {
namespace {

void prepare_q8_0(const float* x, int K, uint8_t* dst) {
  int8_t* q = reinterpret_cast<int8_t*>(dst);
  float* d = reinterpret_cast<float*>(dst + K);
  int32_t* s = reinterpret_cast<int32_t*>(dst + K + 4 * (K / kQK));
  for (int b = 0; b < K / kQK; b++) {
    const float* xb = x + kQK * b;
    const __m512 a0 = _mm512_loadu_ps(xb), a1 = _mm512_loadu_ps(xb + 16);
    const __m512 m0 = _mm512_abs_ps(a0), m1 = _mm512_abs_ps(a1);
    // max is exact in any order; a NaN anywhere makes the block's scale NaN, as in AVX2
    float amax = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
    if (_mm512_cmp_ps_mask(m0, m0, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(m1, m1, _CMP_UNORD_Q)) amax = NAN;
    d[b] = _cvtsh_ss(_cvtss_sh(amax / 127.f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m512 id = _mm512_set1_ps(amax != 0.f ? 127.f / amax : 0.f);
    // round half to even; NaN/inf/out of range → INT_MIN, saturated to −128 as packs does
    const __m512i lo = _mm512_set1_epi32(-128), hi = _mm512_set1_epi32(127);
    const __m512i i0 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvt_roundps_epi32(_mm512_mul_ps(a0, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), lo), hi);
    const __m512i i1 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvt_roundps_epi32(_mm512_mul_ps(a1, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), lo), hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + kQK * b), _mm512_cvtepi32_epi8(i0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + kQK * b + 16), _mm512_cvtepi32_epi8(i1));
    s[b] = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
  }
}

}  // namespace

void avx512_prepare_dot_row(int type, const float* x, int K, uint8_t* dst) {
  const WeightTraits* t = weight_traits(type);
  if (t && t->act == Act::kQ8_0) return prepare_q8_0(x, K, dst);
  avx2_prepare_row(type, x, K, dst);
}

}  // namespace x86
}  // namespace loom
#endif
