// Elementwise activations and softmax (src/kernels/reference.ts is the oracle).
#pragma once
#include <cstdint>

namespace loom {

// out[i] = silu(gate[i]) · up[i]; out may alias gate or up
void silu_mul(float* out, const float* gate, const float* up, int64_t n);

// out[i] = gelu_tanh(x[i]) through f16 as ggml: x ≤ −10 → 0, x ≥ 10 → x, else
// f16(gelu(f16(x))) from a 65536-entry table. out may alias x.
void gelu(float* out, const float* x, int64_t n);

// out[i] = gelu(gate[i]) · up[i], the GELU of gelu() (ggml's geglu); out may alias gate
void gelu_mul(float* out, const float* gate, const float* up, int64_t n);

// OpenAI's clamped SwiGLU (gpt-oss; ggml_swiglu_oai): out[i] = x / (1 + e^(−α·x)) · (y + 1),
// x = min(gate[i], limit), y = clamp(up[i], −limit, limit), each step in f32 as
// src/kernels/reference-moe.ts (e^ in f64 rounded to f32, as its Math.exp). out may alias gate.
void swiglu_oai(float* out, const float* gate, const float* up, int64_t n, float alpha, float limit);

// x[i] = cap · tanh(x[i] / cap), each step in f32 as ggml's scale → tanh → scale (Gemma 2's
// final-logit soft-cap)
void softcap(float* x, int64_t n, float cap);

// out[i] = a[i] + b[i]; out may alias either
void add(float* out, const float* a, const float* b, int64_t n);

// x[r, :] += bias, x: [rows, dim]
void add_bias(float* x, const float* bias, int64_t rows, int dim);

// softmax over each row of n, in place; x: [rows, n]
void softmax(float* x, int64_t rows, int n);

// Constrained decoding: row[i] = −∞ wherever bit i % 32 of mask[i / 32] is 0 (a grammar
// disallows token i); mask holds ceil(n / 32) words.
void apply_token_mask(float* row, int64_t n, const int32_t* mask);

// index of the largest of x[0..n) (the lowest index among equals); 0 when n == 0
int64_t argmax(const float* x, int64_t n);

// Sampling weights: out[j] = e^(row[idx[j]] − max) for j < n (idx == nullptr: row[j]),
// returns Σ out[j]. The exponentials are f32 (the vectorized exp of the softmax kernels),
// summed in f64. All idx[j] must index row.
double exp_weights(double* out, const float* row, const int32_t* idx, int64_t n, float max);

// Sampling candidates, in place: row[i] = f32(row[i] · scale) (the product in f64, as
// JavaScript rounds it), then the entries below max + log_min_p (−∞: none) or not finite
// become −∞ and the others' indices go to idx in order. Returns how many.
int64_t sample_candidates(float* row, int64_t n, double scale, double log_min_p, int32_t* idx);

// The candidate j a uniform draw u ∈ [0, Σ w) lands on: the first j with u − w[0] − … − w[j] < 0
// (subtracted in this order, in f64); n − 1 when rounding leaves u at the total.
int64_t draw_index(const double* w, int64_t n, double u);

}  // namespace loom
