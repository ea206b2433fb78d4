// The weight types the kernels compute with, as one table (ggml's type_traits): per type its
// block geometry, the activation type x is rounded to before a dot product with it (ggml-cpu's
// vec_dot_type), and its block dequantizer. Code that differs by type looks the type up here
// (or, for the SIMD kernels, switches once at its entry point); nothing else branches on it.
#pragma once
#include <cstdint>

namespace loom {

// ggml type ids (as in GGUF) of the weight types the kernels compute with.
enum WeightType : int {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kBF16 = 30,
  // loom's own layouts, never in a file
  kQ4_0_R16 = 128,  // Q4_0 interleaved by 16 rows (r16.h)
  kQ8_0_R16 = 129,  // Q8_0 interleaved by 16 rows (r16.h)
};

// What activations are rounded to (and how a prepared row is laid out, see quant.h).
// Q8_0 also stands for llama.cpp's Q8_1 (Q4_1, Q5_1): the same d·q values.
enum class Act { kF32, kF16, kBF16, kQ8_0, kQ8_K };

using DequantizeBlockFn = void (*)(const uint8_t* block, float* out);

struct WeightTraits {
  int block_values;             // 1 for F32/F16/BF16
  int block_bytes;              // bytes per block
  Act act;
  DequantizeBlockFn dequantize;  // one block; nullptr for F32/F16/BF16 and interleaved layouts
};

// The row of `type`, or nullptr when the kernels do not compute with it.
const WeightTraits* weight_traits(int type);

// ggml's kvalues_iq4nl: the 16 levels of IQ4_NL and IQ4_XS.
extern const int8_t kIQ4NLValues[16];

}  // namespace loom
