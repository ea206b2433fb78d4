// Gated DeltaNet kernels (recurrent.h). The delta rule runs per (sequence, value head), each
// owned by one thread (no sharing): token by token for decode, in chunks for prefill (see
// recurrent-impl.h), on the widest instruction set the CPU has (x86/recurrent_*.cc) or the
// portable Ops here.
#include "recurrent.h"

#include <cmath>
#include <vector>

#include "cpu.h"
#include "parallel.h"
#include "recurrent-impl.h"
#include "simd.h"

namespace loom {

namespace {

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

struct PortableOps {
  // measured on x86-64 (SSE2 code): chunks of 128 tokens cost 144 µs per token of 16 heads
  // against 78 token by token (the plain-loop gemm is not register-blocked), so never
  static constexpr int kChunkMin = 1 << 30;
  static void step(float* m, const float* k, const float* q, const float* v, float decay, float beta, float scale, float* out, int S) {
    for (int j = 0; j < S; j++) {
      float* row = m + static_cast<int64_t>(j) * S;
      const float delta = (v[j] - scale_dot(row, decay, k, S)) * beta;
      out[j] = mad_dot(row, k, delta, q, S) * scale;
    }
  }
  static void gemm(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb, int rows, int inner, int cols,
                   float c_scale) {
    for (int r = 0; r < rows; r++) {
      float* cr = c + r * ldc;
      if (c_scale == 0.0f)
        for (int x = 0; x < cols; x++) cr[x] = 0.0f;
      else if (c_scale != 1.0f)
        for (int x = 0; x < cols; x++) cr[x] *= c_scale;
      for (int y = 0; y < inner; y++) {
        const float w = a[r * lda + y];
        const float* by = b + y * ldb;
        for (int x = 0; x < cols; x++) cr[x] += w * by[x];
      }
    }
  }
};

void delta_head_portable(const DeltaHead& h) { delta_head<PortableOps>(h); }

const RecurrentOps kPortableRecurrent = {"portable", delta_head_portable};

const RecurrentOps& recurrent_ops() {
  static const RecurrentOps& ops = [&]() -> const RecurrentOps& {
#if defined(__x86_64__)
    if (use_avx512()) return x86::kAvx512Recurrent;
    if (use_avx2()) return x86::kAvx2Recurrent;
#endif
    return kPortableRecurrent;
  }();
  return ops;
}

}  // namespace

// Work items are (sequence, block of kConvBlock channels): each copies its window (state
// rows, then the token rows) into a buffer, so out may alias x, and runs over the block's
// channels in the inner loops, which the compiler vectorizes; SiLU on the CPU's widest
// instruction set (simd().silu_mul by ones).
constexpr int kConvBlock = 64;
constexpr float kOnes[kConvBlock] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                     1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

void conv_silu(float* out, const float* x, const float* w, float* state, const int32_t* slots,
               const int32_t* seq_starts, int num_seqs, int channels, int kernel) {
  const int keep = kernel - 1;
  const int64_t blocks = (channels + kConvBlock - 1) / kConvBlock;
  const int64_t tokens = seq_starts[num_seqs] - seq_starts[0];
  const int64_t cost = num_seqs > 0 ? (tokens / num_seqs + 1) * kernel * kConvBlock * 4 : 0;
  parallel_ranges(static_cast<int64_t>(num_seqs) * blocks, cost, [&](int64_t p0, int64_t p1) {
    std::vector<float> win, wt(static_cast<size_t>(kernel) * kConvBlock);
    for (int64_t p = p0; p < p1; p++) {
      const int s = static_cast<int>(p / blocks);
      const int c0 = static_cast<int>(p % blocks) * kConvBlock;
      const int B = channels - c0 < kConvBlock ? channels - c0 : kConvBlock;
      const int64_t t0 = seq_starts[s];
      const int n = seq_starts[s + 1] - seq_starts[s];
      float* st = state + static_cast<int64_t>(slots[s]) * keep * channels + c0;
      win.resize(static_cast<size_t>(keep + n) * kConvBlock);
      for (int r = 0; r < keep; r++)
        for (int c = 0; c < B; c++) win[r * kConvBlock + c] = st[static_cast<int64_t>(r) * channels + c];
      for (int t = 0; t < n; t++)
        for (int c = 0; c < B; c++) win[(keep + t) * kConvBlock + c] = x[(t0 + t) * channels + c0 + c];
      for (int i = 0; i < kernel; i++)
        for (int c = 0; c < B; c++) wt[i * kConvBlock + c] = w[static_cast<int64_t>(c0 + c) * kernel + i];
      for (int t = 0; t < n; t++) {
        float* o = out + (t0 + t) * channels + c0;
        float acc[kConvBlock];
        for (int c = 0; c < B; c++) acc[c] = 0.0f;
        for (int i = 0; i < kernel; i++) {
          const float* in = win.data() + (t + i) * kConvBlock;
          const float* wi = wt.data() + i * kConvBlock;
          for (int c = 0; c < B; c++) acc[c] += in[c] * wi[c];
        }
        simd().silu_mul(o, acc, kOnes, B);
      }
      for (int r = 0; r < keep; r++)
        for (int c = 0; c < B; c++) st[static_cast<int64_t>(r) * channels + c] = win[(n + r) * kConvBlock + c];
    }
  });
}

void gated_delta_rule(float* out, const float* q, const float* k, const float* v, const float* g,
                      const float* beta, float* state, const int32_t* slots, const int32_t* seq_starts,
                      int num_seqs, int hk, int hv, int S) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(S));
  const int64_t tokens = seq_starts[num_seqs] - seq_starts[0];
  const int64_t cost = num_seqs > 0 ? (tokens / num_seqs + 1) * 4 * S * S : 0;
  const RecurrentOps& ops = recurrent_ops();
  parallel_ranges(static_cast<int64_t>(num_seqs) * hv, cost, [&](int64_t p0, int64_t p1) {
    std::vector<float> scratch;
    for (int64_t p = p0; p < p1; p++) {
      const int s = static_cast<int>(p / hv), h = static_cast<int>(p % hv);
      const int64_t t0 = seq_starts[s];
      DeltaHead job{};
      job.m = state + (static_cast<int64_t>(slots[s]) * hv + h) * S * S;
      job.q = q + (t0 * hk + h % hk) * S;
      job.k = k + (t0 * hk + h % hk) * S;
      job.qk_stride = static_cast<int64_t>(hk) * S;
      job.v = v + (t0 * hv + h) * S;
      job.out = out + (t0 * hv + h) * S;
      job.v_stride = static_cast<int64_t>(hv) * S;
      job.g = g + t0 * hv + h;
      job.beta = beta + t0 * hv + h;
      job.gb_stride = hv;
      job.n = seq_starts[s + 1] - seq_starts[s];
      job.S = S;
      job.scale = scale;
      if (job.n >= kDeltaChunkMin) {
        if (scratch.empty()) scratch.resize(static_cast<size_t>(delta_scratch_floats(S)));
        job.scratch = scratch.data();
      }
      ops.delta_head(job);
    }
  });
}

const char* recurrent_kernels() { return recurrent_ops().name; }

}  // namespace loom
