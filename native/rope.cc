#include "rope.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "parallel.h"

namespace loom {

void rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, int rope_dim, double base, bool neox,
          const RopeScaling& s) {
  const int half = rope_dim / 2;
  const float theta_scale = static_cast<float>(std::pow(base, -2.0 / rope_dim));
  // ggml's rope_yarn: with ext_factor ≠ 0 the magnitude grows by 1 + 0.1·ln(1/freq_scale)
  const float mscale =
      s.ext_factor != 0.0f ? s.attn_factor * static_cast<float>(1.0 + 0.1 * std::log(1.0 / s.freq_scale)) : s.attn_factor;
  parallel_ranges(n_tokens, static_cast<int64_t>(n_heads) * rope_dim + 16 * half, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<double> cs;  // [half] cos, then [half] sin
    cs.resize(2 * static_cast<size_t>(half));
    double* cos_t = cs.data();
    double* sin_t = cs.data() + half;
    for (int64_t t = t0; t < t1; t++) {
      float theta = static_cast<float>(positions[t]);
      for (int i = 0; i < half; i++) {
        const float extrap = s.freq_factors ? theta / s.freq_factors[i] : theta;
        float angle = s.freq_scale * extrap;
        if (s.ext_factor != 0.0f) {
          const float y = (static_cast<float>(i) - s.corr_low) / std::max(0.001f, s.corr_high - s.corr_low);
          const float mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * s.ext_factor;
          angle = angle * (1.0f - mix) + extrap * mix;
        }
        cos_t[i] = static_cast<float>(static_cast<float>(std::cos(static_cast<double>(angle))) * mscale);
        sin_t[i] = static_cast<float>(static_cast<float>(std::sin(static_cast<double>(angle))) * mscale);
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
