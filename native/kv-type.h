// The element types of a paged KV cache layer, and the q8_0 cache's element pointer.
//   kF32: float;  kF16: IEEE half bits;
//   kQ8_0: ggml's block_q8_0 (34 bytes: f16 d, int8 q[32]; value = d·q), as llama.cpp's
//          `-ctk/-ctv q8_0` cache. A layer is one stream of blocks: element e lives in block
//          e / 32 at index e % 32, so a row of head_dim (a multiple of 32) values is whole blocks
//          and element offsets into the cache mean the same as for f32/f16.
//   kQ4_0: ggml's block_q4_0 (18 bytes: f16 d, u8 qs[16]; value j = d·((qs[j] & 15) − 8),
//          value j + 16 = d·((qs[j] >> 4) − 8)), as llama.cpp's q4_0 cache; laid out as q8_0.
#pragma once
#include <cstdint>
#include <cstring>

namespace loom {

enum class KvType : int { kF32 = 0, kF16 = 1, kQ8_0 = 2, kQ4_0 = 3 };

constexpr int kKvQ8Block = 32;       // values a block
constexpr int kKvQ8BlockBytes = 34;  // f16 d, int8 q[32]
constexpr int kKvQ4BlockBytes = 18;  // f16 d, u8 qs[16]

// bytes of the first n elements of a layer (n a multiple of 32 for q8_0)
static inline int64_t kv_bytes(KvType t, int64_t n) {
  switch (t) {
    case KvType::kF32: return 4 * n;
    case KvType::kF16: return 2 * n;
    case KvType::kQ4_0: return n / kKvQ8Block * kKvQ4BlockBytes;
    default: return n / kKvQ8Block * kKvQ8BlockBytes;
  }
}

// Element e of a q8_0 layer. Kernels take it where they take `const float*` / `const
// uint16_t*` and read it through their load routines, which dequantize in registers
// (d · q, per 8 or 16 values of one block: reads start at multiples of 8 within a row).
struct Q8Ptr {
  const uint8_t* base;
  int64_t e;
  const uint8_t* block() const { return base + (e >> 5) * kKvQ8BlockBytes; }
  const int8_t* quants() const { return reinterpret_cast<const int8_t*>(block() + 2) + (e & 31); }
  uint16_t scale_bits() const {
    uint16_t d;
    std::memcpy(&d, block(), 2);
    return d;
  }
};
static inline Q8Ptr operator+(Q8Ptr p, int64_t n) { return {p.base, p.e + n}; }

// Element e of a q4_0 layer, read as Q8Ptr is: 8 or 16 values from a multiple of 8 within a
// block are the low (e % 32 < 16) or high nibbles of the bytes qs[e % 16 ..].
struct Q4Ptr {
  const uint8_t* base;
  int64_t e;
  const uint8_t* block() const { return base + (e >> 5) * kKvQ4BlockBytes; }
  const uint8_t* bytes() const { return block() + 2 + (e & 15); }
  bool high() const { return (e & 16) != 0; }
  uint16_t scale_bits() const {
    uint16_t d;
    std::memcpy(&d, block(), 2);
    return d;
  }
};
static inline Q4Ptr operator+(Q4Ptr p, int64_t n) { return {p.base, p.e + n}; }

}  // namespace loom
