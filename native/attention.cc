#include "attention.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "half.h"
#include "parallel.h"
#include "simd.h"

namespace loom {

namespace {

// the first position a query at `pos` attends to: 0, or pos − window + 1 within a sliding window
int32_t first_position(int32_t pos, int window) { return window > 0 && pos + 1 > window ? pos + 1 - window : 0; }

// token t's first attended position: its window measured back from window_positions[t] when the
// batch has them (else positions[t]), raised to the batch's first_positions[t] when that is later
int32_t first_of_token(const AttentionBatchView& b, int64_t t, int window) {
  const int32_t first = first_position(b.window_positions ? b.window_positions[t] : b.positions[t], window);
  return b.first_positions && b.first_positions[t] > first ? b.first_positions[t] : first;
}

// One block of 32 values as x86 llama.cpp's quantize_row_q8_0 (what its CPU backend writes
// into a q8_0 KV cache): d = f16(amax / 127), q = round-half-even(x · 127 / amax), saturated.
void quantize_kv_q8_0(uint8_t* block, const float* x) {
  float amax = 0;
  for (int j = 0; j < kKvQ8Block; j++) {
    const float a = std::fabs(x[j]);
    amax = a > amax || std::isnan(a) ? a : amax;
  }
  const uint16_t d = f32_to_f16(amax / 127.f);
  std::memcpy(block, &d, 2);
  const float id = amax != 0.f ? 127.f / amax : 0.f;
  for (int j = 0; j < kKvQ8Block; j++) {
    const float v = x[j] * id;
    float r = std::isfinite(v) ? std::rint(v) : -128.f;
    r = r < -128.f ? -128.f : (r > 127.f ? 127.f : r);
    block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(r));
  }
}

// One block of 32 values as llama.cpp's quantize_row_q4_0 (its _ref on every CPU): d = max / −8
// (max the value of largest magnitude), q = min(15, (int8)(x / d + 8.5)), two a byte.
void quantize_kv_q4_0(uint8_t* block, const float* x) {
  float amax = 0, max = 0;
  for (int j = 0; j < kKvQ8Block; j++) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8;
  const float id = d != 0.f ? 1.0f / d : 0.0f;
  const uint16_t dh = f32_to_f16(d);
  std::memcpy(block, &dh, 2);
  for (int j = 0; j < 16; j++) {
    const int q0 = static_cast<int8_t>(x[j] * id + 8.5f), q1 = static_cast<int8_t>(x[16 + j] * id + 8.5f);
    block[2 + j] = static_cast<uint8_t>((q0 < 15 ? q0 : 15) | (q1 < 15 ? q1 : 15) << 4);
  }
}

}  // namespace

void write_kv(const KvCacheView& c, const float* k, const float* v, const int32_t* slot_mapping, int64_t n_tokens) {
  const int d = c.head_dim;
  const int64_t width = static_cast<int64_t>(c.num_kv_heads) * d;
  const int64_t head_rows = static_cast<int64_t>(c.block_size) * d;  // one KV head's rows of a block
  const SimdOps& ops = simd();
  parallel_ranges(n_tokens, 2 * width, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const int64_t slot = slot_mapping[t], block = slot / c.block_size, offset = slot % c.block_size;
      for (int h = 0; h < c.num_kv_heads; h++) {
        const int64_t dst = (block * c.num_kv_heads + h) * head_rows + offset * d, src = t * width + h * d;
        if (c.type == KvType::kF16) {
          ops.f32_to_f16(static_cast<uint16_t*>(c.k) + dst, k + src, d);
          ops.f32_to_f16(static_cast<uint16_t*>(c.v) + dst, v + src, d);
        } else if (c.type == KvType::kQ8_0 || c.type == KvType::kQ4_0) {
          const bool q8 = c.type == KvType::kQ8_0;
          const int64_t step = kv_bytes(c.type, kKvQ8Block);
          uint8_t* kb = static_cast<uint8_t*>(c.k) + kv_bytes(c.type, dst);
          uint8_t* vb = static_cast<uint8_t*>(c.v) + kv_bytes(c.type, dst);
          for (int i = 0; i < d; i += kKvQ8Block, kb += step, vb += step) {
            (q8 ? quantize_kv_q8_0 : quantize_kv_q4_0)(kb, k + src + i);
            (q8 ? quantize_kv_q8_0 : quantize_kv_q4_0)(vb, v + src + i);
          }
        } else {
          std::memcpy(static_cast<float*>(c.k) + dst, k + src, d * sizeof(float));
          std::memcpy(static_cast<float*>(c.v) + dst, v + src, d * sizeof(float));
        }
      }
    }
  });
}

const char* check_attention_batch(const AttentionBatchView& b, int64_t n_tokens, int num_blocks, int block_size, int window) {
  if (b.num_seqs < 0 || b.seq_starts[0] != 0 || b.seq_starts[b.num_seqs] != n_tokens)
    return "seqStarts must run from 0 to the number of tokens";
  for (int s = 0; s < b.num_seqs; s++) {
    const int32_t begin = b.seq_starts[s], end = b.seq_starts[s + 1];
    if (end < begin) return "seqStarts must not decrease";
    int32_t max_pos = -1, min_first = INT32_MAX;
    for (int32_t t = begin; t < end; t++) {
      if (b.positions[t] < 0) return "positions must be >= 0";
      if (b.first_positions && (b.first_positions[t] < 0 || b.first_positions[t] > b.positions[t]))
        return "firstPositions must lie in 0..the token's position";
      if (b.window_positions && (b.window_positions[t] < 0 || b.window_positions[t] > b.positions[t]))
        return "windowPositions must be in [0, positions]";
      if (b.positions[t] > max_pos) max_pos = b.positions[t];
      min_first = std::min(min_first, first_of_token(b, t, window));
    }
    if (max_pos < 0) continue;
    const int64_t blocks_needed = static_cast<int64_t>(max_pos) / block_size + 1;
    if (blocks_needed > b.max_blocks_per_seq) return "a position lies beyond the sequence's block table";
    const int32_t* table = b.block_tables + static_cast<int64_t>(s) * b.max_blocks_per_seq;
    for (int64_t i = min_first / block_size; i < blocks_needed; i++)
      if (table[i] < 0 || table[i] >= num_blocks) return "a block needed by a position is missing or outside the cache";
  }
  return nullptr;
}

namespace {

// keys per chunk of a long context (whole blocks, about 1024 keys)
int chunk_keys_of(int block_size) { return std::max(1, 1024 / block_size) * block_size; }

// Runs of two or more tokens of a sequence that attend the same positions (an encoder's whole
// sequence: every token sees all of it) go to ops.attend_tokens in groups of up to 16, one
// query head a task, head by head within the run (one head's K/V rows stay in L2); by_group[t]
// is set for them, and the rest are attended unit by unit. Whether a token goes here depends
// on its sequence alone, never on the batch. Only where the CPU has the kernel and the cache
// is f32 (pooling models' default) without soft-cap or sinks.
void attend_token_groups(float* out, const float* q, const KvCacheView& c, const AttentionBatchView& b, int64_t n_tokens,
                         int num_heads, float scale, int window, float softcap, const float* sinks,
                         const int32_t* seq_of_token, uint8_t* by_group) {
  const SimdOps& ops = simd();
  const int d = c.head_dim;
  if (!ops.attend_tokens || c.type != KvType::kF32 || softcap > 0 || sinks || d % 16 != 0) return;
  struct Group {
    int32_t t0, n, head;
  };
  thread_local std::vector<Group> groups;
  groups.clear();
  for (int s = 0; s < b.num_seqs; s++) {
    const int32_t end = b.seq_starts[s + 1];
    for (int32_t t = b.seq_starts[s]; t < end;) {
      const int32_t first = first_of_token(b, t, window);
      int32_t r = t + 1;
      while (r < end && b.positions[r] == b.positions[t] && first_of_token(b, r, window) == first) r++;
      if (r - t >= 2) {
        for (int32_t i = t; i < r; i++) by_group[i] = 1;
        for (int h = 0; h < num_heads; h++)
          for (int32_t g = t; g < r; g += 16) groups.push_back({g, std::min<int32_t>(16, r - g), h});
      }
      t = r;
    }
  }
  if (groups.empty()) return;
  const Group* const gs = groups.data();
  const int64_t n_groups = static_cast<int64_t>(groups.size());
  const int group = num_heads / c.num_kv_heads;
  const auto run = [&](int64_t g0, int64_t g1) {
    thread_local std::vector<float> scratch;
    for (int64_t i = g0; i < g1; i++) {
      const Group& g = gs[i];
      AttendTokens job;
      job.first = first_of_token(b, g.t0, window);
      job.ctx = b.positions[g.t0] + 1;
      const size_t need = static_cast<size_t>(16) * (d + (job.ctx - job.first)) + 256;
      if (scratch.size() < need) scratch.resize(need);
      job.q = q + (static_cast<int64_t>(g.t0) * num_heads + g.head) * d;
      job.out = out + (static_cast<int64_t>(g.t0) * num_heads + g.head) * d;
      job.row_stride = static_cast<int64_t>(num_heads) * d;
      job.n = g.n;
      job.k = static_cast<const float*>(c.k);
      job.v = static_cast<const float*>(c.v);
      job.blocks = b.block_tables + static_cast<int64_t>(seq_of_token[g.t0]) * b.max_blocks_per_seq;
      job.block_size = c.block_size;
      job.block_stride = static_cast<int64_t>(c.num_kv_heads) * c.block_size * d;
      job.head_offset = static_cast<int64_t>(g.head / group) * c.block_size * d;
      job.head_dim = d;
      job.scale = scale;
      job.scratch = scratch.data();
      ops.attend_tokens(job);
    }
  };
  ThreadPool& p = pool();
  if (p.size() == 1 || n_groups == 1) return run(0, n_groups);
  const int tasks = static_cast<int>(std::min<int64_t>(n_groups, 16 * static_cast<int64_t>(p.size())));
  struct Job {
    int64_t groups;
    int tasks;
    const decltype(run)* body;
  } job{n_groups, tasks, &run};
  const Job* j = &job;  // one captured pointer, as attention_group's
  p.parallel_for(tasks, [j](int task, int) { (*j->body)(j->groups * task / j->tasks, j->groups * (task + 1) / j->tasks); });
}

void attention_group(float* out, const float* q, const KvCacheView& c, const AttentionBatchView& b, int64_t n_tokens,
                     int num_heads, float scale, int window, float softcap, const float* sinks) {
  if (n_tokens <= 0) return;
  const int d = c.head_dim;
  const int group = num_heads / c.num_kv_heads;
  // token → sequence
  thread_local std::vector<int32_t> seq_of;
  seq_of.resize(static_cast<size_t>(n_tokens));
  // Contexts longer than chunk_keys are attended in chunks that different threads take (one
  // long sequence would otherwise keep only num_kv_heads threads busy): each chunk's scores
  // and softmax stats, then weights rescaled to the whole context's maximum and sum, times
  // V per chunk, then the chunks' outputs summed in order. The chunks depend on the token's
  // attended range only (its position, and the window), never on the batch, so a token's output is the same in any batch; a
  // context of one chunk is computed exactly as before.
  const int chunk_keys = chunk_keys_of(c.block_size);
  const auto chunks_in = [&](int64_t span) { return (span + chunk_keys - 1) / chunk_keys; };
  int64_t work = 0, token_chunks = 0;
  for (int s = 0; s < b.num_seqs; s++)
    for (int32_t t = b.seq_starts[s]; t < b.seq_starts[s + 1]; t++) {
      seq_of[t] = s;
      const int32_t span = b.positions[t] + 1 - first_of_token(b, t, window);
      work += span;
      token_chunks += chunks_in(span);
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
  const int heads_per_kv = grouped ? group : 1;
  // A grouped unit takes k of its token's KV heads (k divides num_kv_heads): all of them
  // read each block front to back, one stretch, where fewer read part of each block and skip
  // the rest, which streams about 1.5× slower from DRAM; fewer make more units to share
  // among the threads. So k minimizes rounds(units) · k · (1 for whole blocks, else 1.5),
  // ties going to the larger k (units: the tokens' 1024-key chunks times num_kv_heads / k).
  // From DRAM, 2 threads, alternating in one process, against units of one KV head: 4
  // sequences of context 500 (SmolLM2's 3 KV heads) 0.118 → 0.055 ms a layer, one of context
  // 2000 0.108 → 0.049, one of context 300 0.023 → 0.015; one of context 576 with Llama-3.2-1B's
  // 8 KV heads (k = 4) 0.095 → 0.082. Each head's arithmetic is the same whatever k is, so a
  // token's output does not change.
  int kv_per_unit = 1;
  if (grouped) {
    int64_t best = INT64_MAX;
    for (int k = c.num_kv_heads; k >= 1; k--) {
      if (c.num_kv_heads % k != 0) continue;
      // the 1 and 1.5 doubled, to stay in integers
      const int64_t cost = rounds(token_chunks * (c.num_kv_heads / k)) * k * (k == c.num_kv_heads ? 2 : 3);
      if (cost < best) best = cost, kv_per_unit = k;
    }
  }
  const int heads = heads_per_kv * kv_per_unit;  // query heads a unit
  const int units_per_token = num_heads / heads;
  // Units run in order head by head within each sequence (every token's first heads, then
  // the next): a sequence's tokens then read one head's K/V rows in turn, which stay in L2,
  // where token by token each token read every head's rows (a 512-token sequence's f32 K and
  // V of 12 heads of 32, 1.5 MiB, from L3 for every token). A unit's arithmetic does not
  // depend on the order; one token a sequence (decoding) keeps the order it had.
  thread_local std::vector<int32_t> unit_token_v, unit_head_v;
  thread_local std::vector<uint8_t> by_group_v;
  by_group_v.assign(static_cast<size_t>(n_tokens), 0);
  attend_token_groups(out, q, c, b, n_tokens, num_heads, scale, window, softcap, sinks, seq_of_token, by_group_v.data());
  unit_token_v.clear();
  unit_head_v.clear();
  for (int s = 0; s < b.num_seqs; s++)
    for (int hu = 0; hu < units_per_token; hu++)
      for (int32_t t = b.seq_starts[s]; t < b.seq_starts[s + 1]; t++)
        if (!by_group_v[t]) unit_token_v.push_back(t), unit_head_v.push_back(hu);
  const int64_t units = static_cast<int64_t>(unit_token_v.size());
  if (units == 0) return;
  const int32_t* const unit_token = unit_token_v.data();
  const int32_t* const unit_head = unit_head_v.data();
  // a unit attends to positions [first_of(u), first_of(u) + span_of(u))
  const auto first_of = [&](int64_t u) { return first_of_token(b, unit_token[u], window); };
  const auto span_of = [&](int64_t u) { return b.positions[unit_token[u]] + 1 - first_of(u); };
  // items: a unit's chunks (a short context is one item that does everything). A split
  // unit's scores [heads, ctx] live in `shared` across the phases, at scores_at[u].
  thread_local std::vector<int64_t> item_start;  // [units + 1]: first item of each unit
  thread_local std::vector<int64_t> scores_at;   // [units]
  item_start.resize(static_cast<size_t>(units + 1));
  scores_at.resize(static_cast<size_t>(units));
  item_start[0] = 0;
  int64_t split_floats = 0;
  for (int64_t u = 0; u < units; u++) {
    const int64_t nc = chunks_in(span_of(u));
    item_start[u + 1] = item_start[u] + nc;
    scores_at[u] = split_floats;
    if (nc > 1) split_floats += static_cast<int64_t>(heads) * span_of(u);
  }
  const int64_t items = item_start[units];
  const bool split = items > units;
  // then per item: stats [2, heads] (max and sum, then the rescaling factor) and output [heads, d]
  thread_local std::vector<float> shared;
  if (split) shared.resize(static_cast<size_t>(split_floats + items * heads * (2 + d)));
  float* const item_stats = split ? shared.data() + split_floats : nullptr;
  float* const item_out = split ? item_stats + items * 2 * heads : nullptr;
  // the lambdas below run on the pool's threads: they see these through plain pointers (a
  // thread_local named inside them would be that thread's own)
  const int64_t* const first_item = item_start.data();
  const int64_t* const unit_scores = scores_at.data();
  float* const split_scores = shared.data();

  const auto job_for = [&](int64_t u, float* scratch) {
    const int64_t t = unit_token[u];
    const int h = unit_head[u] * heads;  // the unit's first query head
    AttendHead job;
    job.q = q + (t * num_heads + h) * d;
    job.k = c.k;
    job.v = c.v;
    job.type = static_cast<int>(c.type);
    job.blocks = b.block_tables + static_cast<int64_t>(seq_of_token[t]) * b.max_blocks_per_seq;
    job.block_size = c.block_size;
    job.ctx = b.positions[t] + 1;
    job.first = first_of_token(b, t, window);
    job.softcap = softcap;
    job.sinks = sinks ? sinks + h : nullptr;
    job.block_stride = static_cast<int64_t>(c.num_kv_heads) * c.block_size * d;
    job.head_offset = static_cast<int64_t>(h / group) * c.block_size * d;
    job.head_dim = d;
    job.heads = heads_per_kv;
    job.kv_heads = kv_per_unit;
    job.scale = scale;
    job.q_scratch = scratch;
    job.stats = scratch + static_cast<int64_t>(heads) * d;
    job.scores = job.stats + 2 * heads;
    job.out = out + (t * num_heads + h) * d;
    return job;
  };
  // item i → (unit, chunk): units are found by walking forward from the range's start
  const auto for_items = [&](int64_t i0, int64_t i1, auto&& body) {
    int64_t u = std::upper_bound(first_item, first_item + units + 1, i0) - first_item - 1;
    for (int64_t i = i0; i < i1; i++) {
      while (first_item[u + 1] <= i) u++;
      body(u, static_cast<int>(i - first_item[u]), first_item[u + 1] - first_item[u] > 1);
    }
  };
  // phase 1: whole short contexts (softmax weights scores/Σ); the scores and stats of long
  // contexts' chunks
  const auto phase1 = [&](int64_t i0, int64_t i1) {
    thread_local std::vector<float> scratch;
    for_items(i0, i1, [&](int64_t u, int chunk, bool chunked) {
      const int first = first_of(u), span = span_of(u);
      const size_t need = static_cast<size_t>(heads) * (d + 2 + (chunked ? 0 : span));
      if (scratch.size() < need) scratch.resize(need * 2);
      AttendHead job = job_for(u, scratch.data());
      if (!chunked) {
        ops.attend_scores(job, first, first + span);
        float* inv = job.stats + heads;  // Σ_g → 1/Σ_g in place
        for (int g = 0; g < heads; g++) {
          // the sink's share of the denominator, as ggml_soft_max_ext: sum += e^(sink − max)
          if (job.sinks) inv[g] = static_cast<float>(static_cast<double>(inv[g]) + std::exp(static_cast<double>(job.sinks[g]) - job.stats[g]));
          inv[g] = 1.0f / inv[g];
        }
        return ops.attend_values(job, first, first + span, inv, job.out);
      }
      job.scores = split_scores + unit_scores[u];
      job.stats = item_stats + (first_item[u] + chunk) * 2 * heads;
      ops.attend_scores(job, first + chunk * chunk_keys, first + std::min(span, (chunk + 1) * chunk_keys));
    });
  };
  // between the phases, per split unit and head: each chunk's factor e^(max_chunk − max)/Σ,
  // with max and Σ over the whole context, in place of the chunk's max
  const auto rescale = [&] {
    for (int64_t u = 0; u < units; u++) {
      const int64_t i0 = first_item[u], nc = first_item[u + 1] - i0;
      if (nc == 1) continue;
      for (int g = 0; g < heads; g++) {
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t s = 0; s < nc; s++) max = std::max(max, item_stats[(i0 + s) * 2 * heads + g]);
        // each chunk's maximum already counts the sink; its share of the sum is added once
        const float* sink = sinks ? sinks + unit_head[u] * heads + g : nullptr;
        double total = sink ? std::exp(static_cast<double>(*sink) - max) : 0;
        for (int64_t s = 0; s < nc; s++) {
          const float* st = item_stats + (i0 + s) * 2 * heads;
          total += static_cast<double>(st[heads + g]) * std::exp(static_cast<double>(st[g]) - max);
        }
        for (int64_t s = 0; s < nc; s++) {
          float* st = item_stats + (i0 + s) * 2 * heads;
          st[g] = static_cast<float>(std::exp(static_cast<double>(st[g]) - max) / total);
        }
      }
    }
  };
  // phase 2: each chunk's weights (rescaled) times V
  const auto phase2 = [&](int64_t i0, int64_t i1) {
    thread_local std::vector<float> scratch;
    for_items(i0, i1, [&](int64_t u, int chunk, bool chunked) {
      if (!chunked) return;
      if (scratch.size() < static_cast<size_t>(heads) * (d + 2)) scratch.resize(static_cast<size_t>(heads) * (d + 2));
      AttendHead job = job_for(u, scratch.data());
      job.scores = split_scores + unit_scores[u];
      const int64_t i = first_item[u] + chunk;
      const int first = first_of(u);
      ops.attend_values(job, first + chunk * chunk_keys, first + std::min(span_of(u), (chunk + 1) * chunk_keys),
                        item_stats + i * 2 * heads, item_out + i * heads * d);
    });
  };
  const auto parallel = [&](const auto& fn) {
    // Units of heads sharing a kv head are adjacent. Their costs differ (context lengths), so
    // many small tasks are handed out dynamically rather than one range a thread.
    if (work * num_heads * d * 4 < kMinParallelWork || p.size() == 1 || items == 1) return fn(0, items);
    const int tasks = static_cast<int>(std::min<int64_t>(items, 16 * static_cast<int64_t>(p.size())));
    struct Job {
      int64_t items;
      int tasks;
      const std::remove_reference_t<decltype(fn)>* body;
    } job{items, tasks, &fn};
    const Job* j = &job;  // one captured pointer: std::function stores it without allocating
    p.parallel_for(tasks, [j](int task, int) { (*j->body)(j->items * task / j->tasks, j->items * (task + 1) / j->tasks); });
  };
  parallel(phase1);
  if (!split) return;
  rescale();
  parallel(phase2);
  // the chunks' outputs, summed in order
  for (int64_t u = 0; u < units; u++) {
    const int64_t nc = first_item[u + 1] - first_item[u];
    if (nc == 1) continue;
    float* dst = out + (static_cast<int64_t>(unit_token[u]) * num_heads + unit_head[u] * heads) * d;
    const float* src = item_out + first_item[u] * heads * d;
    for (int64_t i = 0; i < static_cast<int64_t>(heads) * d; i++) {
      float sum = 0;
      for (int64_t s = 0; s < nc; s++) sum += src[s * heads * d + i];
      dst[i] = sum;
    }
  }
}

// scores a group of tokens may keep between the phases (64 MiB)
constexpr int64_t kMaxSplitFloats = int64_t{1} << 24;

}  // namespace

// A token split into chunks keeps its scores ([heads, context] floats) between the two phases:
// a 2048-token prefill chunk at 32k keys and 32 heads would hold 8 GiB. So the batch is
// attended in consecutive groups of tokens whose scores fit kMaxSplitFloats (a token alone
// whatever it needs). A token's output never depends on its batch (chunking and grouping
// depend on the token only), so the groups give the bits one call would.
void attention(float* out, const float* q, const KvCacheView& c, const AttentionBatchView& b, int64_t n_tokens,
               int num_heads, float scale, int window, float softcap, const float* sinks) {
  const int chunk_keys = chunk_keys_of(c.block_size);
  const auto cost = [&](int64_t t) -> int64_t {
    const int64_t span = b.positions[t] + 1 - first_of_token(b, t, window);
    return span > chunk_keys ? static_cast<int64_t>(num_heads) * span : 0;
  };
  int64_t total = 0;
  for (int64_t t = 0; t < n_tokens && total <= kMaxSplitFloats; t++) total += cost(t);
  if (total <= kMaxSplitFloats) return attention_group(out, q, c, b, n_tokens, num_heads, scale, window, softcap, sinks);
  const int64_t width = static_cast<int64_t>(num_heads) * c.head_dim;
  std::vector<int32_t> starts;
  int s0 = 0;  // the sequence of token t0
  for (int64_t t0 = 0; t0 < n_tokens;) {
    int64_t t1 = t0 + 1, used = cost(t0);
    while (t1 < n_tokens && used + cost(t1) <= kMaxSplitFloats) used += cost(t1++);
    while (b.seq_starts[s0 + 1] <= t0) s0++;
    // the sequences [s0, s1] the group's tokens belong to, their starts rebased to t0
    starts.assign(1, 0);
    int s1 = s0;
    while (b.seq_starts[s1 + 1] < t1) starts.push_back(b.seq_starts[++s1] - static_cast<int32_t>(t0));
    starts.push_back(static_cast<int32_t>(t1 - t0));
    AttentionBatchView g = b;
    g.seq_starts = starts.data();
    g.num_seqs = s1 - s0 + 1;
    g.positions = b.positions + t0;
    g.block_tables = b.block_tables + static_cast<int64_t>(s0) * b.max_blocks_per_seq;
    if (b.first_positions) g.first_positions = b.first_positions + t0;
    if (b.window_positions) g.window_positions = b.window_positions + t0;
    attention_group(out + t0 * width, q + t0 * width, c, g, t1 - t0, num_heads, scale, window, softcap, sinks);
    t0 = t1;
  }
}

}  // namespace loom
