// The two halves of paged attention for one token's query heads (scores with softmax stats,
// then weights times V), written once over an `Ops` struct of static vector primitives and
// instantiated by each instruction-set translation unit.
// Ops works on the n ≤ block_size consecutive slots of one block (K/V rows `stride` apart):
//   scores(q, k, stride, n, d, scale, out)   out[j] = scale · q·k_j       (k: const float*, const uint16_t* of f16 bits, Q8Ptr or Q4Ptr)
//   accumulate(acc, w, v, stride, n, d)      acc[i] += Σ_j w[j] · v_j[i]  (v: the same)
//   max_of(x, n), exp_shift_sum(x, n, max), round_f16(x, n) (in place)
// and the same for G heads at once (q, out, w: G rows, d / d / w_stride apart):
//   scores_heads(q, G, k, stride, n, d, scale, out, out_stride)
//   accumulate_heads(acc, G, w, w_stride, v, stride, n, d)
// PerKeyOps builds scores/accumulate from per-row dot/axpy, and HeadLoopOps the G-head forms
// from the one-head ones, for Ops that have nothing better.
// Static templates (internal linkage): each translation unit keeps its own instantiation.
#pragma once
#include <cmath>
#include <cstdint>

#include "kv-type.h"
#include "simd.h"

namespace loom {

template <class Ops>
struct PerKeyOps {
  template <class P>
  static void scores(const float* q, P k, int64_t stride, int n, int d, float scale, float* out) {
    for (int j = 0; j < n; j++) out[j] = Ops::dot(q, k + j * stride, d) * scale;
  }
  template <class P>
  static void accumulate(float* acc, const float* w, P v, int64_t stride, int n, int d) {
    for (int j = 0; j < n; j++) Ops::axpy(acc, w[j], v + j * stride, d);
  }
};

template <class Ops>
struct HeadLoopOps {
  template <class P>
  static void scores_heads(const float* q, int G, P k, int64_t stride, int n, int d, float scale, float* out,
                           int64_t out_stride) {
    for (int g = 0; g < G; g++) Ops::scores(q + g * d, k, stride, n, d, scale, out + g * out_stride);
  }
  template <class P>
  static void accumulate_heads(float* acc, int G, const float* w, int64_t w_stride, P v, int64_t stride, int n, int d) {
    for (int g = 0; g < G; g++) Ops::accumulate(acc + g * d, w + g * w_stride, v, stride, n, d);
  }
};

// Element of the row at offset o of block b (of the sequence's table) for the job's KV head kh
static inline int64_t kv_row(const AttendHead& a, int b, int o, int kh) {
  return a.blocks[b] * a.block_stride + a.head_offset + (static_cast<int64_t>(kh) * a.block_size + o) * a.head_dim;
}

// The job's K or V rows of the block `ahead` blocks after block b (when it is within
// [.., p1)): blocks are scattered, which the hardware prefetcher does not follow. A job of
// every KV head reads each block as one stretch: there the next block is fetched only when it
// does not follow the current one in memory (the hardware prefetcher follows a run of adjacent
// blocks: in the cache's earlier row-major layout fetching them as well was 20–30% slower; in
// this one, fetching no block at all measured the same as this, 64 sequences or 4).
static inline void prefetch_block(const AttendHead& a, const void* base, int b, int p1) {
  const bool whole_blocks = static_cast<int64_t>(a.kv_heads) * a.block_size * a.head_dim == a.block_stride;
  const int ahead = whole_blocks ? 1 : 2;
  if ((b + ahead) * a.block_size >= p1) return;
  if (whole_blocks && a.blocks[b + 1] == a.blocks[b] + 1) return;
  const KvType t = static_cast<KvType>(a.type);
  const char* rows = static_cast<const char*>(base) + kv_bytes(t, kv_row(a, b + ahead, 0, 0));
  const int64_t bytes = kv_bytes(t, static_cast<int64_t>(a.kv_heads) * a.block_size * a.head_dim);
  for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(rows + o);
}

// Positions [p0, p1) of the context (first ≤ p0): scores[g][p] = e^(s_gp − max_g) with
// s_gp = scale·q_g·k_p (soft-capped when a.softcap > 0) and max_g the maximum over
// [p0, p1), written to a.stats[g]; their sum to a.stats[T + g] (T = heads · kv_heads query
// heads; head g reads KV head g / heads). A block's KV heads are taken in turn, so a job of
// several KV heads reads the block front to back.
template <class Ops>
static void attend_scores_impl(const AttendHead& a, int p0, int p1) {
  const int d = a.head_dim, G = a.heads, T = G * a.kv_heads;
  const int64_t span = a.ctx - a.first;
  const float* q = a.q;
  const KvType type = static_cast<KvType>(a.type);
  if (type == KvType::kF16) {
    for (int i = 0; i < T * d; i++) a.q_scratch[i] = a.q[i];
    Ops::round_f16(a.q_scratch, T * d);
    q = a.q_scratch;
  }
  const float* k32 = static_cast<const float*>(a.k);
  const uint16_t* k16 = static_cast<const uint16_t*>(a.k);
  const Q8Ptr k8{static_cast<const uint8_t*>(a.k), 0};
  const Q4Ptr k4{static_cast<const uint8_t*>(a.k), 0};
  // scores[g][p] = scale · q_g·k_p, walking the block table (a window may start mid-block)
  for (int p = p0; p < p1;) {
    const int b = p / a.block_size, o = p % a.block_size;
    const int n = p1 - p < a.block_size - o ? p1 - p : a.block_size - o;
    prefetch_block(a, a.k, b, p1);
    for (int kh = 0; kh < a.kv_heads; kh++) {
      float* dst = a.scores + kh * G * span + (p - a.first);
      const float* qh = q + kh * G * d;
      const int64_t at = kv_row(a, b, o, kh);
      if (type == KvType::kF16) Ops::scores_heads(qh, G, k16 + at, d, n, d, a.scale, dst, span);
      else if (type == KvType::kQ8_0) Ops::scores_heads(qh, G, k8 + at, d, n, d, a.scale, dst, span);
      else if (type == KvType::kQ4_0) Ops::scores_heads(qh, G, k4 + at, d, n, d, a.scale, dst, span);
      else Ops::scores_heads(qh, G, k32 + at, d, n, d, a.scale, dst, span);
    }
    p += n;
  }
  for (int g = 0; g < T; g++) {
    float* scores = a.scores + g * span + (p0 - a.first);
    if (a.softcap > 0) {
      // ggml's scale(1/cap) → tanh → scale(cap), each in f32
      const float inv = 1.0f / a.softcap;
      for (int p = 0; p < p1 - p0; p++) scores[p] = std::tanh(scores[p] * inv) * a.softcap;
    }
    a.stats[g] = Ops::max_of(scores, p1 - p0);
    // a sink takes part in the maximum as ggml_soft_max_ext's does; attention.cc adds e^(sink − max) to the sum
    if (a.sinks && a.sinks[g] > a.stats[g]) a.stats[g] = a.sinks[g];
    a.stats[T + g] = Ops::exp_shift_sum(scores, p1 - p0, a.stats[g]);
  }
}

// out_g = Σ_{p0 ≤ p < p1} w_g,p · v_p, the weights w = scores · factor[g] (rounded to f16
// for an f16 cache, as llama.cpp's f16 matmul with V does; kept in f32 for a q8_0/q4_0 cache, as
// llama.cpp's flash attention, which a quantized V needs there, does)
template <class Ops>
static void attend_values_impl(const AttendHead& a, int p0, int p1, const float* factor, float* out) {
  const int d = a.head_dim, G = a.heads, T = G * a.kv_heads;
  const int64_t span = a.ctx - a.first;
  const KvType type = static_cast<KvType>(a.type);
  for (int g = 0; g < T; g++) {
    float* w = a.scores + g * span + (p0 - a.first);
    for (int p = 0; p < p1 - p0; p++) w[p] *= factor[g];
    if (type == KvType::kF16) Ops::round_f16(w, p1 - p0);
  }
  const float* v32 = static_cast<const float*>(a.v);
  const uint16_t* v16 = static_cast<const uint16_t*>(a.v);
  const Q8Ptr v8{static_cast<const uint8_t*>(a.v), 0};
  const Q4Ptr v4{static_cast<const uint8_t*>(a.v), 0};
  for (int i = 0; i < T * d; i++) out[i] = 0.0f;
  for (int p = p0; p < p1;) {
    const int b = p / a.block_size, o = p % a.block_size;
    const int n = p1 - p < a.block_size - o ? p1 - p : a.block_size - o;
    prefetch_block(a, a.v, b, p1);
    for (int kh = 0; kh < a.kv_heads; kh++) {
      const float* w = a.scores + kh * G * span + (p - a.first);
      const int64_t at = kv_row(a, b, o, kh);
      if (type == KvType::kF16) Ops::accumulate_heads(out + kh * G * d, G, w, span, v16 + at, d, n, d);
      else if (type == KvType::kQ8_0) Ops::accumulate_heads(out + kh * G * d, G, w, span, v8 + at, d, n, d);
      else if (type == KvType::kQ4_0) Ops::accumulate_heads(out + kh * G * d, G, w, span, v4 + at, d, n, d);
      else Ops::accumulate_heads(out + kh * G * d, G, w, span, v32 + at, d, n, d);
    }
    p += n;
  }
}

}  // namespace loom
