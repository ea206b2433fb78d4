#include "quant.h"

#include <cmath>

#include "matmul.h"

namespace loom {

int weight_block_values(int type) {
  const WeightTraits* t = weight_traits(type);
  return t ? t->block_values : 0;
}

size_t weight_row_bytes(int type, int n) {
  const WeightTraits* t = weight_traits(type);
  return t ? static_cast<size_t>(n) / t->block_values * t->block_bytes : 0;
}

void dequantize_row(int type, const uint8_t* row, int n, float* out) {
  const WeightTraits* t = weight_traits(type);
  if (!t || (t->block_values > 1 && !t->dequantize)) return;  // interleaved layouts: no row of their own
  switch (t->act) {
    case Act::kF32: std::memcpy(out, row, 4 * static_cast<size_t>(n)); return;
    case Act::kF16:
      for (int i = 0; i < n; i++) out[i] = f16_to_f32(load_u16(row + 2 * i));
      return;
    case Act::kBF16:
      for (int i = 0; i < n; i++) out[i] = bf16_to_f32(load_u16(row + 2 * i));
      return;
    default:
      for (int b = 0; b < n / t->block_values; b++) t->dequantize(row + t->block_bytes * b, out + t->block_values * b);
      return;
  }
}

// ---- activation preparation ----

size_t prepared_row_bytes(int type, int K) {
  const WeightTraits* t = weight_traits(type);
  if (!t) return 0;
  size_t n = 0;
  const size_t k = static_cast<size_t>(K);
  switch (t->act) {
    case Act::kF32:
    case Act::kF16: n = 4 * k; break;
    case Act::kBF16: n = 2 * k; break;
    case Act::kQ8_0: n = k + 8 * (k / 32); break;
    case Act::kQ8_K: n = k + 4 * (k / 256) + 2 * (k / 16) + 2 * (k / 32); break;
  }
  return (n + 63) & ~static_cast<size_t>(63);
}

namespace {

// One block of 32 as x86 AVX2 quantize_row_q8_0 (see the header).
void quantize_q8_0_block(const float* x, int8_t* q, float* d, int32_t* s) {
  float amax = 0;
  bool nan = false;
  for (int j = 0; j < 32; j++) {
    const float a = std::fabs(x[j]);
    if (std::isnan(a)) nan = true;
    amax = a > amax ? a : amax;
  }
  if (nan) amax = NAN;
  *d = f16_to_f32(f32_to_f16(amax / 127.f));
  const float id = amax != 0.f ? 127.f / amax : 0.f;
  int32_t sum = 0;
  for (int j = 0; j < 32; j++) {
    const float v = x[j] * id;
    float r = std::isfinite(v) ? std::rint(v) : -128.f;
    r = r < -128.f ? -128.f : (r > 127.f ? 127.f : r);
    q[j] = static_cast<int8_t>(r);
    sum += q[j];
  }
  *s = sum;
}

// One block of 256 as quantize_row_q8_K_ref (see the header); also the 16- and 32-sums.
void quantize_q8_k_block(const float* x, int8_t* q, float* d, int16_t* s16, int16_t* s32) {
  float max = 0, amax = 0;
  for (int j = 0; j < kQKK; j++) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax == 0.f) {
    *d = 0;
    std::memset(q, 0, kQKK);
  } else {
    const float iscale = -127.f / max;
    *d = 1.f / iscale;
    for (int j = 0; j < kQKK; j++) {
      const float r = std::rint(iscale * x[j]);
      q[j] = std::isnan(r) ? -128 : static_cast<int8_t>(r > 127.f ? 127.f : r);  // NaN as cvtps2dq
    }
  }
  for (int g = 0; g < 16; g++) {
    int sum = 0;
    for (int j = 0; j < 16; j++) sum += q[16 * g + j];
    s16[g] = static_cast<int16_t>(sum);
  }
  for (int g = 0; g < 8; g++) s32[g] = static_cast<int16_t>(s16[2 * g] + s16[2 * g + 1]);
}

}  // namespace

void prepare_row_scalar(int type, const float* x, int K, uint8_t* dst) {
  const WeightTraits* t = weight_traits(type);
  if (!t) return;
  switch (t->act) {
    case Act::kF32: std::memcpy(dst, x, 4 * static_cast<size_t>(K)); return;
    case Act::kF16: {
      float* v = reinterpret_cast<float*>(dst);
      for (int i = 0; i < K; i++) v[i] = f16_to_f32(f32_to_f16(x[i]));
      return;
    }
    case Act::kBF16:
      for (int i = 0; i < K; i++) {
        const uint16_t b = f32_to_bf16(x[i]);
        std::memcpy(dst + 2 * i, &b, 2);
      }
      return;
    case Act::kQ8_0: {
      int8_t* q = reinterpret_cast<int8_t*>(dst);
      float* d = reinterpret_cast<float*>(dst + K);
      int32_t* s = reinterpret_cast<int32_t*>(dst + K + 4 * (K / 32));
      for (int b = 0; b < K / 32; b++) quantize_q8_0_block(x + 32 * b, q + 32 * b, d + b, s + b);
      return;
    }
    case Act::kQ8_K: {
      int8_t* q = reinterpret_cast<int8_t*>(dst);
      float* d = reinterpret_cast<float*>(dst + K);
      int16_t* s16 = reinterpret_cast<int16_t*>(dst + K + 4 * (K / 256));
      int16_t* s32 = s16 + K / 16;
      for (int b = 0; b < K / kQKK; b++) {
        quantize_q8_k_block(x + kQKK * b, q + kQKK * b, d + b, s16 + 16 * b, s32 + 8 * b);
      }
      return;
    }
  }
}

void prepared_row_values(int type, const uint8_t* row, int K, float* out) {
  const WeightTraits* t = weight_traits(type);
  if (!t) return;
  switch (t->act) {
    case Act::kF32:
    case Act::kF16: std::memcpy(out, row, 4 * static_cast<size_t>(K)); return;
    case Act::kBF16:
      for (int i = 0; i < K; i++) out[i] = bf16_to_f32(load_u16(row + 2 * i));
      return;
    case Act::kQ8_0: {
      const XQ8_0 v = xq8_0_view(row, K);
      for (int i = 0; i < K; i++) out[i] = v.d[i / 32] * v.q[i];
      return;
    }
    case Act::kQ8_K: {
      const XQ8_K v = xq8_k_view(row, K);
      for (int i = 0; i < K; i++) out[i] = v.d[i / 256] * v.q[i];
      return;
    }
  }
}

}  // namespace loom
