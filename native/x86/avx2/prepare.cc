// AVX2 + F16C activation preparation (see ../../quant.h for the formulas), bit-exact with
// prepare_row_scalar; the AVX-512 path uses it too (avx512_prepare_row, its GEMM's packing).
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstring>

#include "../../half.h"
#include "../../quant.h"
#include "../../weight-types.h"
#include "../dot256.h"
#include "../matmul_x86.h"

namespace loom {
namespace x86 {
namespace {

// ---- activation preparation (see quant.h for the formulas) ----

// q[0..32) = round_half_even(x·id) saturated to int8; returns Σq.
int32_t quantize32(const float* x, float id, int8_t* q) {
  const __m256 vid = _mm256_set1_ps(id);
  __m256i i[4];
  LOOM_UNROLL for (int k = 0; k < 4; k++) {
    const __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), vid),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    i[k] = _mm256_cvtps_epi32(v);  // NaN/inf → INT_MIN, saturated to −128 below
  }
  const __m256i p16a = _mm256_packs_epi32(i[0], i[1]), p16b = _mm256_packs_epi32(i[2], i[3]);
  __m256i p8 = _mm256_packs_epi16(p16a, p16b);
  p8 = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), p8);
  const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), p8), _mm256_set1_epi16(1));
  return hsum256_epi32(s);
}

void prepare_q8_0(const float* x, int K, uint8_t* dst) {
  int8_t* q = reinterpret_cast<int8_t*>(dst);
  float* d = reinterpret_cast<float*>(dst + K);
  int32_t* s = reinterpret_cast<int32_t*>(dst + K + 4 * (K / 32));
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int b = 0; b < K / 32; b++) {
    const float* xb = x + 32 * b;
    __m256 mx = _mm256_setzero_ps(), nan = _mm256_setzero_ps();
    LOOM_UNROLL for (int k = 0; k < 4; k++) {
      const __m256 a = _mm256_and_ps(_mm256_loadu_ps(xb + 8 * k), abs_mask);
      mx = _mm256_max_ps(mx, a);
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    float amax = _mm_cvtss_f32(m);
    if (_mm256_movemask_ps(nan)) amax = NAN;
    d[b] = _cvtsh_ss(_cvtss_sh(amax / 127.f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));  // F16C: the same rounding as f32_to_f16
    s[b] = quantize32(xb, amax != 0.f ? 127.f / amax : 0.f, q + 32 * b);
  }
}

void prepare_q8_k(const float* x, int K, uint8_t* dst) {
  int8_t* q = reinterpret_cast<int8_t*>(dst);
  float* d = reinterpret_cast<float*>(dst + K);
  int16_t* s16 = reinterpret_cast<int16_t*>(dst + K + 4 * (K / 256));
  int16_t* s32 = s16 + K / 16;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int b = 0; b < K / 256; b++) {
    const float* xb = x + 256 * b;
    int8_t* qb = q + 256 * b;
    __m256 mx = _mm256_setzero_ps();
    // max_ps(a, mx) keeps mx where a is NaN: NaNs are skipped, as in the scalar loop
    for (int k = 0; k < 32; k++) mx = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(xb + 8 * k), abs_mask), mx);
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const float amax = _mm_cvtss_f32(m);
    float max = 0;
    for (int j = 0; j < 256; j++)  // the first element of largest |x|
      if (__builtin_fabsf(xb[j]) == amax) {
        max = xb[j];
        break;
      }
    if (amax == 0.f) {
      d[b] = 0;
      std::memset(qb, 0, 256);
    } else {
      const float iscale = -127.f / max;
      d[b] = 1.f / iscale;
      LOOM_UNROLL for (int k = 0; k < 8; k++) quantize32(xb + 32 * k, iscale, qb + 32 * k);
    }
    // sums of 16 and 32: sad(q ^ 0x80, 0) = Σ(q + 128) per 8 bytes
    LOOM_UNROLL for (int k = 0; k < 8; k++) {
      const __m256i v = _mm256_xor_si256(loadu256(qb + 32 * k), _mm256_set1_epi8(static_cast<char>(0x80)));
      const __m256i sad = _mm256_sad_epu8(v, _mm256_setzero_si256());
      int64_t l[4];
      std::memcpy(l, &sad, 32);
      s16[16 * b + 2 * k] = static_cast<int16_t>(l[0] + l[1] - 2048);
      s16[16 * b + 2 * k + 1] = static_cast<int16_t>(l[2] + l[3] - 2048);
      s32[8 * b + k] = static_cast<int16_t>(l[0] + l[1] + l[2] + l[3] - 4096);
    }
  }
}

void prepare_f16(const float* x, int K, float* v) {
  int i = 0;
  for (; i + 8 <= K; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(v + i, _mm256_cvtph_ps(h));
  }
  for (; i < K; i++) v[i] = f16_to_f32(f32_to_f16(x[i]));
}

// 8 floats → 8 bf16 bit patterns (ggml_compute_fp32_to_bf16) in the low 128 bits.
inline __m128i bf16_round8(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rne = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64));
  const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                            _mm256_set1_epi32(0x7f800000));
  const __m256i r = _mm256_blendv_epi8(rne, quiet, is_nan);
  const __m256i p = _mm256_packus_epi32(r, r);  // values ≤ 0xffff
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(p, 0x08));
}

void prepare_bf16(const float* x, int K, uint8_t* dst) {
  int i = 0;
  for (; i + 8 <= K; i += 8) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i), bf16_round8(_mm256_loadu_ps(x + i)));
  for (; i < K; i++) {
    const uint16_t b = f32_to_bf16(x[i]);
    std::memcpy(dst + 2 * i, &b, 2);
  }
}

}  // namespace

void avx2_prepare_row(int type, const float* x, int K, uint8_t* dst) {
  const WeightTraits* t = weight_traits(type);
  if (!t) return;
  switch (t->act) {
    case Act::kF16: prepare_f16(x, K, reinterpret_cast<float*>(dst)); return;
    case Act::kBF16: prepare_bf16(x, K, dst); return;
    case Act::kQ8_0: prepare_q8_0(x, K, dst); return;
    case Act::kQ8_K: prepare_q8_k(x, K, dst); return;
    default: prepare_row_scalar(type, x, K, dst); return;
  }
}

}  // namespace x86
}  // namespace loom
#endif
