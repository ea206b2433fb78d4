// The small vector routines behind norm/act/attention, compiled three times: portable
// (simd.cc), AVX2+FMA+F16C (x86/simd_avx2.cc) and AVX-512 (x86/simd_avx512.cc). simd()
// picks one at first use from the CPU's features.
#pragma once
#include <cstdint>

namespace loom {

// One token's query heads that share kv_heads consecutive KV heads, `heads` a KV head
// (grouped-query attention), for each: out = softmax(scale · q·K^T) · V over the positions
// first..ctx-1 of one sequence. A cache block holds its KV heads one after another, each
// block_size rows of head_dim (see attention.h): position p's row of the job's KV head i is
// element block_stride · blocks[p / block_size] + head_offset + (i · block_size +
// p % block_size) · head_dim. Kernels that can read each K/V row once for all the heads that
// share it do (an f16 row's conversion costs as much as its dot product). A q8_0 row is
// dequantized in registers as it is read, never copied out.
struct AttendHead {
  const float* q;        // [heads, head_dim]
  const void* k;         // cache layer base: f32, f16 bits or q8_0 blocks (kv-type.h)
  const void* v;
  int type;              // KvType; for f16, q and the softmax weights are rounded to f16 as well
  const int32_t* blocks; // this sequence's block table row (already validated)
  int block_size;
  int ctx;              // one past the last attended position (the query's position + 1)
  int first;            // first attended position (0, or ctx - window for a sliding window)
  float softcap;        // > 0: scores s become softcap · tanh(s / softcap) before softmax (Gemma 2)
  const float* sinks;   // null, or [heads · kv_heads] per query head a logit that joins the maximum (and, in
                        // attention.cc, the sum) of its softmax: gpt-oss's attention sinks
  int64_t block_stride;  // elements of a block: numKvHeads * blockSize * headDim
  int64_t head_offset;   // first KV head * blockSize * headDim
  int head_dim;
  int heads;             // query heads a KV head (read once for all of them)
  int kv_heads;          // consecutive KV heads from head_offset: heads · kv_heads query heads in all
  float scale;
  float* scores;         // scratch [heads · kv_heads, ctx - first]: position p of head g at g·(ctx − first) + p − first
  float* q_scratch;      // scratch [heads · kv_heads, head_dim]
  float* stats;          // scratch [2, heads · kv_heads]: per head the maximum, then the sum
  float* out;            // [heads · kv_heads, head_dim]
};

// Several tokens of one sequence that attend the same positions [first, ctx) (an encoder's
// whole sequence), one query head, an f32 cache, no soft-cap or sinks: the tokens ride in
// the lanes of a vector (16 with AVX-512; 8 with AVX2, a job in two halves), so every K/V
// value is broadcast once to all of them and no dot
// product ends in a horizontal sum (the per-token path spends more on those sums than on
// the products). Per token the same arithmetic as any other group's: f32 products of the
// query and f32 keys summed in order, scaled, softmax (e^ as exp_shift_sum's) with weights
// e · (1/Σ), and V summed in order of position.
struct AttendTokens {
  const float* q;        // token t's query head at q + t·row_stride
  float* out;            // token t's output at out + t·row_stride
  int64_t row_stride;
  int n;                 // tokens, 1..16
  const float* k;        // cache layer base (f32)
  const float* v;
  const int32_t* blocks; // this sequence's block table row (validated)
  int block_size;
  int64_t block_stride;  // elements of a block
  int64_t head_offset;   // the KV head's offset in a block
  int head_dim;          // a multiple of 16
  int first, ctx;
  float scale;
  float* scratch;        // [16 · head_dim + 16 · (ctx − first) + 256] floats
};

struct SimdOps {
  const char* name;
  float (*max_of)(const float* x, int n);
  // x[i] = e^(x[i] - max), returns Σ x[i]
  float (*exp_shift_sum)(float* x, int n, float max);
  // out[i] = silu(gate[i]) * up[i]; out may alias gate or up
  void (*silu_mul)(float* out, const float* gate, const float* up, int64_t n);
  // out[i] = G(gate[i]) · up[i] (up null: G alone), G(v) = 0 for v ≤ −10, v for v ≥ 10, else
  // f16→f32 of table[f16(v)] (table: 65536 entries and one of padding, for 32-bit gathers)
  void (*gelu_table_mul)(float* out, const float* gate, const float* up, int64_t n, const uint16_t* table);
  // the first index of the row's maximum (NaNs ignored unless x[0] is one: then 0)
  int64_t (*argmax)(const float* x, int64_t n);
  // f32 → f16 bits, round to nearest even
  void (*f32_to_f16)(uint16_t* out, const float* x, int64_t n);
  // attention over positions [p0, p1) of the job's context: scores → e^(s − max) with the
  // per-head max and sum in job.stats; then out (zeroed here) = Σ (scores · factor[g]) · v.
  // A whole context is the two over [0, ctx) with factor = 1/sum (see attention.cc).
  void (*attend_scores)(const AttendHead& job, int p0, int p1);
  void (*attend_values)(const AttendHead& job, int p0, int p1, const float* factor, float* out);
  // attend_* read each K/V row once for all of a job's heads (else they go head by head)
  bool shares_kv_rows;
  // null where the per-token path is the only one
  void (*attend_tokens)(const AttendTokens& job) = nullptr;
};

const SimdOps& simd();

#if defined(__x86_64__)
namespace x86 {
extern const SimdOps kAvx2Ops;
extern const SimdOps kAvx512Ops;
}  // namespace x86
#endif

}  // namespace loom
