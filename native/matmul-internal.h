// What matmul.cc shares with the matmuls built on its kernels (matmul-batch.cc): the
// instruction set in use, activation preparation, the GEMM choice, a grow-only scratch buffer.
// Portable translation units only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>

#include "weight-types.h"

namespace loom {

// The instruction set matmul runs on (a forced one, else the best this CPU has).
int current_isa();

// One activation row of x[0..K) prepared for a weight of `type` (quant.h) into dst.
using PrepareFn = void (*)(int type, const float* x, int K, uint8_t* dst);
PrepareFn prepare_for(int isa);

// Whether `rows` rows against a weight of these traits run the GEMM of `isa`.
bool uses_gemm(const WeightTraits& t, int isa, int rows, int in_features);

// The bytes of one 16-row tile of activations packed for the GEMM of `isa` (x86/matmul_x86.h),
// and its packing: rows [16·tile, 16·tile + 16) of x [rows, K] into dst.
size_t gemm_tile_bytes(int isa, int type, int K);
void gemm_pack_tile(int isa, int type, const float* x, int rows, int K, int tile, uint8_t* dst);

inline int ceil_div_int(int a, int b) { return (a + b - 1) / b; }

// A 64-byte-aligned buffer that grows, never shrinks (one per calling thread where it is used).
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { release(); }
  uint8_t* get(size_t bytes) {
    if (bytes > size_) {
      release();
      data_ = static_cast<uint8_t*>(::operator new(bytes, std::align_val_t(64)));
      size_ = bytes;
    }
    return data_;
  }

 private:
  void release() {
    if (data_) ::operator delete(data_, std::align_val_t(64));
    data_ = nullptr;
    size_ = 0;
  }
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace loom
