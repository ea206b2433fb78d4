// Row statistics in double, as the reference does; the per-element work in f32.
#include "norm.h"

#include <cmath>

#include "parallel.h"

namespace loom {

namespace {

// Σ (x[i] − shift)², in 4 double lanes
double sum_sq(const float* x, int n, double shift) {
  double lane[4] = {0, 0, 0, 0};
  int i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; j++) {
      const double d = x[i + j] - shift;
      lane[j] += d * d;
    }
  double s = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  for (; i < n; i++) s += (x[i] - shift) * (x[i] - shift);
  return s;
}

double sum(const float* x, int n) {
  double lane[4] = {0, 0, 0, 0};
  int i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; j++) lane[j] += x[i + j];
  double s = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  for (; i < n; i++) s += x[i];
  return s;
}

}  // namespace

void rms_norm(float* out, const float* x, const float* weight, int64_t rows, int dim, double eps) {
  parallel_ranges(rows, dim, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* xr = x + r * dim;
      float* o = out + r * dim;
      const float scale = static_cast<float>(1.0 / std::sqrt(sum_sq(xr, dim, 0.0) / dim + eps));
      for (int i = 0; i < dim; i++) o[i] = (xr[i] * scale) * weight[i];
    }
  });
}

void layer_norm(float* out, const float* x, const float* weight, const float* bias, int64_t rows, int dim, double eps) {
  parallel_ranges(rows, dim, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* xr = x + r * dim;
      float* o = out + r * dim;
      const double mean = sum(xr, dim) / dim;
      const double scale = 1.0 / std::sqrt(sum_sq(xr, dim, mean) / dim + eps);
      const float m = static_cast<float>(mean), s = static_cast<float>(scale);
      for (int i = 0; i < dim; i++) o[i] = ((xr[i] - m) * s) * weight[i] + bias[i];
    }
  });
}

}  // namespace loom
