// A mixture of experts' routed FFN for one layer and one step (llama.cpp's build_moe_ffn after
// the router): every active expert's gate/up matmul, gated activation and down matmul over the
// tokens routed to it, then per token the sum of its k experts' outputs, weighted, in the
// router's order. src/kernels/reference-moe.ts is the oracle (the same steps kernel by kernel).
#pragma once
#include <cstdint>

namespace loom {

enum class ExpertAct : int { kSilu = 0, kGelu = 1, kSwigluOai = 2 };

// One layer's experts. Per expert e: gate[e] ([F rows of hidden values], or when up is null
// [2F rows]: gate rows then up rows), up[e] ([F rows]), down[e] ([hidden rows of F values]),
// in their weight types. Biases [E·F], [E·F], [E·hidden] and the down scale [E] may be null.
struct ExpertWeights {
  const uint8_t* const* gate;
  const uint8_t* const* up;
  const uint8_t* const* down;
  int gate_type, up_type, down_type;
  const float* gate_bias;
  const float* up_bias;
  const float* down_bias;
  const float* down_scale;
};

struct MoeShape {
  int tokens;   // T
  int k;        // experts a token
  int experts;  // E
  int hidden;   // D
  int ffn;      // F, an expert's FFN width
  ExpertAct act;
  float alpha, limit;  // kSwigluOai's
};

// out[t] = Σ_j weights[t·k + j] · expert_ids[t·k+j](x[t]) for j = 0..k−1, summed in that order
// in f32; x, out: [T, hidden]; ids in [0, E). Each expert's products are those matmul_set gives
// for its tokens (gathered in token order), so the result is bit for bit the per-expert calls'.
void moe_experts(float* out, const float* x, const int32_t* ids, const float* weights, const MoeShape& s,
                 const ExpertWeights& w);

}  // namespace loom
