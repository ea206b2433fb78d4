// The body of one (token, head) of paged attention, written once over an `Ops` struct of
// static vector primitives and instantiated by each instruction-set translation unit:
//   dot_f32(q, k, d), dot_f16(q, kbits, d)           → Σ q[i]·k[i]
//   axpy_f32(acc, w, v, d), axpy_f16(acc, w, vbits, d) acc[i] += w·v[i]
//   max_of(x, n), exp_shift_sum(x, n, max), round_f16(x, n) (in place)
// Static template (internal linkage): each translation unit keeps its own instantiation.
#pragma once
#include <cstdint>

#include "simd.h"

namespace loom {

template <class Ops>
static void attend_head_impl(const AttendHead& a) {
  const int d = a.head_dim;
  const float* q = a.q;
  if (a.f16) {
    for (int i = 0; i < d; i++) a.q_scratch[i] = a.q[i];
    Ops::round_f16(a.q_scratch, d);
    q = a.q_scratch;
  }
  const float* k32 = static_cast<const float*>(a.k);
  const uint16_t* k16 = static_cast<const uint16_t*>(a.k);
  // scores[p] = scale · q·k_p, walking the block table
  for (int p0 = 0, b = 0; p0 < a.ctx; p0 += a.block_size, b++) {
    const int n = a.ctx - p0 < a.block_size ? a.ctx - p0 : a.block_size;
    int64_t off = static_cast<int64_t>(a.blocks[b]) * a.block_size * a.kv_stride + a.head_offset;
    for (int j = 0; j < n; j++, off += a.kv_stride) {
      const float dot = a.f16 ? Ops::dot_f16(q, k16 + off, d) : Ops::dot_f32(q, k32 + off, d);
      a.scores[p0 + j] = dot * a.scale;
    }
  }
  const float max = Ops::max_of(a.scores, a.ctx);
  const float inv = 1.0f / Ops::exp_shift_sum(a.scores, a.ctx, max);
  for (int p = 0; p < a.ctx; p++) a.scores[p] *= inv;
  if (a.f16) Ops::round_f16(a.scores, a.ctx);
  // out = Σ_p w_p · v_p
  const float* v32 = static_cast<const float*>(a.v);
  const uint16_t* v16 = static_cast<const uint16_t*>(a.v);
  for (int i = 0; i < d; i++) a.out[i] = 0.0f;
  for (int p0 = 0, b = 0; p0 < a.ctx; p0 += a.block_size, b++) {
    const int n = a.ctx - p0 < a.block_size ? a.ctx - p0 : a.block_size;
    int64_t off = static_cast<int64_t>(a.blocks[b]) * a.block_size * a.kv_stride + a.head_offset;
    for (int j = 0; j < n; j++, off += a.kv_stride) {
      const float w = a.scores[p0 + j];
      if (a.f16) Ops::axpy_f16(a.out, w, v16 + off, d);
      else Ops::axpy_f32(a.out, w, v32 + off, d);
    }
  }
}

}  // namespace loom
