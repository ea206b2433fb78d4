// The paged KV cache: writes and attention (src/kernels/reference.ts is the oracle).
// A cache layer's k and v are [num_blocks, num_kv_heads, block_size, head_dim], f32, f16
// bits or q8_0 blocks (kv-type.h; head_dim a multiple of 32): slot s = block * block_size + offset, and a block keeps each KV head's rows
// together, so attention reads one head's rows of a block as one stretch.
#pragma once
#include <cstdint>

#include "kv-type.h"

namespace loom {

struct KvCacheView {
  void* k;
  void* v;
  KvType type;
  int num_blocks;
  int block_size;
  int num_kv_heads;
  int head_dim;
};

// Stores k, v ([n_tokens, num_kv_heads * head_dim] f32) at slot_mapping[t] (all in range),
// rounded to f16 or quantized to q8_0 blocks (as x86 llama.cpp's quantize_row_q8_0) per the cache's type.
void write_kv(const KvCacheView& cache, const float* k, const float* v, const int32_t* slot_mapping, int64_t n_tokens);

struct AttentionBatchView {
  const int32_t* seq_starts;    // [num_seqs + 1]
  int num_seqs;
  const int32_t* positions;     // [num_tokens]
  const int32_t* block_tables;  // [num_seqs, max_blocks_per_seq]
  int max_blocks_per_seq;
  // [num_tokens] or null: the first position each token attends to, raised to the window's
  // first when that is later (a symmetric window, EmbeddingGemma's: the kernels see p − h .. p + h
  // as first..positions[t])
  const int32_t* first_positions = nullptr;
  // [num_tokens] or null: where a sliding window is measured back from, when not positions[t]
  // (a non-causal image span attends up to its last position but windows back from its own)
  const int32_t* window_positions = nullptr;
};

// Why a batch cannot be attended over (nullptr when it can): seq_starts not increasing from 0
// to n_tokens, a negative position, a first position outside 0..position, or a block needed for an attended position (0..p, or the
// last `window` of them when window > 0) that is missing or outside the cache. Blocks wholly
// before every token's window may be -1 (freed by a sliding-window pool).
const char* check_attention_batch(const AttentionBatchView& batch, int64_t n_tokens, int num_blocks, int block_size,
                                  int window = 0);

// out, q: [n_tokens, num_heads * head_dim]. Token t of sequence s attends to positions
// first..positions[t] of s (causal; decode tokens and prefill chunks after cached context
// alike), first = 0, or w − window + 1 when window > 0 (llama.cpp's standard sliding window;
// w = window_positions[t] when given, else positions[t], and never above positions[t]), or
// first_positions[t] when that is later; head h reads kv head h / (num_heads / num_kv_heads). softcap > 0 turns
// each score s = scale·q·k into softcap·tanh(s / softcap) (Gemma 2). For an f16 cache q and
// the softmax weights are rounded to f16, as llama.cpp does; a q8_0 cache's K and V are
// dequantized in registers (d·q) against f32 q and f32 weights. sinks (null or [num_heads]): per
// query head a logit in its softmax's denominator only (gpt-oss). The batch must pass
// check_attention_batch with the same window.
void attention(float* out, const float* q, const KvCacheView& cache, const AttentionBatchView& batch, int64_t n_tokens,
               int num_heads, float scale, int window = 0, float softcap = 0.0f, const float* sinks = nullptr);

}  // namespace loom
