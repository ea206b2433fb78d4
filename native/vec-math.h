// Branch-free f32 math written so the compiler vectorizes the loops that call it, at the
// width of whatever -m flags the including translation unit has (SSE2, AVX2, AVX-512).
// `static inline` on purpose (see half.h): each translation unit keeps its own copy.
#pragma once
#include <cstdint>
#include <cstring>

namespace loom {

// e^x within about 2 ulp for x in [-87.3, 88]; clamped outside (e^-87.3 ≈ 1.2e-38).
// Cephes expf: x = n·ln2 + r, |r| ≤ ln2/2, e^r by a degree-6 polynomial, 2^n by bits.
static inline float vexp(float x) {
  x = x < -87.33654f ? -87.33654f : x;
  x = x > 88.0f ? 88.0f : x;
  const float magic = 12582912.0f;  // 1.5·2^23: adding it rounds to an integer
  const float t = x * 1.44269504088896341f + magic;
  int32_t tb;
  std::memcpy(&tb, &t, 4);
  const int32_t n = tb - 0x4b400000;  // the bits of `magic`
  const float fn = t - magic;
  float r = x - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  const int32_t sb = (n + 127) << 23;  // n in [-126, 127]
  float scale;
  std::memcpy(&scale, &sb, 4);
  return er * scale;
}

// Sums and maxima over 16 independent lanes (vertical SIMD ops), combined at the end.
static inline float sum_of(const float* x, int n) {
  float lane[16] = {};
  int i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; j++) lane[j] += x[i + j];
  float sum = 0.0f;
  for (; i < n; i++) sum += x[i];
  for (int j = 0; j < 16; j++) sum += lane[j];
  return sum;
}

static inline float max_of(const float* x, int n) {
  float lane[16];
  for (int j = 0; j < 16; j++) lane[j] = x[0];
  int i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; j++) lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
  float m = x[0];
  for (; i < n; i++) m = x[i] > m ? x[i] : m;
  for (int j = 0; j < 16; j++) m = lane[j] > m ? lane[j] : m;
  return m;
}

// x[i] = e^(x[i] - max) for i < n; returns their sum.
static inline float exp_shift_sum(float* x, int n, float max) {
  for (int i = 0; i < n; i++) x[i] = vexp(x[i] - max);
  return sum_of(x, n);
}

}  // namespace loom
