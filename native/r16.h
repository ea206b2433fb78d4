// Weights interleaved by 16 rows (loom-internal type ids kQ4_0_R16 and kQ8_0_R16): the layouts
// loom gives Q4_0 and Q8_0 matrices at load time on CPUs with AVX2 or AVX-512 VNNI, so one
// kernel serves every row count. Sixteen output rows are read as one: per block of 32 inputs, their
// 16 f16 scales (32 bytes), then the rows' quant bytes as 64-byte vectors in which lanes
// 4o..4o+3 of vector i hold bytes 4i..4i+3 of row o's block. Then every vector is 4 inputs of
// all 16 rows: one dpbusd against a broadcast word of x each, no horizontal sums, and the 16
// scales of a block are one vector.
//   Q4_0: 4 vectors of nibbles (byte j: inputs j and 16 + j), values q − 8.
//   Q8_0: 8 vectors of q + 128 (the sign bit flipped at load time), the unsigned operand
//         dpbusd takes; the kernels start each block's sum at −128·Σx. (AVX2 has no dpbusd:
//         its kernel flips the bytes back and uses the 256-bit halves, x86/avx2/dot_r16.cc.)
//
// A tensor keeps its plain type's size: group g (rows 16g..16g+15) starts where row 16g did,
// each of its K/32 blocks taking 16 times the plain block.
#pragma once
#include <cstddef>
#include <cstdint>

namespace loom {

constexpr int kR16Rows = 16;

// The plain type an interleaved type rearranges (kQ4_0 for kQ4_0_R16, kQ8_0 for kQ8_0_R16), or −1.
int r16_plain_type(int type);
// The interleaved type of a plain type, or −1 when it has none.
int r16_type_of(int plain_type);

// Rewrites a tensor of N rows of K values of the plain type of `type` (N a multiple of 16)
// into the layout of `type`, in place.
void interleave_r16(int type, uint8_t* data, int K, int N);

// Row o of an interleaved tensor of rows of K values, dequantized as ggml dequantizes the plain row.
void dequantize_r16_row(int type, const uint8_t* data, int K, int o, float* out);

// out[r · N + o] = row o · prepared activation row r (Act::kQ8_0 rows, xstride apart) for
// o in [o0, o1), both multiples of 16: the plain C++ kernel (scalar and AVX2 paths).
void dot_r16_portable(int type, const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, int K, int o0, int o1,
                      float* out, int N);

}  // namespace loom
