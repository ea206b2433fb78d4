#include "rope.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "parallel.h"

namespace loom {

namespace {

// The cos/sin table of one call's positions ([n_tokens][half] cos, then sin, each already
// rounded to f32 and scaled), kept per calling thread: every layer of a step, q and k
// alike, rotates the same positions with the same parameters, so all but the first call
// of a step reuse it (two tables: Gemma's sliding and global layers take different bases).
// The key is compared in full (positions and every parameter).
struct AngleTable {
  std::vector<int32_t> positions;
  double base = 0;
  int rope_dim = 0;
  RopeScaling s;
  std::vector<float> freq_factors;
  std::vector<float> cs;

  bool matches(const int32_t* pos, int64_t n, int dim, double b, const RopeScaling& sc) const {
    if (rope_dim != dim || base != b || s.freq_scale != sc.freq_scale || s.ext_factor != sc.ext_factor ||
        s.attn_factor != sc.attn_factor || s.corr_low != sc.corr_low || s.corr_high != sc.corr_high ||
        (s.freq_factors == nullptr) != (sc.freq_factors == nullptr) || static_cast<int64_t>(positions.size()) != n)
      return false;
    if (sc.freq_factors && !std::equal(freq_factors.begin(), freq_factors.end(), sc.freq_factors)) return false;
    return std::equal(positions.begin(), positions.end(), pos);
  }

  void set_key(const int32_t* pos, int64_t n, int dim, double b, const RopeScaling& sc) {
    positions.assign(pos, pos + n);
    base = b;
    rope_dim = dim;
    s = sc;
    freq_factors.assign(sc.freq_factors, sc.freq_factors ? sc.freq_factors + dim / 2 : sc.freq_factors);
    s.freq_factors = sc.freq_factors ? freq_factors.data() : nullptr;  // the copy is the key
  }
};

// cos_t[i], sin_t[i] of one position: angle pos·theta_scale^i in f32 (ggml's), scaled
void fill_angles(float* cos_t, float* sin_t, int32_t position, int half, float theta_scale, float mscale, const RopeScaling& s) {
  float theta = static_cast<float>(position);
  for (int i = 0; i < half; i++) {
    const float extrap = s.freq_factors ? theta / s.freq_factors[i] : theta;
    float angle = s.freq_scale * extrap;
    if (s.ext_factor != 0.0f) {
      const float y = (static_cast<float>(i) - s.corr_low) / std::max(0.001f, s.corr_high - s.corr_low);
      const float mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * s.ext_factor;
      angle = angle * (1.0f - mix) + extrap * mix;
    }
    cos_t[i] = static_cast<float>(std::cos(static_cast<double>(angle))) * mscale;
    sin_t[i] = static_cast<float>(std::sin(static_cast<double>(angle))) * mscale;
    theta = theta * theta_scale;
  }
}

// The table for this call: one of the two kept, refilling the one used less recently on a miss
const AngleTable& angles_for(const int32_t* positions, int64_t n_tokens, int rope_dim, double base, const RopeScaling& s) {
  thread_local AngleTable tables[2];
  thread_local int last = 0;
  if (tables[last].matches(positions, n_tokens, rope_dim, base, s)) return tables[last];
  last = 1 - last;
  AngleTable& table = tables[last];
  if (table.matches(positions, n_tokens, rope_dim, base, s)) return table;
  table.set_key(positions, n_tokens, rope_dim, base, s);
  const int half = rope_dim / 2;
  const float theta_scale = static_cast<float>(std::pow(base, -2.0 / rope_dim));
  // ggml's rope_yarn: with ext_factor ≠ 0 the magnitude grows by 1 + 0.1·ln(1/freq_scale)
  const float mscale =
      s.ext_factor != 0.0f ? s.attn_factor * static_cast<float>(1.0 + 0.1 * std::log(1.0 / s.freq_scale)) : s.attn_factor;
  table.cs.resize(static_cast<size_t>(n_tokens) * 2 * half);
  float* cs = table.cs.data();
  parallel_ranges(n_tokens, 16 * half, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) fill_angles(cs + t * 2 * half, cs + t * 2 * half + half, positions[t], half, theta_scale, mscale, s);
  });
  return table;
}

}  // namespace

void rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, int rope_dim, double base, bool neox,
          const RopeScaling& s) {
  const int half = rope_dim / 2;
  const float* cs = angles_for(positions, n_tokens, rope_dim, base, s).cs.data();
  parallel_ranges(n_tokens, static_cast<int64_t>(n_heads) * rope_dim, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const float* cos_t = cs + t * 2 * half;
      const float* sin_t = cos_t + half;
      for (int h = 0; h < n_heads; h++) {
        float* head = x + (t * n_heads + h) * head_dim;
        for (int i = 0; i < half; i++) {
          const int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
          const double x0 = head[a], x1 = head[b], c = cos_t[i], sn = sin_t[i];
          head[a] = static_cast<float>(x0 * c - x1 * sn);
          head[b] = static_cast<float>(x0 * sn + x1 * c);
        }
      }
    }
  });
}

}  // namespace loom
