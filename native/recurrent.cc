// Gated DeltaNet kernels (recurrent.h). The delta rule walks each (sequence, value head)
// state matrix twice per token: decay + M·k in one pass, the rank-1 update + M·q in the
// next, so a 128×128 head's 64 KB state stays in L1/L2 while its tokens stream through.
// Work is split over (sequence, head) pairs, each owned by one thread: no sharing.
#include "recurrent.h"

#include <cmath>
#include <vector>

#include "parallel.h"

namespace loom {

namespace {

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

// Σ a[i]·b[i] in 8 independent f32 lanes (vectorizable without reassociation flags)
inline float dot(const float* a, const float* b, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++) acc[l] += a[i + l] * b[i + l];
  float s = 0;
  for (; i < n; i++) s += a[i] * b[i];
  return s + ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// row *= d; returns Σ row[i]·k[i] after the decay
inline float scale_dot(float* row, float d, const float* k, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++) {
      row[i + l] *= d;
      acc[l] += row[i + l] * k[i + l];
    }
  float s = 0;
  for (; i < n; i++) {
    row[i] *= d;
    s += row[i] * k[i];
  }
  return s + ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// row += k·delta; returns Σ row[i]·q[i] after the update
inline float mad_dot(float* row, const float* k, float delta, const float* q, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++) {
      row[i + l] += k[i + l] * delta;
      acc[l] += row[i + l] * q[i + l];
    }
  float s = 0;
  for (; i < n; i++) {
    row[i] += k[i] * delta;
    s += row[i] * q[i];
  }
  return s + ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

}  // namespace

void conv_silu(float* out, const float* x, const float* w, float* state, const int32_t* slots,
               const int32_t* seq_starts, int num_seqs, int channels, int kernel) {
  const int keep = kernel - 1;
  for (int s = 0; s < num_seqs; s++) {
    const int64_t t0 = seq_starts[s];
    const int n = seq_starts[s + 1] - seq_starts[s];
    float* st = state + static_cast<int64_t>(slots[s]) * keep * channels;
    parallel_ranges(channels, static_cast<int64_t>(n) * kernel, [&](int64_t c0, int64_t c1) {
      // the channel range's input window: keep state rows, then n token rows, per channel
      std::vector<float> in(static_cast<size_t>(keep + n));
      for (int64_t c = c0; c < c1; c++) {
        for (int r = 0; r < keep; r++) in[r] = st[r * channels + c];
        for (int t = 0; t < n; t++) in[keep + t] = x[(t0 + t) * channels + c];
        const float* wc = w + c * kernel;
        for (int t = 0; t < n; t++) {
          float sum = 0.0f;
          for (int i = 0; i < kernel; i++) sum += in[t + i] * wc[i];
          out[(t0 + t) * channels + c] = silu(sum);
        }
        for (int r = 0; r < keep; r++) st[r * channels + c] = in[n + r];
      }
    });
  }
}

void gated_delta_rule(float* out, const float* q, const float* k, const float* v, const float* g,
                      const float* beta, float* state, const int32_t* slots, const int32_t* seq_starts,
                      int num_seqs, int hk, int hv, int S) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(S));
  const int64_t tokens = seq_starts[num_seqs] - seq_starts[0];
  const int64_t cost = num_seqs > 0 ? (tokens / num_seqs + 1) * 4 * S * S : 0;
  parallel_ranges(static_cast<int64_t>(num_seqs) * hv, cost, [&](int64_t p0, int64_t p1) {
    std::vector<float> delta(static_cast<size_t>(S));
    for (int64_t p = p0; p < p1; p++) {
      const int s = static_cast<int>(p / hv), h = static_cast<int>(p % hv);
      float* m = state + (static_cast<int64_t>(slots[s]) * hv + h) * S * S;
      for (int64_t t = seq_starts[s]; t < seq_starts[s + 1]; t++) {
        const float* kt = k + (t * hk + h % hk) * S;
        const float* qt = q + (t * hk + h % hk) * S;
        const float* vt = v + (t * hv + h) * S;
        const float decay = std::exp(g[t * hv + h]);
        const float b = beta[t * hv + h];
        for (int j = 0; j < S; j++) delta[j] = (vt[j] - scale_dot(m + j * S, decay, kt, S)) * b;
        float* o = out + (t * hv + h) * S;
        for (int j = 0; j < S; j++) o[j] = mad_dot(m + j * S, kt, delta[j], qt, S) * scale;
      }
    }
  });
}

}  // namespace loom
