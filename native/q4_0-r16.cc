#include "q4_0-r16.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "quant.h"

namespace loom {

void interleave_q4_0_r16(uint8_t* data, int K, int N) {
  const int nb = K / kQK;
  const size_t row = static_cast<size_t>(nb) * kQ4_0Bytes;
  std::vector<uint8_t> rows(row * kR16Rows);
  for (int g = 0; g < N / kR16Rows; g++) {
    uint8_t* group = data + row * kR16Rows * g;
    std::memcpy(rows.data(), group, rows.size());
    for (int b = 0; b < nb; b++) {
      uint8_t* dst = group + static_cast<size_t>(kR16BlockBytes) * b;
      for (int o = 0; o < kR16Rows; o++) {
        const uint8_t* src = rows.data() + row * o + kQ4_0Bytes * b;
        std::memcpy(dst + 2 * o, src, 2);
        for (int i = 0; i < 4; i++) std::memcpy(dst + 32 + 64 * i + 4 * o, src + 2 + 4 * i, 4);
      }
    }
  }
}

namespace {

// byte j (0..15) of row o's nibbles in block `blk` of an R16 group
inline uint8_t r16_byte(const uint8_t* blk, int o, int j) { return blk[32 + 64 * (j / 4) + 4 * o + j % 4]; }

}  // namespace

void dequantize_q4_0_r16_row(const uint8_t* data, int K, int o, float* out) {
  const int nb = K / kQK;
  const uint8_t* group = data + static_cast<size_t>(nb) * kQ4_0Bytes * kR16Rows * (o / kR16Rows);
  const int r = o % kR16Rows;
  for (int b = 0; b < nb; b++) {
    const uint8_t* blk = group + static_cast<size_t>(kR16BlockBytes) * b;
    const float d = f16_to_f32(load_u16(blk + 2 * r));
    for (int j = 0; j < 16; j++) {
      out[32 * b + j] = d * ((r16_byte(blk, r, j) & 15) - 8);
      out[32 * b + j + 16] = d * ((r16_byte(blk, r, j) >> 4) - 8);
    }
  }
}

// Per block: d_w · d_x · Σ (q − 8)·x in int32, accumulated with one fma per block (the
// AVX-512 kernel's order of operations, lane by lane).
void dot_q4_0_r16_portable(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, int K, int o0, int o1,
                           float* out, int N) {
  const int nb = K / kQK;
  const size_t group_bytes = static_cast<size_t>(nb) * kR16BlockBytes;
  for (int o = o0; o < o1; o++) {
    const uint8_t* group = w + group_bytes * (o / kR16Rows);
    const int ro = o % kR16Rows;
    for (int r = 0; r < rows; r++) {
      const XQ8_0 x = xq8_0_view(xa + xstride * r, K);
      float acc = 0;
      for (int b = 0; b < nb; b++) {
        const uint8_t* blk = group + static_cast<size_t>(kR16BlockBytes) * b;
        const int8_t* q = x.q + kQK * b;
        int32_t isum = -8 * x.s[b];
        for (int j = 0; j < 16; j++) isum += (r16_byte(blk, ro, j) & 15) * q[j] + (r16_byte(blk, ro, j) >> 4) * q[j + 16];
        acc = std::fma(static_cast<float>(isum), f16_to_f32(load_u16(blk + 2 * ro)) * x.d[b], acc);
      }
      out[static_cast<size_t>(r) * N + o] = acc;
    }
  }
}

}  // namespace loom
