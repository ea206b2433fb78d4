#include "rope.h"

#include <cmath>
#include <vector>

#include "parallel.h"

namespace loom {

void rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, int rope_dim, double base, bool neox) {
  const int half = rope_dim / 2;
  const float theta_scale = static_cast<float>(std::pow(base, -2.0 / rope_dim));
  parallel_ranges(n_tokens, static_cast<int64_t>(n_heads) * rope_dim + 16 * half, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<double> cs;  // [half] cos, then [half] sin
    cs.resize(2 * static_cast<size_t>(half));
    double* cos_t = cs.data();
    double* sin_t = cs.data() + half;
    for (int64_t t = t0; t < t1; t++) {
      float theta = static_cast<float>(positions[t]);
      for (int i = 0; i < half; i++) {
        cos_t[i] = static_cast<float>(std::cos(static_cast<double>(theta)));
        sin_t[i] = static_cast<float>(std::sin(static_cast<double>(theta)));
        theta = theta * theta_scale;
      }
      for (int h = 0; h < n_heads; h++) {
        float* head = x + (t * n_heads + h) * head_dim;
        for (int i = 0; i < half; i++) {
          const int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
          const double x0 = head[a], x1 = head[b];
          head[a] = static_cast<float>(x0 * cos_t[i] - x1 * sin_t[i]);
          head[b] = static_cast<float>(x0 * sin_t[i] + x1 * cos_t[i]);
        }
      }
    }
  });
}

}  // namespace loom
