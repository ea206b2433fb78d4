// Rotary position embedding in place, as src/kernels/reference.ts (ggml's angles).
#pragma once
#include <cstdint>

namespace loom {

// x: [n_tokens, n_heads * head_dim]; rotates the first rope_dim dims of each head of token t
// by angles pos·base^(−2i/rope_dim) built in f32 by repeated multiplication.
// neox: pairs (i, i + rope_dim/2); otherwise (2i, 2i + 1).
void rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, int rope_dim, double base, bool neox);

}  // namespace loom
