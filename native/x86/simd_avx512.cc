// SimdOps for AVX-512 (F/BW/VL/DQ; compiled with the AVX-512 flags, called only when the
// CPU has them). Row tails use masked loads and stores. No STL here: see half.h.
#include <immintrin.h>

#include "../attention-head.h"
#include "../half.h"
#include "../simd.h"

namespace loom {
namespace {

inline __mmask16 tail_mask(int left) { return static_cast<__mmask16>(left >= 16 ? 0xffffu : (1u << left) - 1u); }

inline __m512 load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }

inline __m512 load_f16_masked(const uint16_t* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }

// e^x as vec-math.h's vexp (Cephes polynomial), 16 lanes; 2^n by scalef
inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.0f)), _mm512_set1_ps(-87.33654f));
  const __m512 fn = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 er = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(er, fn);
}

struct Avx512Ops {
  static float dot_f32(const float* q, const float* k, int d) {
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < d; i += 16) {
      const __mmask16 m = tail_mask(d - i);
      acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), _mm512_maskz_loadu_ps(m, k + i), acc);
    }
    return _mm512_reduce_add_ps(acc);
  }
  static float dot_f16(const float* q, const uint16_t* k, int d) {
    __m512 acc = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 <= d; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), load_f16(k + i), acc);
    if (i < d) {
      const __mmask16 m = tail_mask(d - i);
      acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), load_f16_masked(k + i, m), acc);
    }
    return _mm512_reduce_add_ps(acc);
  }
  static void axpy_f32(float* acc, float w, const float* v, int d) {
    const __m512 wv = _mm512_set1_ps(w);
    for (int i = 0; i < d; i += 16) {
      const __mmask16 m = tail_mask(d - i);
      _mm512_mask_storeu_ps(acc + i, m, _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, v + i), _mm512_maskz_loadu_ps(m, acc + i)));
    }
  }
  static void axpy_f16(float* acc, float w, const uint16_t* v, int d) {
    const __m512 wv = _mm512_set1_ps(w);
    for (int i = 0; i < d; i += 16) {
      const __mmask16 m = tail_mask(d - i);
      _mm512_mask_storeu_ps(acc + i, m, _mm512_fmadd_ps(wv, load_f16_masked(v + i, m), _mm512_maskz_loadu_ps(m, acc + i)));
    }
  }
  static float max_of(const float* x, int n) {
    __m512 mx = _mm512_set1_ps(x[0]);
    for (int i = 0; i < n; i += 16) mx = _mm512_mask_max_ps(mx, tail_mask(n - i), mx, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
    return _mm512_reduce_max_ps(mx);
  }
  static float exp_shift_sum(float* x, int n, float max) {
    const __m512 mv = _mm512_set1_ps(max);
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < n; i += 16) {
      const __mmask16 m = tail_mask(n - i);
      const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mv));
      _mm512_mask_storeu_ps(x + i, m, e);
      acc = _mm512_mask_add_ps(acc, m, acc, e);
    }
    return _mm512_reduce_add_ps(acc);
  }
  static void round_f16(float* x, int n) {
    for (int i = 0; i < n; i += 16) {
      const __mmask16 m = tail_mask(n - i);
      const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT);
      _mm512_mask_storeu_ps(x + i, m, _mm512_cvtph_ps(h));
    }
  }
};

float max_avx512(const float* x, int n) { return Avx512Ops::max_of(x, n); }

float exp_shift_sum_avx512(float* x, int n, float max) { return Avx512Ops::exp_shift_sum(x, n, max); }

void silu_mul_avx512(float* out, const float* gate, const float* up, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(static_cast<int>(n - i < 16 ? n - i : 16));
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), g))));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

void f32_to_f16_avx512(uint16_t* out, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(static_cast<int>(n - i < 16 ? n - i : 16));
    _mm256_mask_storeu_epi16(out + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT));
  }
}

void attend_head_avx512(const AttendHead& job) { attend_head_impl<Avx512Ops>(job); }

}  // namespace

namespace x86 {
const SimdOps kAvx512Ops = {"avx512", max_avx512, exp_shift_sum_avx512, silu_mul_avx512, f32_to_f16_avx512, attend_head_avx512};
}  // namespace x86

}  // namespace loom
