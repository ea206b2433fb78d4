// The weight types the kernels compute with, as one table (ggml-cpu's type_traits_cpu): per
// type one row with its block geometry, the activation type x is rounded to before a dot
// product with it (ggml-cpu's vec_dot_type), its block dequantizer, the load-time layout it is
// rewritten into, and per instruction set the kernels matmul runs for it. The kernel slots are
// filled by registrations, one per kernel family and instruction set (a constant list of
// (type, kernel) entries in that family's translation unit: portable/, x86/avx2/,
// x86/avx512/); matmul looks a type's row up once per call and calls through it. Nothing
// else branches on the weight type: a new type is a row here and a kernel file per ISA.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

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
  kMXFP4 = 39,
  // loom's own layouts, never in a file
  kQ4_0_R16 = 128,  // Q4_0 interleaved by 16 rows (r16.h)
  kQ8_0_R16 = 129,  // Q8_0 interleaved by 16 rows (r16.h)
};

// What activations are rounded to (and how a prepared row is laid out, see quant.h).
// Q8_0 also stands for llama.cpp's Q8_1 (Q4_1, Q5_1): the same d·q values.
enum class Act { kF32, kF16, kBF16, kQ8_0, kQ8_K };

using DequantizeBlockFn = void (*)(const uint8_t* block, float* out);

// The instruction sets a row has kernels for (matmul_force_isa's numbers).
enum Isa : int { kIsaPortable = 0, kIsaAvx2 = 1, kIsaAvx512 = 2 };
constexpr int kIsaCount = 3;

// out[r·N + o] = weight row o · prepared activation row r, for r in [0, rows) (rows prepared
// for the type's Act, quant.h, xstride bytes apart) and o in [o0, o1) (rows wstride apart).
using DotFn = void (*)(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0,
                       int o1, float* out, int N);
struct DotKernel {
  DotFn fn = nullptr;
  const char* one_row = "";   // the kernel's name for one activation row ("<isa>:<function>")
  const char* few_rows = "";  // for 2 and more
};

// Weight bytes the caller reads next, fetched into L2 while a GEMM call computes.
struct GemmPrefetch {
  const uint8_t* begin = nullptr;
  size_t bytes = 0;
};
// A GEMM (x86/avx512/gemm*.cc; x86/avx2/gemm.cc for F32, F16 and BF16): rows [r0, r1) of
// activations packed in 16-row tiles by outputs [o0, o1).
using GemmFn = void (*)(const uint8_t* packed, int r0, int r1, const uint8_t* w, size_t wstride, int K, int o0, int o1,
                        float* out, int N, GemmPrefetch next);
struct GemmKernel {
  GemmFn fn = nullptr;
  const char* family = "";  // its micro-kernels' family
  int min_rows = 0;         // rows from which it beats the dot kernels
  int k_multiple = 1;       // K must be a multiple of this
};

// A registration: the kernels one family provides on one instruction set, type by type. It is
// constant data (constexpr entries, no code runs to make it): a registration in a unit built
// with -mavx512f is read on every CPU, and a dynamic initializer there could use AVX-512.
struct DotEntry {
  int type;
  DotKernel kernel;
};
struct GemmEntry {
  int type;
  GemmKernel kernel;
};
struct KernelRegistration {
  Isa isa;
  const DotEntry* dots;
  int n_dots;
  const GemmEntry* gemms;
  int n_gemms;
};

struct WeightTraits {
  int block_values;             // 1 for F32/F16/BF16
  int block_bytes;              // bytes per block
  Act act;
  DequantizeBlockFn dequantize;  // one block; nullptr for F32/F16/BF16 and interleaved layouts
  int layout;                    // the load-time layout this type is rewritten into (r16.h), or -1
  int plain;                     // for a load-time layout: the type it rearranges, else -1
  DotKernel dot[kIsaCount];      // per instruction set; dot[kIsaPortable] is always there
  GemmKernel gemm[kIsaCount];    // per instruction set, for many rows (fn nullptr: none; not inherited)
};

// The row of `type`, or nullptr when the kernels do not compute with it.
const WeightTraits* weight_traits(int type);

// ggml's kvalues_iq4nl: the 16 levels of IQ4_NL and IQ4_XS.
extern const int8_t kIQ4NLValues[16];

// ggml's kvalues_mxfp4: MXFP4's E2M1 levels doubled (index 8 is -0).
extern const int8_t kMXFP4Values[16];

// MXFP4's block scale from its E8M0 byte e, halved as the doubled levels need (ggml's
// GGML_E8M0_TO_FP32_HALF): 2^(e - 128), a subnormal for e < 2.
inline float mxfp4_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace loom
