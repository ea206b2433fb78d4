// The paged KV cache: writes and attention (src/kernels/reference.ts is the oracle).
// A cache layer's k and v are [num_blocks, block_size, num_kv_heads, head_dim], f32 or
// f16 bits; slot s = block * block_size + offset.
#pragma once
#include <cstdint>

namespace loom {

struct KvCacheView {
  void* k;
  void* v;
  bool f16;
  int num_blocks;
  int block_size;
  int num_kv_heads;
  int head_dim;
};

// Stores k, v ([n_tokens, num_kv_heads * head_dim] f32) at slot_mapping[t] (all in range).
void write_kv(const KvCacheView& cache, const float* k, const float* v, const int32_t* slot_mapping, int64_t n_tokens);

struct AttentionBatchView {
  const int32_t* seq_starts;    // [num_seqs + 1]
  int num_seqs;
  const int32_t* positions;     // [num_tokens]
  const int32_t* block_tables;  // [num_seqs, max_blocks_per_seq]
  int max_blocks_per_seq;
};

// Why a batch cannot be attended over (nullptr when it can): seq_starts not increasing from 0
// to n_tokens, a negative position, or a block needed for positions 0..p that is missing or
// outside the cache.
const char* check_attention_batch(const AttentionBatchView& batch, int64_t n_tokens, int num_blocks, int block_size);

// out, q: [n_tokens, num_heads * head_dim]. Token t of sequence s attends to positions
// 0..positions[t] of s (causal; decode tokens and prefill chunks after cached context alike);
// head h reads kv head h / (num_heads / num_kv_heads). For an f16 cache q and the softmax
// weights are rounded to f16, as llama.cpp does. The batch must pass check_attention_batch.
void attention(float* out, const float* q, const KvCacheView& cache, const AttentionBatchView& batch, int64_t n_tokens,
               int num_heads, float scale);

}  // namespace loom
