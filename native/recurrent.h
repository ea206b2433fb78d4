// Linear-attention (Gated DeltaNet) kernels: the causal conv1d with per-sequence state, and
// the gated delta rule with per-sequence recurrent state (see src/kernels/index.ts for the
// exact contracts; the reference is src/kernels/reference-recurrent.ts). Arguments are
// validated by the N-API wrappers (napi-recurrent.cc).
#pragma once
#include <cstdint>

namespace loom {

// out[t, c] = silu(Σ_i in[t + i, c] · w[c, i]), in = the slot's kernel-1 state rows then the
// sequence's x rows; the state becomes the last kernel-1 input rows. out may alias x.
void conv_silu(float* out, const float* x, const float* w, float* state, const int32_t* slots,
               const int32_t* seq_starts, int num_seqs, int channels, int kernel);

// The gated delta rule per (sequence, value head), state [slots, hv, S, S] (row j over keys i).
void gated_delta_rule(float* out, const float* q, const float* k, const float* v, const float* g,
                      const float* beta, float* state, const int32_t* slots, const int32_t* seq_starts,
                      int num_seqs, int hk, int hv, int S);

// The instruction set the delta rule runs on ("avx512", "avx2", "portable")
const char* recurrent_kernels();

}  // namespace loom
