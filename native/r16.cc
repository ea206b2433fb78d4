#include "r16.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "quant.h"
#include "weight-types.h"

namespace loom {

int r16_plain_type(int type) {
  const WeightTraits* t = weight_traits(type);
  return t ? t->plain : -1;
}

int r16_type_of(int plain_type) {
  const WeightTraits* t = weight_traits(plain_type);
  return t ? t->layout : -1;
}

namespace {

// quant bytes of one row's block (after its f16 scale): 16 for Q4_0, 32 for Q8_0 (one byte a
// value: the 8-bit layout)
int payload_bytes(int type) { return weight_traits(type)->block_bytes - 2; }
bool eight_bit(int type) { return payload_bytes(type) == kQK; }
// bytes of one block of a 16-row group: the scales, then every row's quant bytes
int group_block_bytes(int type) { return kR16Rows * (2 + payload_bytes(type)); }

// where byte p of row o's quant bytes lies in a group's block
inline int payload_at(int o, int p) { return 32 + 64 * (p / 4) + 4 * o + p % 4; }

// value j (0..31) of row o in a group's block `blk`, as an integer (before the scale)
inline int r16_value(bool q8, const uint8_t* blk, int o, int j) {
  if (q8) return blk[payload_at(o, j)] - 128;
  const uint8_t byte = blk[payload_at(o, j % 16)];
  return (j < 16 ? byte & 15 : byte >> 4) - 8;
}

}  // namespace

void interleave_r16(int type, uint8_t* data, int K, int N) {
  const int nb = K / kQK, payload = payload_bytes(type);
  const uint8_t flip = eight_bit(type) ? 0x80 : 0;  // Q8_0: s8 q → u8 q + 128
  const size_t row = static_cast<size_t>(nb) * (2 + payload);
  std::vector<uint8_t> rows(row * kR16Rows);
  for (int g = 0; g < N / kR16Rows; g++) {
    uint8_t* group = data + row * kR16Rows * g;
    std::memcpy(rows.data(), group, rows.size());
    for (int b = 0; b < nb; b++) {
      uint8_t* dst = group + static_cast<size_t>(group_block_bytes(type)) * b;
      for (int o = 0; o < kR16Rows; o++) {
        const uint8_t* src = rows.data() + row * o + static_cast<size_t>(2 + payload) * b;
        std::memcpy(dst + 2 * o, src, 2);
        for (int p = 0; p < payload; p++) dst[payload_at(o, p)] = src[2 + p] ^ flip;
      }
    }
  }
}

void dequantize_r16_row(int type, const uint8_t* data, int K, int o, float* out) {
  const int nb = K / kQK;
  const size_t block = group_block_bytes(type);
  const uint8_t* group = data + block * nb * (o / kR16Rows);
  const int r = o % kR16Rows;
  const bool q8 = eight_bit(type);
  for (int b = 0; b < nb; b++) {
    const uint8_t* blk = group + block * b;
    const float d = f16_to_f32(load_u16(blk + 2 * r));
    for (int j = 0; j < kQK; j++) out[kQK * b + j] = d * r16_value(q8, blk, r, j);
  }
}

// Per block: d_w · d_x · Σ q·x in int32, accumulated with one fma per block (the AVX-512
// kernel's order of operations, lane by lane).
void dot_r16_portable(int type, const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, int K, int o0, int o1,
                      float* out, int N) {
  const int nb = K / kQK;
  const size_t block = group_block_bytes(type);
  const bool q8 = eight_bit(type);
  for (int o = o0; o < o1; o++) {
    const uint8_t* group = w + block * nb * (o / kR16Rows);
    const int ro = o % kR16Rows;
    for (int r = 0; r < rows; r++) {
      const XQ8_0 x = xq8_0_view(xa + xstride * r, K);
      float acc = 0;
      for (int b = 0; b < nb; b++) {
        const uint8_t* blk = group + block * b;
        const int8_t* q = x.q + kQK * b;
        int32_t isum = 0;
        for (int j = 0; j < kQK; j++) isum += r16_value(q8, blk, ro, j) * q[j];
        acc = std::fma(static_cast<float>(isum), f16_to_f32(load_u16(blk + 2 * ro)) * x.d[b], acc);
      }
      out[static_cast<size_t>(r) * N + o] = acc;
    }
  }
}

namespace {

template <int kType>
void dot_r16_of(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t, int K, int o0, int o1,
                float* out, int N) {
  dot_r16_portable(kType, xa, xstride, rows, w, K, o0, o1, out, N);
}

constexpr DotEntry kDots[] = {
    {kQ4_0_R16, {dot_r16_of<kQ4_0_R16>, "portable:dot_r16_portable", "portable:dot_r16_portable"}},
    {kQ8_0_R16, {dot_r16_of<kQ8_0_R16>, "portable:dot_r16_portable", "portable:dot_r16_portable"}},
};

}  // namespace

// The portable kernel (the AVX2 and AVX-512 tiers have their own, x86/*/dot_r16.cc).
extern const KernelRegistration kPortableDotR16 = {kIsaPortable, kDots, 2, nullptr, 0};

}  // namespace loom
