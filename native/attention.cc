#include "attention.h"

#include <cstring>
#include <vector>

#include "parallel.h"
#include "simd.h"

namespace loom {

void write_kv(const KvCacheView& c, const float* k, const float* v, const int32_t* slot_mapping, int64_t n_tokens) {
  const int64_t width = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
  const SimdOps& ops = simd();
  parallel_ranges(n_tokens, 2 * width, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const int64_t dst = static_cast<int64_t>(slot_mapping[t]) * width;
      if (c.f16) {
        ops.f32_to_f16(static_cast<uint16_t*>(c.k) + dst, k + t * width, width);
        ops.f32_to_f16(static_cast<uint16_t*>(c.v) + dst, v + t * width, width);
      } else {
        std::memcpy(static_cast<float*>(c.k) + dst, k + t * width, width * sizeof(float));
        std::memcpy(static_cast<float*>(c.v) + dst, v + t * width, width * sizeof(float));
      }
    }
  });
}

const char* check_attention_batch(const AttentionBatchView& b, int64_t n_tokens, int num_blocks, int block_size) {
  if (b.num_seqs < 0 || b.seq_starts[0] != 0 || b.seq_starts[b.num_seqs] != n_tokens)
    return "seqStarts must run from 0 to the number of tokens";
  for (int s = 0; s < b.num_seqs; s++) {
    const int32_t begin = b.seq_starts[s], end = b.seq_starts[s + 1];
    if (end < begin) return "seqStarts must not decrease";
    int32_t max_pos = -1;
    for (int32_t t = begin; t < end; t++) {
      if (b.positions[t] < 0) return "positions must be >= 0";
      if (b.positions[t] > max_pos) max_pos = b.positions[t];
    }
    if (max_pos < 0) continue;
    const int64_t blocks_needed = static_cast<int64_t>(max_pos) / block_size + 1;
    if (blocks_needed > b.max_blocks_per_seq) return "a position lies beyond the sequence's block table";
    const int32_t* table = b.block_tables + static_cast<int64_t>(s) * b.max_blocks_per_seq;
    for (int64_t i = 0; i < blocks_needed; i++)
      if (table[i] < 0 || table[i] >= num_blocks) return "a block needed by a position is missing or outside the cache";
  }
  return nullptr;
}

void attention(float* out, const float* q, const KvCacheView& c, const AttentionBatchView& b, int64_t n_tokens,
               int num_heads, float scale) {
  if (n_tokens <= 0) return;
  const int d = c.head_dim;
  const int group = num_heads / c.num_kv_heads;
  // token → sequence
  thread_local std::vector<int32_t> seq_of;
  seq_of.resize(static_cast<size_t>(n_tokens));
  int64_t work = 0;
  for (int s = 0; s < b.num_seqs; s++)
    for (int32_t t = b.seq_starts[s]; t < b.seq_starts[s + 1]; t++) {
      seq_of[t] = s;
      work += b.positions[t] + 1;
    }
  const int32_t* seq_of_token = seq_of.data();
  const SimdOps& ops = simd();
  ThreadPool& p = pool();
  // A unit is the query heads of one token that share a KV head when the kernels read each
  // K/V row once for all of them (about 1.7× less work a head), unless too few units would
  // leave threads idle for longer than that saves (one decoding sequence has only
  // num_kv_heads units): then one head a unit.
  const int64_t threads = p.size();
  const auto rounds = [&](int64_t units) { return (units + threads - 1) / threads; };
  const bool grouped = ops.shares_kv_rows && group > 1 &&
                       10 * rounds(n_tokens * c.num_kv_heads) * group <= 17 * rounds(n_tokens * num_heads);
  const int heads = grouped ? group : 1;
  const int units_per_token = num_heads / heads;
  const auto run = [&](int64_t u0, int64_t u1) {
    thread_local std::vector<float> scratch;
    for (int64_t u = u0; u < u1; u++) {
      const int64_t t = u / units_per_token;
      const int h = static_cast<int>(u % units_per_token) * heads;  // the unit's first query head
      const int ctx = b.positions[t] + 1;
      const size_t need = static_cast<size_t>(heads) * (ctx + d);
      if (scratch.size() < need) scratch.resize(need * 2);
      AttendHead job;
      job.q = q + (t * num_heads + h) * d;
      job.k = c.k;
      job.v = c.v;
      job.f16 = c.f16;
      job.blocks = b.block_tables + static_cast<int64_t>(seq_of_token[t]) * b.max_blocks_per_seq;
      job.block_size = c.block_size;
      job.ctx = ctx;
      job.kv_stride = static_cast<int64_t>(c.num_kv_heads) * d;
      job.head_offset = static_cast<int64_t>(h / group) * d;
      job.head_dim = d;
      job.heads = heads;
      job.scale = scale;
      job.q_scratch = scratch.data();
      job.scores = scratch.data() + static_cast<int64_t>(heads) * d;
      job.out = out + (t * num_heads + h) * d;
      ops.attend_head(job);
    }
  };
  // Units of heads sharing a kv head are adjacent. Their costs differ (context lengths), so
  // many small tasks are handed out dynamically rather than one range a thread.
  const int64_t units = n_tokens * units_per_token;
  if (work * num_heads * d * 4 < kMinParallelWork || p.size() == 1 || units == 1) {
    run(0, units);
    return;
  }
  const int tasks = static_cast<int>(std::min<int64_t>(units, 16 * static_cast<int64_t>(p.size())));
  struct Job {
    int64_t units;
    int tasks;
    const decltype(run)* body;
  } job{units, tasks, &run};
  const Job* j = &job;  // one captured pointer: std::function stores it without allocating
  p.parallel_for(tasks, [j](int task, int) { (*j->body)(j->units * task / j->tasks, j->units * (task + 1) / j->tasks); });
}

}  // namespace loom
