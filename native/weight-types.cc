// The weight type table and the block dequantizers (values as src/model/quant/*.ts compute
// them: every product is exact and one rounding makes the f32, as in ggml's C code).
#include "weight-types.h"

#include <cstring>

#include "half.h"

#if (defined(__x86_64__) || defined(_M_X64)) && !defined(LOOM_NO_X86)  // LOOM_NO_X86: test the portable build
#define LOOM_X86 1
#endif

namespace loom {

const int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
const int8_t kMXFP4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

namespace {

inline float f16_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return f16_to_f32(v);
}
inline uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Q4_K / Q5_K sub-block j (0..7) 6-bit scale and min from the 12 packed bytes.
inline void scale_min_k4(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

void dq_q8_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 32; j++) y[j] = d * static_cast<int8_t>(b[2 + j]);
}

void dq_q4_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 16; j++) {
    y[j] = d * ((b[2 + j] & 15) - 8);
    y[j + 16] = d * ((b[2 + j] >> 4) - 8);
  }
}

void dq_q4_1(const uint8_t* b, float* y) {
  const double d = f16_at(b), m = f16_at(b + 2);
  for (int j = 0; j < 16; j++) {
    y[j] = static_cast<float>((b[4 + j] & 15) * d + m);
    y[j + 16] = static_cast<float>((b[4 + j] >> 4) * d + m);
  }
}

// 5-bit values of a Q5_0/Q5_1 block: qh (u32) at p, nibbles at p + 4
inline void q5_values(const uint8_t* p, int* q) {
  const uint32_t qh = u32_at(p);
  for (int j = 0; j < 16; j++) {
    q[j] = (p[4 + j] & 15) | (((qh >> j) & 1) << 4);
    q[j + 16] = (p[4 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
  }
}

void dq_q5_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  int q[32];
  q5_values(b + 2, q);
  for (int j = 0; j < 32; j++) y[j] = d * (q[j] - 16);
}

void dq_q5_1(const uint8_t* b, float* y) {
  const double d = f16_at(b), m = f16_at(b + 2);
  int q[32];
  q5_values(b + 4, q);
  for (int j = 0; j < 32; j++) y[j] = static_cast<float>(q[j] * d + m);
}

void dq_iq4_nl(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 16; j++) {
    y[j] = d * kIQ4NLValues[b[2 + j] & 15];
    y[j + 16] = d * kIQ4NLValues[b[2 + j] >> 4];
  }
}

void dq_mxfp4(const uint8_t* b, float* y) {
  const float d = mxfp4_scale(b[0]);
  for (int j = 0; j < 16; j++) {
    y[j] = d * kMXFP4Values[b[1 + j] & 15];
    y[j + 16] = d * kMXFP4Values[b[1 + j] >> 4];
  }
}

// Q2_K/Q3_K 2-bit position of value i: byte 32·(i/128) + i%32, shift 2·((i/32)%4)
inline int two_bits(const uint8_t* qs, int i) { return (qs[32 * (i >> 7) + (i & 31)] >> (2 * ((i >> 5) & 3))) & 3; }

void dq_q2_k(const uint8_t* b, float* y) {
  const double d = f16_at(b + 80), dmin = f16_at(b + 82);
  for (int i = 0; i < 256; i++) {
    const int sc = b[i >> 4];
    y[i] = static_cast<float>(d * (sc & 15) * two_bits(b + 16, i) - dmin * (sc >> 4));
  }
}

// Q3_K 6-bit scale k (0..15) from its 12 packed bytes
inline int q3_k_scale(const uint8_t* s, int k) {
  const int low = k < 8 ? s[k] & 15 : s[k - 8] >> 4;
  return low | (((s[8 + (k & 3)] >> (2 * (k >> 2))) & 3) << 4);
}

void dq_q3_k(const uint8_t* b, float* y) {
  const double d = f16_at(b + 108);
  for (int i = 0; i < 256; i++) {
    const int hi = (b[i & 31] >> (4 * (i >> 7) + ((i >> 5) & 3))) & 1;
    y[i] = static_cast<float>(d * (q3_k_scale(b + 96, i >> 4) - 32) * (two_bits(b + 32, i) - (hi ? 0 : 4)));
  }
}

void dq_q4_k(const uint8_t* b, float* y) {
  const double d = f16_at(b), dmin = f16_at(b + 2);
  for (int i = 0; i < 256; i++) {
    int sc, m;
    scale_min_k4(b + 4, i >> 5, &sc, &m);
    const uint8_t ql = b[16 + 32 * (i >> 6) + (i & 31)];
    y[i] = static_cast<float>(d * sc * (((i >> 5) & 1) ? ql >> 4 : ql & 15) - dmin * m);
  }
}

void dq_q5_k(const uint8_t* b, float* y) {
  const double d = f16_at(b), dmin = f16_at(b + 2);
  for (int i = 0; i < 256; i++) {
    int sc, m;
    scale_min_k4(b + 4, i >> 5, &sc, &m);
    const uint8_t ql = b[48 + 32 * (i >> 6) + (i & 31)];
    const int q = (((i >> 5) & 1) ? ql >> 4 : ql & 15) | (((b[16 + (i & 31)] >> (i >> 5)) & 1) << 4);
    y[i] = static_cast<float>(d * sc * q - dmin * m);
  }
}

void dq_q6_k(const uint8_t* b, float* y) {
  const double d = f16_at(b + 208);
  for (int i = 0; i < 256; i++) {
    const int h = i / 128, r = i % 128, l = r % 32, quarter = r / 32;
    const int lo = (quarter & 1) ? b[64 * h + l + 32] : b[64 * h + l];
    const int q = (quarter < 2 ? (lo & 15) : (lo >> 4)) | (((b[128 + 32 * h + l] >> (2 * quarter)) & 3) << 4);
    y[i] = static_cast<float>(d * static_cast<int8_t>(b[192 + i / 16]) * (q - 32));
  }
}

void dq_iq4_xs(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const int h = b[2] | (b[3] << 8);
  for (int j = 0; j < 8; j++) {
    const int ls = ((b[4 + (j >> 1)] >> (4 * (j & 1))) & 15) | (((h >> (2 * j)) & 3) << 4);
    const float dl = d * (ls - 32);
    for (int l = 0; l < 16; l++) {
      y[32 * j + l] = dl * kIQ4NLValues[b[8 + 16 * j + l] & 15];
      y[32 * j + 16 + l] = dl * kIQ4NLValues[b[8 + 16 * j + l] >> 4];
    }
  }
}

}  // namespace

// Kernel registrations, one per family and instruction set (each in its family's file).
//
// A new weight type (MXFP4, say) is: its row below (geometry, Act, dequantizer) and its id in
// kRowTypes; an entry in portable/dot.cc (dot_dequantized serves any type with a dequantizer);
// and per instruction set a kernel file whose registration lists it (a new file's
// registration goes into kRegistrations, and the file into binding.gyp). A slot no
// registration fills takes the next narrower instruction set's kernel (at worst the portable
// one; an empty GEMM slot leaves many rows to the dot kernels): slower, never wrong;
// test/kernels/dispatch.test.ts pins which kernel every type runs on every tier, so such a
// fallback is seen.
extern const KernelRegistration kPortableDots;                  // portable/dot.cc
extern const KernelRegistration kPortableDotR16;  // r16.cc: the portable R16 kernel
#ifdef LOOM_X86
namespace x86 {
extern const KernelRegistration kAvx2DotFloat, kAvx2DotInt8, kAvx2DotMXFP4, kAvx2DotR16, kAvx2Gemm;  // x86/avx2/
extern const KernelRegistration kAvx512DotFloat, kAvx512DotQ0, kAvx512DotQ45K, kAvx512DotQ6K, kAvx512DotIQ4XS,
    kAvx512DotMXFP4, kAvx512DotR16, kAvx512Gemm;  // x86/avx512/
}  // namespace x86
#endif

namespace {

const KernelRegistration* const kRegistrations[] = {
    &kPortableDots,
    &kPortableDotR16,
#ifdef LOOM_X86
    &x86::kAvx2DotFloat,
    &x86::kAvx2DotInt8,
    &x86::kAvx2DotMXFP4,
    &x86::kAvx2DotR16,
    &x86::kAvx2Gemm,
    &x86::kAvx512DotFloat,
    &x86::kAvx512DotQ0,
    &x86::kAvx512DotQ45K,
    &x86::kAvx512DotQ6K,
    &x86::kAvx512DotIQ4XS,
    &x86::kAvx512DotMXFP4,
    &x86::kAvx512DotR16,
    &x86::kAvx512Gemm,
#endif
};

// The rows: geometry, activation type, dequantizer, load-time layout; kernels come from the
// registrations.
WeightTraits g_rows[] = {
    {1, 4, Act::kF32, nullptr, -1, -1, {}, {}},           // F32
    {1, 2, Act::kF16, nullptr, -1, -1, {}, {}},           // F16
    {1, 2, Act::kBF16, nullptr, -1, -1, {}, {}},          // BF16
    {32, 34, Act::kQ8_0, dq_q8_0, kQ8_0_R16, -1, {}, {}}, // Q8_0
    {32, 18, Act::kQ8_0, dq_q4_0, kQ4_0_R16, -1, {}, {}}, // Q4_0
    {32, 20, Act::kQ8_0, dq_q4_1, -1, -1, {}, {}},        // Q4_1
    {32, 22, Act::kQ8_0, dq_q5_0, -1, -1, {}, {}},        // Q5_0
    {32, 24, Act::kQ8_0, dq_q5_1, -1, -1, {}, {}},        // Q5_1
    {32, 18, Act::kQ8_0, dq_iq4_nl, -1, -1, {}, {}},      // IQ4_NL
    {256, 84, Act::kQ8_K, dq_q2_k, -1, -1, {}, {}},       // Q2_K
    {256, 110, Act::kQ8_K, dq_q3_k, -1, -1, {}, {}},      // Q3_K
    {256, 144, Act::kQ8_K, dq_q4_k, -1, -1, {}, {}},      // Q4_K
    {256, 176, Act::kQ8_K, dq_q5_k, -1, -1, {}, {}},      // Q5_K
    {256, 210, Act::kQ8_K, dq_q6_k, -1, -1, {}, {}},      // Q6_K
    {256, 136, Act::kQ8_K, dq_iq4_xs, -1, -1, {}, {}},    // IQ4_XS
    {32, 17, Act::kQ8_0, dq_mxfp4, -1, -1, {}, {}},       // MXFP4
    {32, 18, Act::kQ8_0, nullptr, -1, kQ4_0, {}, {}},     // Q4_0_R16
    {32, 34, Act::kQ8_0, nullptr, -1, kQ8_0, {}, {}},     // Q8_0_R16
};
constexpr int kRowTypes[] = {kF32, kF16,  kBF16, kQ8_0, kQ4_0, kQ4_1,  kQ5_0,  kQ5_1,     kIQ4_NL,
                             kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kIQ4_XS, kMXFP4, kQ4_0_R16, kQ8_0_R16};
static_assert(sizeof(g_rows) / sizeof(g_rows[0]) == sizeof(kRowTypes) / sizeof(kRowTypes[0]));

constexpr int kMaxType = 256;

struct Table {
  const WeightTraits* rows[kMaxType] = {};
};

Table build_table() {
  Table t;
  WeightTraits* rows[kMaxType] = {};
  for (size_t i = 0; i < sizeof(kRowTypes) / sizeof(kRowTypes[0]); i++) rows[kRowTypes[i]] = &g_rows[i];
  for (const KernelRegistration* reg : kRegistrations) {
    for (int i = 0; i < reg->n_dots; i++) rows[reg->dots[i].type]->dot[reg->isa] = reg->dots[i].kernel;
    for (int i = 0; i < reg->n_gemms; i++) rows[reg->gemms[i].type]->gemm[reg->isa] = reg->gemms[i].kernel;
  }
  for (WeightTraits& row : g_rows)
    for (int isa = 1; isa < kIsaCount; isa++)
      if (!row.dot[isa].fn) row.dot[isa] = row.dot[isa - 1];
  for (int type = 0; type < kMaxType; type++) t.rows[type] = rows[type];
  return t;
}

}  // namespace

const WeightTraits* weight_traits(int type) {
  static const Table table = build_table();
  return type >= 0 && type < kMaxType ? table.rows[type] : nullptr;
}

}  // namespace loom
