// Q4_0 weights interleaved by 16 rows (kQ4_0_R16, a loom-internal type id): the layout loom
// gives a Q4_0 tensor at load time on CPUs with AVX-512 VNNI, so one kernel serves every row
// count. Sixteen output rows are read as one: per block of 32 inputs, their 16 scales, then
// 4 × 64 bytes in which lanes 4o..4o+3 of vector i hold bytes 4i..4i+3 of row o's nibbles.
// Unpacked, vector i's low nibbles are inputs 4i..4i+3 of all 16 rows and its high nibbles
// inputs 16+4i..16+4i+3: one dpbusd against a broadcast word of x each, no horizontal sums,
// and the 16 scales of a block are one vector.
//
// The tensor keeps Q4_0's size: group g (rows 16g..16g+15) starts where row 16g did, each
// of its K/32 blocks taking 16 · 18 = 288 bytes.
#pragma once
#include <cstddef>
#include <cstdint>

namespace loom {

constexpr int kR16Rows = 16;
constexpr int kR16BlockBytes = 288;  // f16 d[16], then u8 nibbles[4][16][4]

// Rewrites a Q4_0 tensor of N rows of K values (N a multiple of 16) into the R16 layout, in place.
void interleave_q4_0_r16(uint8_t* data, int K, int N);

// Row o of an R16 tensor of rows of K values, dequantized as ggml dequantizes the Q4_0 row.
void dequantize_q4_0_r16_row(const uint8_t* data, int K, int o, float* out);

// out[r · N + o] = row o · prepared activation row r (Act::kQ8_0 rows, xstride apart) for
// o in [o0, o1), both multiples of 16: the plain C++ kernel (scalar and AVX2 paths).
void dot_q4_0_r16_portable(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, int K, int o0, int o1,
                           float* out, int N);

}  // namespace loom
