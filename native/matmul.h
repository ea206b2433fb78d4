// Matrix multiplication of f32 activations by weights in their file type.
#pragma once
#include <cstdint>

namespace loom {

// ggml type ids (as in GGUF) of the weight types the kernels compute with.
enum WeightType : int {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ8_0 = 8,
  kQ4_K = 12,
  kQ6_K = 14,
  kBF16 = 30,
};

bool is_supported_weight_type(int type);

// out[r * out_features + o] = sum_i x[r * in_features + i] * W[o, i]
// W: out_features rows of in_features values of `type`, rows contiguous (ggml layout).
// Activations are rounded to the weight's dot-product type first, as llama.cpp does
// (F16 → f16, BF16 → bf16, Q4_0/Q8_0 → Q8_0 blocks, Q4_K/Q6_K → Q8_K blocks), so results
// match the TypeScript reference within summation order. Uses loom::pool().
void matmul(float* out, const float* x, int rows, const uint8_t* w, int type, int in_features, int out_features);

// out[t * dim + i] = row ids[t] of a [n_rows, dim] table of `type`, dequantized.
void embed_rows(float* out, const uint8_t* table, int type, int dim, int n_rows, const int32_t* ids, int n_ids);

}  // namespace loom
