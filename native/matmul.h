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

// out[t * dim + i] = row ids[t] of a [n_rows, dim] table of `type`, dequantized.
void embed_rows(float* out, const uint8_t* table, int type, int dim, int n_rows, const int32_t* ids, int n_ids);

}  // namespace loom
