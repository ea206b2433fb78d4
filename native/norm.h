// RMSNorm and LayerNorm over rows (src/kernels/reference.ts is the oracle). out may alias x.
#pragma once
#include <cstdint>

namespace loom {

// out[r, i] = (x[r, i] · 1/sqrt(mean(x[r]²) + eps)) · weight[i]; x, out: [rows, dim]
void rms_norm(float* out, const float* x, const float* weight, int64_t rows, int dim, double eps);

// out[r, i] = ((x[r, i] − mean) / sqrt(var + eps)) · weight[i] + bias[i]
void layer_norm(float* out, const float* x, const float* weight, const float* bias, int64_t rows, int dim, double eps);

}  // namespace loom
