// Matrix multiplication of f32 activations by weights in their file type.
#pragma once
#include <cstdint>

#include "weight-types.h"

namespace loom {

bool is_supported_weight_type(int type);

// out[r * out_features + o] = sum_i x[r * in_features + i] * W[o, i]
// W: out_features rows of in_features values of `type`, rows contiguous (ggml layout).
// Activations are rounded to the weight's dot-product type first, as llama.cpp does
// (F16 → f16, BF16 → bf16, blocks of 32 → Q8_0 blocks, K-quants/IQ4_XS → Q8_K blocks), so results
// match the TypeScript reference within summation order. Uses loom::pool().
void matmul(float* out, const float* x, int rows, const uint8_t* w, int type, int in_features, int out_features);

// One weight of a matmul_set: out[r * out_features + o] = sum_i x[r * in_features + i] * w[o, i].
struct MatmulPart {
  float* out;
  const uint8_t* w;
  int type;
  int out_features;
};
constexpr int kMaxMatmulParts = 8;

// matmul of several weights against the same activations (q/k/v, gate/up), each result
// exactly as matmul gives it; few-row products share one activation preparation and one
// parallel region. At most kMaxMatmulParts parts.
void matmul_set(const float* x, int rows, int in_features, const MatmulPart* parts, int n_parts);

// One of the independent products of a matmul_batch: x [rows, in_features] against n_parts
// weights (as matmul_set; at most kMaxMatmulParts).
struct MatmulJob {
  const float* x;
  int rows;
  int in_features;
  const MatmulPart* parts;
  int n_parts;
};

// Many independent matmul_sets (a mixture of experts' per-expert products: each expert a few
// rows against its own weights) in one preparation region and one compute region, the work
// units (job, weight, output rows) spread over the pool. Each out is bit for bit what
// matmul_set gives for its job alone.
void matmul_batch(const MatmulJob* jobs, int n_jobs);

// Which kernels matmul runs for `type` on the instruction set now in use (for tests: a type
// that silently fell to a slower kernel would pass every numerical check). Names are
// "<isa>:<kernel>" as the kernels are called in native/; gemm is the GEMM's
// micro-kernel family ("" without one), gemm_min_rows the rows from which it is used (0
// without one); layout is the type a load-time layout rewrites this type into (-1: none).
struct KernelInfo {
  const char* act;
  const char* one_row;   // rows == 1
  const char* few_rows;  // 2 <= rows < gemm_min_rows (or any rows without a GEMM)
  const char* gemm;
  int gemm_min_rows;
  int layout;
};
// false when the kernels do not compute with `type`
bool kernel_info(int type, KernelInfo* info);

// out[t * dim + i] = row ids[t] of a [n_rows, dim] table of `type`, dequantized.
void embed_rows(float* out, const uint8_t* table, int type, int dim, int n_rows, const int32_t* ids, int n_ids);

}  // namespace loom
