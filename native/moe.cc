// moe_experts: one layer's routed experts in five steps, each one parallel region over all
// the active experts at once: gather each expert's tokens, gate/up (one matmul_batch), biases
// and the gated activation, down (one matmul_batch), then each token's weighted sum. (A long
// prompt's chunk runs the first four steps over groups of experts, to bound their memory.) The steps
// and their f32 roundings are those of the per-expert kernel calls the reference makes
// (src/kernels/reference-moe.ts): addBias, siluMul / geluMul / swigluOai, the down bias and
// scale, the routing weight, and the adds in the router's order.
#include "moe.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "act.h"
#include "matmul-internal.h"
#include "matmul.h"
#include "parallel.h"

namespace loom {

namespace {

// the gathered, gate/up and activated rows of one group of experts (see moe_experts)
constexpr size_t kGroupBytes = size_t{64} << 20;

thread_local Scratch t_moe;
thread_local std::vector<MatmulJob> t_jobs;
thread_local std::vector<MatmulPart> t_parts;

float* carve(uint8_t*& at, size_t floats) {
  float* p = reinterpret_cast<float*>(at);
  at += (floats * sizeof(float) + 63) & ~size_t{63};
  return p;
}

}  // namespace

void moe_experts(float* out, const float* x, const int32_t* ids, const float* weights, const MoeShape& s,
                 const ExpertWeights& w) {
  const int T = s.tokens, K = s.k, E = s.experts, D = s.hidden, F = s.ffn;
  const int P = T * K;  // (token, slot) pairs
  if (P <= 0) return;
  const bool fused = w.up == nullptr;

  // counting sort of the pairs by expert, in pair (token) order within an expert
  std::vector<int> starts(E + 1, 0), row_of(P), pair_at(P);
  for (int p = 0; p < P; p++) starts[ids[p] + 1]++;
  for (int e = 0; e < E; e++) starts[e + 1] += starts[e];
  std::vector<int> expert_of(P);  // of each grouped row
  for (int e = 0; e < E; e++)
    for (int r = starts[e]; r < starts[e + 1]; r++) expert_of[r] = e;
  {
    std::vector<int> fill(starts.begin(), starts.end() - 1);
    for (int p = 0; p < P; p++) {
      const int r = fill[ids[p]]++;
      row_of[p] = r;
      pair_at[r] = p;
    }
  }

  // [P, D] down outputs, rows grouped by expert; and per group of experts (below) its rows'
  // gathered inputs [R, D], gate and up [R, 2F] (side by side per row when fused), activated [R, F]
  const size_t gu_width = 2 * static_cast<size_t>(F);
  const size_t row_floats = static_cast<size_t>(D) + gu_width + static_cast<size_t>(F);
  // experts run in groups of at most ~kGroupBytes of those (or one expert, however many rows):
  // a long prompt's chunk (thousands of (token, expert) pairs) needs no more memory than its
  // down outputs and one group, and an expert's products are the same whichever group it is in
  int group_rows = std::max<int>(1, static_cast<int>(kGroupBytes / (sizeof(float) * row_floats)));
  if (const char* env = std::getenv("LOOM_MOE_GROUP_ROWS")) group_rows = std::max(1, std::atoi(env));  // tests: small groups
  const int max_rows = std::min(P, group_rows);
  int widest = 0;  // the most rows of one expert
  for (int e = 0; e < E; e++) widest = std::max(widest, starts[e + 1] - starts[e]);
  const int R = std::max(max_rows, widest);
  const size_t floats[4] = {static_cast<size_t>(P) * D, static_cast<size_t>(R) * D, R * gu_width, static_cast<size_t>(R) * F};
  size_t bytes = 0;
  for (const size_t f : floats) bytes += (f * sizeof(float) + 63) & ~size_t{63};
  uint8_t* at = t_moe.get(bytes);
  float* y = carve(at, floats[0]);
  float* xg = carve(at, floats[1]);
  float* gu = carve(at, floats[2]);
  float* act = carve(at, floats[3]);

  std::vector<MatmulJob>& jobs = t_jobs;
  std::vector<MatmulPart>& parts = t_parts;
  parts.reserve(2 * static_cast<size_t>(E));  // never reallocated below: jobs point into it
  for (int e0 = 0; e0 < E;) {
    // experts [e0, e1): rows [base, base + n_rows) of the grouped order
    int e1 = e0 + 1;
    while (e1 < E && starts[e1 + 1] - starts[e0] <= R) e1++;
    const int base = starts[e0], n_rows = starts[e1] - base;
    const int first_expert = e0;
    e0 = e1;
    if (n_rows == 0) continue;
    // separate files: the group's gate rows in gu[r·F], its up rows after them
    float* g = gu;
    float* u = gu + static_cast<size_t>(n_rows) * F;

    parallel_ranges(n_rows, D, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++)
        std::memcpy(xg + r * D, x + static_cast<size_t>(pair_at[base + r] / K) * D, sizeof(float) * D);
    });

    // gate/up: one job per expert with tokens
    jobs.clear();
    parts.clear();
    for (int e = first_expert; e < e1; e++) {
      const int r = starts[e] - base, n = starts[e + 1] - starts[e];
      if (n == 0) continue;
      const size_t first = parts.size();
      if (fused) {
        parts.push_back({gu + static_cast<size_t>(r) * gu_width, w.gate[e], w.gate_type, 2 * F});
      } else {
        parts.push_back({g + static_cast<size_t>(r) * F, w.gate[e], w.gate_type, F});
        parts.push_back({u + static_cast<size_t>(r) * F, w.up[e], w.up_type, F});
      }
      jobs.push_back({xg + static_cast<size_t>(r) * D, n, D, parts.data() + first, static_cast<int>(parts.size() - first)});
    }
    matmul_batch(jobs.data(), static_cast<int>(jobs.size()));

    // biases, then the gated activation, row by row (elementwise: a row's values do not
    // depend on where the kernel's vectors start)
    parallel_ranges(n_rows, 8 * static_cast<int64_t>(F), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {
        const int e = expert_of[base + r];
        float* gr = fused ? gu + r * gu_width : g + r * F;
        float* ur = fused ? gr + F : u + r * F;
        if (w.gate_bias)
          for (int i = 0; i < F; i++) gr[i] += w.gate_bias[static_cast<size_t>(e) * F + i];
        if (w.up_bias)
          for (int i = 0; i < F; i++) ur[i] += w.up_bias[static_cast<size_t>(e) * F + i];
        float* ar = act + r * F;
        if (s.act == ExpertAct::kSilu) silu_mul(ar, gr, ur, F);
        else if (s.act == ExpertAct::kGelu) gelu_mul(ar, gr, ur, F);
        else swiglu_oai(ar, gr, ur, F, s.alpha, s.limit);
      }
    });

    // down: one job per expert with tokens
    jobs.clear();
    parts.clear();
    for (int e = first_expert; e < e1; e++) {
      const int r = starts[e] - base, n = starts[e + 1] - starts[e];
      if (n == 0) continue;
      parts.push_back({y + static_cast<size_t>(starts[e]) * D, w.down[e], w.down_type, D});
      jobs.push_back({act + static_cast<size_t>(r) * F, n, F, &parts.back(), 1});
    }
    matmul_batch(jobs.data(), static_cast<int>(jobs.size()));
  }

  // per token: its slots best first, each (down + bias) · scale · weight, added in f32
  parallel_ranges(T, static_cast<int64_t>(K) * D, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      float* o = out + t * D;
      for (int j = 0; j < K; j++) {
        const int p = static_cast<int>(t) * K + j, e = ids[p];
        const float* yr = y + static_cast<size_t>(row_of[p]) * D;
        const float* db = w.down_bias ? w.down_bias + static_cast<size_t>(e) * D : nullptr;
        const float wt = weights[p];
        for (int i = 0; i < D; i++) {
          float v = yr[i];
          if (db) v += db[i];
          if (w.down_scale) v *= w.down_scale[e];
          v *= wt;
          o[i] = j == 0 ? v : o[i] + v;
        }
      }
    }
  });
}

}  // namespace loom
