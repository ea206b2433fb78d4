// What the AVX-512 GEMM's packing (gemm_pack.cc) and its panels (gemm.cc) share: the 16 × width
// transpose both write with (and ../buf.h). Internal linkage, as ../dot256.h.
#pragma once
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <new>

#include "../buf.h"
#include "../matmul_x86.h"

namespace loom {
namespace x86 {
namespace {

// dst[j·dst_stride + i] = rows[i][j] for j in [0, width), i in store_mask; rows[i] == nullptr
// stands for zeros. (A 16 × width block of 32-bit words, transposed.) `stream`: every
// destination row is 64-byte aligned and store_mask full, and the rows are written with
// streaming stores (see kStreamRowFloats in matmul_x86.h; the caller fences).
inline void transpose16(const uint32_t* const* rows, int width, uint32_t* dst, size_t dst_stride,
                        __mmask16 store_mask = 0xffff, bool stream = false) {
  for (int j0 = 0; j0 < width; j0 += 16) {
    const int n = width - j0 < 16 ? width - j0 : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
    __m512i v[16], t[16];
    LOOM_UNROLL for (int r = 0; r < 16; r++)
      v[r] = rows[r] ? _mm512_maskz_loadu_epi32(m, rows[r] + j0) : _mm512_setzero_si512();
    // 16×16 transpose of 32-bit words. v[r], 128-bit lane L: columns 4L..4L+3 of row r.
    LOOM_UNROLL for (int r = 0; r < 16; r += 2) {
      t[r] = _mm512_unpacklo_epi32(v[r], v[r + 1]);
      t[r + 1] = _mm512_unpackhi_epi32(v[r], v[r + 1]);
    }
    LOOM_UNROLL for (int r = 0; r < 16; r += 4) {
      v[r] = _mm512_unpacklo_epi64(t[r], t[r + 2]);
      v[r + 1] = _mm512_unpackhi_epi64(t[r], t[r + 2]);
      v[r + 2] = _mm512_unpacklo_epi64(t[r + 1], t[r + 3]);
      v[r + 3] = _mm512_unpackhi_epi64(t[r + 1], t[r + 3]);
    }
    // v[4q + c], lane L: column 4L + c of rows 4q..4q+3. Gather the four row-quads by lane.
    LOOM_UNROLL for (int c = 0; c < 4; c++) {
      const __m512i a_lo = _mm512_shuffle_i32x4(v[c], v[4 + c], 0x88), a_hi = _mm512_shuffle_i32x4(v[c], v[4 + c], 0xdd);
      const __m512i b_lo = _mm512_shuffle_i32x4(v[8 + c], v[12 + c], 0x88);
      const __m512i b_hi = _mm512_shuffle_i32x4(v[8 + c], v[12 + c], 0xdd);
      const __m512i col[4] = {_mm512_shuffle_i32x4(a_lo, b_lo, 0x88), _mm512_shuffle_i32x4(a_hi, b_hi, 0x88),
                              _mm512_shuffle_i32x4(a_lo, b_lo, 0xdd), _mm512_shuffle_i32x4(a_hi, b_hi, 0xdd)};
      LOOM_UNROLL for (int L = 0; L < 4; L++)
        if (4 * L + c < n) {
          uint32_t* d = dst + dst_stride * (j0 + 4 * L + c);
          if (stream) _mm512_stream_si512(reinterpret_cast<__m512i*>(d), col[L]);
          else _mm512_mask_storeu_epi32(d, store_mask, col[L]);
        }
    }
  }
}

}  // namespace
}  // namespace x86
}  // namespace loom
#endif
