// The element types of a paged KV cache layer, and the q8_0 cache's element pointer.
//   kF32: float;  kF16: IEEE half bits;
//   kQ8_0: ggml's block_q8_0 (34 bytes: f16 d, int8 q[32]; value = d·q), as llama.cpp's
//          `-ctk/-ctv q8_0` cache. A layer is one stream of blocks: element e lives in block
//          e / 32 at index e % 32, so a row of head_dim (a multiple of 32) values is whole blocks
//          and element offsets into the cache mean the same as for f32/f16.
#pragma once
#include <cstdint>
#include <cstring>

namespace loom {

enum class KvType : int { kF32 = 0, kF16 = 1, kQ8_0 = 2 };

constexpr int kKvQ8Block = 32;       // values a block
constexpr int kKvQ8BlockBytes = 34;  // f16 d, int8 q[32]

// bytes of the first n elements of a layer (n a multiple of 32 for q8_0)
static inline int64_t kv_bytes(KvType t, int64_t n) {
  switch (t) {
    case KvType::kF32: return 4 * n;
    case KvType::kF16: return 2 * n;
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

}  // namespace loom
