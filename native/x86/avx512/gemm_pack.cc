// Packing for the AVX-512 GEMM (gemm.cc).
//
// Activations are packed once per call in tiles of 16 rows, "lanes = rows": every 64-byte
// vector holds one 32-bit word of each of the 16 rows, so a kernel broadcasts one weight word
// and multiplies it into 16 rows at once (weights are read in place, or from a small per-panel
// copy). A tile is a sequence of such transposed arrays:
//   F32, F16:   f32 v[K][16]                       (F16: values rounded to f16)
//   BF16:       u32 pair[K/2][16]                  (two bf16 per word; K even)
//   Act::kQ8_0: u32 q[K/4][16] (bytes q, s8);  f32 d[K/32][16];  i32 c[K/32][16]
//               (c = −128·Σq per block: the weights enter dpbusd as u8 w + 128, and c takes
//               the 128·Σq back, so a panel's weights need no sums of their own)
//   Act::kQ8_K: u32 q[K/4][16] (bytes q+128, u8);  f32 d[K/256][16];  u32 s32pair[K/64][16]
//               (s32pair: two int16 sums of 32 q's, for the Q4_K mins)
// Rows past the end of x are zero.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "../../half.h"
#include "../../quant.h"
#include "../../weight-types.h"
#include "../matmul_x86.h"
#include "gemm.h"

namespace loom {
namespace x86 {
namespace {

size_t tile_bytes(int type, int K) {
  const WeightTraits* t = weight_traits(type);
  if (!t) return 0;
  switch (t->act) {
    case Act::kF32:
    case Act::kF16: return 64 * static_cast<size_t>(K);
    case Act::kBF16: return 32 * static_cast<size_t>(K);
    case Act::kQ8_0: return 16 * static_cast<size_t>(K) + 2 * 64 * (K / 32);
    case Act::kQ8_K: return 16 * static_cast<size_t>(K) + 64 * (K / 256) + 64 * (K / 64);
  }
  return 0;
}

// Pack rows [16·tile, 16·tile + 16) of x [rows, K] into dst (tile_bytes(type, K) bytes).
void pack_tile(int type, const float* x, int rows, int K, int tile, uint8_t* dst) {
  const Act act = weight_traits(type)->act;
  const size_t pb = prepared_row_bytes(type, K);
  thread_local Buf<uint8_t> prep_buf;
  uint8_t* prep = prep_buf.get(16 * pb);
  const int r0 = 16 * tile, n = rows - r0 < 16 ? rows - r0 : 16;
  const uint32_t* rows_q[16];
  LOOM_UNROLL for (int i = 0; i < 16; i++) {
    rows_q[i] = nullptr;
    if (i >= n) continue;
    const float* xr = x + static_cast<size_t>(r0 + i) * K;
    if (act == Act::kF32) {
      rows_q[i] = reinterpret_cast<const uint32_t*>(xr);
    } else {
      avx512_prepare_dot_row(type, xr, K, prep + pb * i);
      rows_q[i] = reinterpret_cast<const uint32_t*>(prep + pb * i);
    }
  }
  uint32_t* out = reinterpret_cast<uint32_t*>(dst);
  switch (act) {
    case Act::kF32:
    case Act::kF16: transpose16(rows_q, K, out, 16); return;
    case Act::kBF16: transpose16(rows_q, K / 2, out, 16); return;
    default: break;
  }
  // integer types: q words (Q8_K: then +128 on every byte), then d, then Q8_0's corrections or
  // Q8_K's pair sums
  const bool kq = act == Act::kQ8_K;
  const int qw = K / 4;
  transpose16(rows_q, qw, out, 16);
  if (kq) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (size_t i = 0; i < 16 * static_cast<size_t>(qw); i += 16)
      _mm512_storeu_si512(out + i, _mm512_xor_si512(_mm512_loadu_si512(out + i), flip));
  }
  const int nd = kq ? K / 256 : K / 32;
  const uint32_t* rows_d[16];
  LOOM_UNROLL for (int i = 0; i < 16; i++) rows_d[i] = rows_q[i] ? rows_q[i] + qw : nullptr;  // d follows q
  transpose16(rows_d, nd, out + 16 * qw, 16);
  if (!kq) {  // Σq (int32 [K/32]) follows d: −128·Σq
    const uint32_t* rows_s[16];
    LOOM_UNROLL for (int i = 0; i < 16; i++) rows_s[i] = rows_q[i] ? rows_q[i] + qw + nd : nullptr;
    uint32_t* c = out + 16 * (qw + nd);
    transpose16(rows_s, nd, c, 16);
    for (size_t i = 0; i < 16 * static_cast<size_t>(nd); i += 16)
      _mm512_storeu_si512(c + i, _mm512_mullo_epi32(_mm512_loadu_si512(c + i), _mm512_set1_epi32(-128)));
    return;
  }
  const uint32_t* rows_s[16];
  LOOM_UNROLL for (int i = 0; i < 16; i++) {
    // s32 (int16 [K/32]) follows d (f32 [K/256]) and s16 (int16 [K/16])
    rows_s[i] = rows_q[i] ? rows_q[i] + qw + nd + K / 32 : nullptr;
  }
  transpose16(rows_s, K / 64, out + 16 * (qw + nd), 16);
}

}  // namespace

void avx512_prepare_row(int type, const float* x, int K, uint8_t* dst) { avx2_prepare_row(type, x, K, dst); }

size_t avx512_gemm_tile_bytes(int type, int K) { return tile_bytes(type, K); }

void avx512_gemm_pack(int type, const float* x, int rows, int K, int tile, uint8_t* dst_tile) {
  pack_tile(type, x, rows, K, tile, dst_tile);
}

}  // namespace x86
}  // namespace loom
#endif
