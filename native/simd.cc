// Portable versions of the SimdOps (plain C++, any architecture) and the dispatch.
#include "simd.h"

#include "attention-head.h"
#include "cpu.h"
#include "half.h"
#include "kv-type.h"
#include "vec-math.h"

namespace loom {

namespace {

struct PortableOps : PerKeyOps<PortableOps>, HeadLoopOps<PortableOps> {
  static float dot(const float* q, const float* k, int d) {
    float lane[8] = {};
    int i = 0;
    for (; i + 8 <= d; i += 8)
      for (int j = 0; j < 8; j++) lane[j] += q[i + j] * k[i + j];
    float sum = 0.0f;
    for (; i < d; i++) sum += q[i] * k[i];
    for (int j = 0; j < 8; j++) sum += lane[j];
    return sum;
  }
  static float dot(const float* q, const uint16_t* k, int d) {
    float lane[8] = {};
    int i = 0;
    for (; i + 8 <= d; i += 8)
      for (int j = 0; j < 8; j++) lane[j] += q[i + j] * f16_to_f32(k[i + j]);
    float sum = 0.0f;
    for (; i < d; i++) sum += q[i] * f16_to_f32(k[i]);
    for (int j = 0; j < 8; j++) sum += lane[j];
    return sum;
  }
  // a q8_0 row: per block, Σ q·int8 in lanes, times the block's d
  static float dot(const float* q, Q8Ptr k, int d) {
    float sum = 0.0f;
    for (int i = 0; i < d; i += kKvQ8Block) {
      const Q8Ptr b = k + i;
      const int8_t* x = b.quants();
      float lane[8] = {};
      for (int j = 0; j < kKvQ8Block; j += 8)
        for (int l = 0; l < 8; l++) lane[l] += q[i + j + l] * static_cast<float>(x[j + l]);
      float block = 0.0f;
      for (int l = 0; l < 8; l++) block += lane[l];
      sum += block * f16_to_f32(b.scale_bits());
    }
    return sum;
  }
  static void axpy(float* acc, float w, Q8Ptr v, int d) {
    for (int i = 0; i < d; i += kKvQ8Block) {
      const Q8Ptr b = v + i;
      const int8_t* x = b.quants();
      const float wd = w * f16_to_f32(b.scale_bits());
      for (int j = 0; j < kKvQ8Block; j++) acc[i + j] += wd * static_cast<float>(x[j]);
    }
  }
  // a q4_0 row: value j of a block is nibble j % 16 (low, then high) of its bytes, minus 8
  static float dot(const float* q, Q4Ptr k, int d) {
    float sum = 0.0f;
    for (int i = 0; i < d; i += kKvQ8Block) {
      const Q4Ptr b = k + i;
      const uint8_t* x = b.bytes();
      float lane[8] = {};
      for (int j = 0; j < kKvQ8Block; j += 8)
        for (int l = 0; l < 8; l++) lane[l] += q[i + j + l] * static_cast<float>(q4_at(x, j + l));
      float block = 0.0f;
      for (int l = 0; l < 8; l++) block += lane[l];
      sum += block * f16_to_f32(b.scale_bits());
    }
    return sum;
  }
  static void axpy(float* acc, float w, Q4Ptr v, int d) {
    for (int i = 0; i < d; i += kKvQ8Block) {
      const Q4Ptr b = v + i;
      const float wd = w * f16_to_f32(b.scale_bits());
      for (int j = 0; j < kKvQ8Block; j++) acc[i + j] += wd * static_cast<float>(q4_at(b.bytes(), j));
    }
  }
  static int q4_at(const uint8_t* qs, int j) { return (j < 16 ? qs[j] & 15 : qs[j - 16] >> 4) - 8; }
  static void axpy(float* acc, float w, const float* v, int d) {
    for (int i = 0; i < d; i++) acc[i] += w * v[i];
  }
  static void axpy(float* acc, float w, const uint16_t* v, int d) {
    for (int i = 0; i < d; i++) acc[i] += w * f16_to_f32(v[i]);
  }
  static float max_of(const float* x, int n) { return loom::max_of(x, n); }
  static float exp_shift_sum(float* x, int n, float max) { return loom::exp_shift_sum(x, n, max); }
  static void round_f16(float* x, int n) {
    for (int i = 0; i < n; i++) x[i] = round_to_f16(x[i]);
  }
};

float max_portable(const float* x, int n) { return max_of(x, n); }

float exp_shift_sum_portable(float* x, int n, float max) { return exp_shift_sum(x, n, max); }

void silu_mul_portable(float* out, const float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    const float g = gate[i];
    out[i] = g / (1.0f + vexp(-g)) * up[i];
  }
}

void gelu_table_mul_portable(float* out, const float* gate, const float* up, int64_t n, const uint16_t* table) {
  for (int64_t i = 0; i < n; i++) {
    const float g = gelu_from_table(gate[i], table);
    out[i] = up ? g * up[i] : g;
  }
}

// Two passes: the maximum over 16 independent lanes (x > lane: a NaN never wins, a NaN
// x[0] stays), then the first index holding it
int64_t argmax_portable(const float* x, int64_t n) {
  constexpr int kLanes = 16;
  float lane[kLanes];
  for (int l = 0; l < kLanes; l++) lane[l] = x[0];
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; l++) lane[l] = x[i + l] > lane[l] ? x[i + l] : lane[l];
  float best = x[0];
  for (int l = 0; l < kLanes; l++) best = lane[l] > best ? lane[l] : best;
  for (; i < n; i++) best = x[i] > best ? x[i] : best;
  for (int64_t j = 0; j < n; j++)
    if (x[j] == best) return j;
  return 0;  // only NaNs
}

void f32_to_f16_portable(uint16_t* out, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = f32_to_f16(x[i]);
}

void attend_scores_portable(const AttendHead& job, int p0, int p1) { attend_scores_impl<PortableOps>(job, p0, p1); }
void attend_values_portable(const AttendHead& job, int p0, int p1, const float* factor, float* out) {
  attend_values_impl<PortableOps>(job, p0, p1, factor, out);
}

const SimdOps kPortableOps = {
    "portable", max_portable, exp_shift_sum_portable, silu_mul_portable, gelu_table_mul_portable, argmax_portable, f32_to_f16_portable, attend_scores_portable, attend_values_portable, false,
};

const SimdOps& select_ops() {
#if defined(__x86_64__)
  if (use_avx512()) return x86::kAvx512Ops;
  if (use_avx2()) return x86::kAvx2Ops;
#endif
  return kPortableOps;
}

}  // namespace

const SimdOps& simd() {
  static const SimdOps& ops = select_ops();
  return ops;
}

}  // namespace loom
