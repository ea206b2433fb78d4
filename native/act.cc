#include "act.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "half.h"
#include "parallel.h"
#include "simd.h"

namespace loom {

namespace {

// f16(gelu(h)) for every f16 bit pattern h, gelu in double as the reference computes it;
// one entry of padding so that the vector kernels' 32-bit gathers stay inside
const uint16_t* gelu_table() {
  static const std::unique_ptr<uint16_t[]> table = [] {
    std::unique_ptr<uint16_t[]> t(new uint16_t[65537]);
    for (uint32_t h = 0; h < 65536; h++) {
      const double x = f16_to_f32(static_cast<uint16_t>(h));
      const double y = 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * x * (1.0 + 0.044715 * x * x)));
      t[h] = f32_to_f16(static_cast<float>(y));
    }
    t[65536] = 0;
    return t;
  }();
  return table.get();
}

}  // namespace

void silu_mul(float* out, const float* gate, const float* up, int64_t n) {
  const SimdOps& ops = simd();
  parallel_ranges(n, 16, [&](int64_t i0, int64_t i1) { ops.silu_mul(out + i0, gate + i0, up + i0, i1 - i0); });
}

void gelu(float* out, const float* x, int64_t n) {
  const uint16_t* table = gelu_table();
  const SimdOps& ops = simd();
  parallel_ranges(n, 8, [&](int64_t i0, int64_t i1) { ops.gelu_table_mul(out + i0, x + i0, nullptr, i1 - i0, table); });
}

void gelu_mul(float* out, const float* gate, const float* up, int64_t n) {
  const uint16_t* table = gelu_table();
  const SimdOps& ops = simd();
  parallel_ranges(n, 8, [&](int64_t i0, int64_t i1) { ops.gelu_table_mul(out + i0, gate + i0, up + i0, i1 - i0, table); });
}

void swiglu_oai(float* out, const float* gate, const float* up, int64_t n, float alpha, float limit) {
  parallel_ranges(n, 32, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) {
      const float x = std::min(gate[i], limit);  // NaN stays NaN, as Math.min
      const float y = std::min(std::max(up[i], -limit), limit);
      const float e = static_cast<float>(std::exp(static_cast<double>(alpha * -x)));
      const float glu = x / (1.0f + e);
      out[i] = glu * (y + 1.0f);
    }
  });
}

void softcap(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;
  parallel_ranges(n, 32, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) x[i] = std::tanh(x[i] * inv) * cap;
  });
}

void add(float* out, const float* a, const float* b, int64_t n) {
  parallel_ranges(n, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) out[i] = a[i] + b[i];
  });
}

void add_bias(float* x, const float* bias, int64_t rows, int dim) {
  parallel_ranges(rows, dim, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      float* row = x + r * dim;
      for (int i = 0; i < dim; i++) row[i] += bias[i];
    }
  });
}

void softmax(float* x, int64_t rows, int n) {
  if (n <= 0) return;
  const SimdOps& ops = simd();
  parallel_ranges(rows, 8 * static_cast<int64_t>(n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      float* row = x + r * n;
      const float inv = 1.0f / ops.exp_shift_sum(row, n, ops.max_of(row, n));
      for (int i = 0; i < n; i++) row[i] *= inv;
    }
  });
}

int64_t argmax(const float* x, int64_t n) { return n <= 0 ? 0 : simd().argmax(x, n); }

// A word at a time: all-ones words (most of a permissive mask) are skipped, all-zero words
// (most of a strict one) are filled without testing bits.
void apply_token_mask(float* row, int64_t n, const int32_t* mask) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  for (int64_t w = 0; w * 32 < n; w++) {
    const uint32_t bits = static_cast<uint32_t>(mask[w]);
    if (bits == 0xffffffffu) continue;
    const int64_t base = w * 32;
    const int64_t end = base + 32 < n ? base + 32 : n;
    if (bits == 0) {
      for (int64_t i = base; i < end; i++) row[i] = minus_inf;
      continue;
    }
    for (int64_t i = base; i < end; i++)
      if (((bits >> (i - base)) & 1u) == 0) row[i] = minus_inf;
  }
}

int64_t sample_candidates(float* row, int64_t n, double scale, double log_min_p, int32_t* idx) {
  if (scale != 1.0)
    for (int64_t i = 0; i < n; i++) row[i] = static_cast<float>(static_cast<double>(row[i]) * scale);
  if (n <= 0) return 0;
  const double floor = static_cast<double>(row[argmax(row, n)]) + log_min_p;
  const float minus_inf = -std::numeric_limits<float>::infinity();
  int64_t kept = 0;
  for (int64_t i = 0; i < n; i++) {
    const float x = row[i];
    if (static_cast<double>(x) >= floor && x > minus_inf) idx[kept++] = static_cast<int32_t>(i);
    else row[i] = minus_inf;
  }
  return kept;
}

int64_t draw_index(const double* w, int64_t n, double u) {
  for (int64_t j = 0; j < n; j++) {
    u -= w[j];
    if (u < 0) return j;
  }
  return n - 1;
}

// In chunks through a small f32 buffer: gather, one vectorized exp pass, widen and sum.
double exp_weights(double* out, const float* row, const int32_t* idx, int64_t n, float max) {
  constexpr int kChunk = 1024;
  float buf[kChunk];
  const SimdOps& ops = simd();
  double total = 0;
  for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
    const int m = static_cast<int>(n - j0 < kChunk ? n - j0 : kChunk);
    if (idx)
      for (int j = 0; j < m; j++) buf[j] = row[idx[j0 + j]];
    else
      for (int j = 0; j < m; j++) buf[j] = row[j0 + j];
    ops.exp_shift_sum(buf, m, max);
    for (int j = 0; j < m; j++) total += out[j0 + j] = buf[j];
  }
  return total;
}

}  // namespace loom
