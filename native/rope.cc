#include "rope.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "parallel.h"

namespace loom {

namespace {

// How each rotary pair finds its position: mode 0 = one position a token (rope); otherwise a
// MropeMode with its sections, over four positions a token (rope_multi).
struct Layout {
  int mode = 0;
  int32_t sections[4] = {0, 0, 0, 0};

  bool operator==(const Layout& o) const { return mode == o.mode && std::equal(sections, sections + 4, o.sections); }
  int64_t positions_per_token() const { return mode == 0 ? 1 : 4; }
  // rotary pairs a head: vision rotates 2·rope_dim dims (ggml's n_dims is half the head there)
  int pairs(int rope_dim) const { return mode == static_cast<int>(MropeMode::vision) ? rope_dim : rope_dim / 2; }
};

// The cos/sin table of one call's positions ([n_tokens][pairs] cos, then sin, each already
// rounded to f32 and scaled), kept per calling thread: every layer of a step, q and k
// alike, rotates the same positions with the same parameters, so all but the first call
// of a step reuse it (two tables: Gemma's sliding and global layers take different bases).
// The key is compared in full (positions, layout and every parameter).
struct AngleTable {
  std::vector<int32_t> positions;
  double base = 0;
  int rope_dim = 0;
  Layout layout;
  RopeScaling s;
  std::vector<float> freq_factors;
  std::vector<float> cs;

  bool matches(const int32_t* pos, int64_t count, int dim, double b, const RopeScaling& sc, const Layout& l) const {
    if (rope_dim != dim || base != b || !(layout == l) || s.freq_scale != sc.freq_scale || s.ext_factor != sc.ext_factor ||
        s.attn_factor != sc.attn_factor || s.corr_low != sc.corr_low || s.corr_high != sc.corr_high ||
        (s.freq_factors == nullptr) != (sc.freq_factors == nullptr) || static_cast<int64_t>(positions.size()) != count)
      return false;
    if (sc.freq_factors && !std::equal(freq_factors.begin(), freq_factors.end(), sc.freq_factors)) return false;
    return std::equal(positions.begin(), positions.end(), pos);
  }

  void set_key(const int32_t* pos, int64_t count, int dim, double b, const RopeScaling& sc, const Layout& l) {
    positions.assign(pos, pos + count);
    base = b;
    rope_dim = dim;
    layout = l;
    s = sc;
    const int pairs = l.pairs(dim);
    freq_factors.assign(sc.freq_factors, sc.freq_factors ? sc.freq_factors + pairs : sc.freq_factors);
    s.freq_factors = sc.freq_factors ? freq_factors.data() : nullptr;  // the copy is the key
  }
};

// ggml's rope_yarn: cos and sin of pair i's angle theta (before its frequency factor), scaled
inline void yarn_angle(float* cos_i, float* sin_i, float theta, int i, float mscale, const RopeScaling& s) {
  const float extrap = s.freq_factors ? theta / s.freq_factors[i] : theta;
  float angle = s.freq_scale * extrap;
  if (s.ext_factor != 0.0f) {
    const float y = (static_cast<float>(i) - s.corr_low) / std::max(0.001f, s.corr_high - s.corr_low);
    const float mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * s.ext_factor;
    angle = angle * (1.0f - mix) + extrap * mix;
  }
  *cos_i = static_cast<float>(std::cos(static_cast<double>(angle))) * mscale;
  *sin_i = static_cast<float>(std::sin(static_cast<double>(angle))) * mscale;
}

// cos_t[i], sin_t[i] of one position: angle pos·theta_scale^i in f32 (ggml's), scaled
void fill_angles(float* cos_t, float* sin_t, int32_t position, int half, float theta_scale, float mscale, const RopeScaling& s) {
  float theta = static_cast<float>(position);
  for (int i = 0; i < half; i++) {
    yarn_angle(cos_t + i, sin_t + i, theta, i, mscale, s);
    theta = theta * theta_scale;
  }
}

// ggml_mrope_cache_init: the four positions' angles advance together; each pair takes its
// section's (vision: each section restarts from its own position)
void fill_angles_multi(float* cos_t, float* sin_t, const int32_t p[4], int pairs, float theta_scale, float mscale, const RopeScaling& s,
                       const Layout& l) {
  const int32_t* sec = l.sections;
  const int sect_dims = sec[0] + sec[1] + sec[2] + sec[3];
  const int sec_w = sec[0] + sec[1], sec_e = sec_w + sec[2];
  const bool imrope = l.mode == static_cast<int>(MropeMode::imrope);
  const bool vision = l.mode == static_cast<int>(MropeMode::vision);
  float theta[4] = {static_cast<float>(p[0]), static_cast<float>(p[1]), static_cast<float>(p[2]), static_cast<float>(p[3])};
  for (int i = 0; i < pairs; i++) {
    const int sector = i % sect_dims;
    if (vision) {
      if (sector == 0) theta[0] = static_cast<float>(p[0]);
      else if (sector == sec[0]) theta[1] = static_cast<float>(p[1]);
      else if (sector == sec_w) theta[2] = static_cast<float>(p[2]);
      else if (sector == sec_e) theta[3] = static_cast<float>(p[3]);
    }
    int c;
    if (imrope) {
      c = sector % 3 == 1 && sector < 3 * sec[1]   ? 1
          : sector % 3 == 2 && sector < 3 * sec[2] ? 2
          : sector % 3 == 0 && sector < 3 * sec[0] ? 0
                                                   : 3;
    } else {
      c = sector < sec[0] ? 0 : sector < sec_w ? 1 : sector < sec_e ? 2 : 3;
    }
    yarn_angle(cos_t + i, sin_t + i, theta[c], i, mscale, s);
    for (float& th : theta) th = th * theta_scale;
  }
}

// The table for this call: one of the two kept, refilling the one used less recently on a miss
const AngleTable& angles_for(const int32_t* positions, int64_t n_tokens, int rope_dim, double base, const RopeScaling& s, const Layout& l) {
  thread_local AngleTable tables[2];
  thread_local int last = 0;
  const int64_t count = n_tokens * l.positions_per_token();
  if (tables[last].matches(positions, count, rope_dim, base, s, l)) return tables[last];
  last = 1 - last;
  AngleTable& table = tables[last];
  if (table.matches(positions, count, rope_dim, base, s, l)) return table;
  table.set_key(positions, count, rope_dim, base, s, l);
  const int pairs = l.pairs(rope_dim);
  const float theta_scale = static_cast<float>(std::pow(base, -2.0 / rope_dim));
  // ggml's rope_yarn: with ext_factor ≠ 0 the magnitude grows by 1 + 0.1·ln(1/freq_scale)
  const float mscale =
      s.ext_factor != 0.0f ? s.attn_factor * static_cast<float>(1.0 + 0.1 * std::log(1.0 / s.freq_scale)) : s.attn_factor;
  table.cs.resize(static_cast<size_t>(n_tokens) * 2 * pairs);
  float* cs = table.cs.data();
  const RopeScaling& key = table.s;  // its freq_factors point at the table's own copy
  parallel_ranges(n_tokens, 16 * pairs, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      float* cos_t = cs + t * 2 * pairs;
      if (l.mode == 0) {
        fill_angles(cos_t, cos_t + pairs, positions[t], pairs, theta_scale, mscale, key);
      } else {
        const int32_t p[4] = {positions[t], positions[t + n_tokens], positions[t + 2 * n_tokens], positions[t + 3 * n_tokens]};
        fill_angles_multi(cos_t, cos_t + pairs, p, pairs, theta_scale, mscale, key, l);
      }
    }
  });
  return table;
}

// rotates the first `pairs` pairs of every head by the table's angles
void rotate(float* x, const float* cs, int64_t n_tokens, int n_heads, int head_dim, int pairs, bool neox) {
  parallel_ranges(n_tokens, static_cast<int64_t>(n_heads) * 2 * pairs, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const float* cos_t = cs + t * 2 * pairs;
      const float* sin_t = cos_t + pairs;
      for (int h = 0; h < n_heads; h++) {
        float* head = x + (t * n_heads + h) * head_dim;
        for (int i = 0; i < pairs; i++) {
          const int a = neox ? i : 2 * i, b = neox ? i + pairs : 2 * i + 1;
          const double x0 = head[a], x1 = head[b], c = cos_t[i], sn = sin_t[i];
          head[a] = static_cast<float>(x0 * c - x1 * sn);
          head[b] = static_cast<float>(x0 * sn + x1 * c);
        }
      }
    }
  });
}

}  // namespace

void rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, int rope_dim, double base, bool neox,
          const RopeScaling& s) {
  const Layout plain;
  rotate(x, angles_for(positions, n_tokens, rope_dim, base, s, plain).cs.data(), n_tokens, n_heads, head_dim, rope_dim / 2, neox);
}

void rope_multi(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, int rope_dim, double base,
                const int32_t sections[4], MropeMode mode, const RopeScaling& s) {
  Layout l;
  l.mode = static_cast<int>(mode);
  std::memcpy(l.sections, sections, sizeof l.sections);
  rotate(x, angles_for(positions, n_tokens, rope_dim, base, s, l).cs.data(), n_tokens, n_heads, head_dim, l.pairs(rope_dim), true);
}

}  // namespace loom
