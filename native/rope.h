// Rotary position embedding in place, as src/kernels/reference.ts (ggml's angles).
#pragma once
#include <cstdint>

namespace loom {

// ggml_rope_ext's scaling (see src/model/rope-scaling.ts); the defaults leave angles unscaled.
struct RopeScaling {
  float freq_scale = 1.0f;     // multiplies every angle
  float ext_factor = 0.0f;     // YaRN ramp towards the extrapolated angle (0 = off)
  float attn_factor = 1.0f;    // multiplies cos and sin
  float corr_low = 0.0f;       // YaRN correction dims
  float corr_high = 0.0f;
  const float* freq_factors = nullptr;  // [rope_dim / 2] divisors of each pair's angle, or null
};

// x: [n_tokens, n_heads * head_dim]; rotates the first rope_dim dims of each head of token t
// by angles pos·base^(−2i/rope_dim) built in f32 by repeated multiplication, then scaled.
// neox: pairs (i, i + rope_dim/2); otherwise (2i, 2i + 1).
void rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, int rope_dim, double base, bool neox,
          const RopeScaling& scaling = RopeScaling{});

// ggml_rope_multi's modes (GGML_ROPE_TYPE_MROPE / IMROPE / VISION)
enum class MropeMode : int { mrope = 1, imrope = 2, vision = 3 };

// ggml_rope_multi: positions [4 · n_tokens], section-major (t of every token, then h, w, e).
// mrope / imrope: NeoX pairs (i, i + rope_dim/2) of the first rope_dim dims; pair i takes the
// position of its section (mrope: consecutive sections; imrope: sections interleaved t, h, w)
// and the angle pos·base^(−2i/rope_dim). vision: pairs (i, i + rope_dim) over 2·rope_dim dims,
// each section's angles restarting from its own position (base^(−2j/rope_dim), j counted from
// the section's first pair). sections: rotary pairs per section (t, h, w, e).
void rope_multi(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, int rope_dim, double base,
                const int32_t sections[4], MropeMode mode, const RopeScaling& scaling = RopeScaling{});

}  // namespace loom
