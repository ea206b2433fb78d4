// AVX2 kernel for weights interleaved by 16 rows (../../r16.h), every row count: the AVX-512
// kernel's plan (../avx512/dot_r16.cc) in 256-bit halves. A 64-byte vector of a group's block
// is two ymm, rows 0–7 and rows 8–15, each 32-bit lane 4 inputs of one output row, so a
// broadcast word of x meets 8 output rows at once and no horizontal sums are left.
//
// Without VNNI a u8·s8 product goes through maddubs, whose int16 pair sums saturate unless
// one factor stays ≤ 127 in magnitude:
//   Q8_0: the stored q + 128 is flipped back to s8 w (shared by the tile's rows), then
//         maddubs(|w|, sign(x, w)): one sign per activation row, as the plain kernels do.
//   Q4_0: nibbles 0..15 go in as u8 against x as it is; the sum starts at −8·Σx.
// The sum of a block is exact in int32 and one fma per block applies d_w (8 lanes) · d_x, in
// the order of dot_r16_portable, so every row count (and the portable path) gives a row the
// same products bit for bit.
//
// Against the plain AVX2 kernel (dot256.h, 4 activation rows a weight row), a tile of 4
// activation rows × 8 output rows spends 4 vector operations per 32 multiply-adds plus the
// weight's flip and |w| shared by the 4 rows, and one scaling per block and 8 output rows,
// where the plain kernel scales and converts per block and output row.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../quant.h"
#include "../../r16.h"
#include "../../weight-types.h"
#include "../buf.h"
#include "../dot256.h"
#include "../matmul_x86.h"

namespace loom {
namespace x86 {
namespace {

inline __m256i bcast32_256(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

template <int kType>
struct R16Half {
  static constexpr bool kQ8 = kType == kQ8_0_R16;
  static constexpr int kBytes = kR16Rows * (kQ8 ? 34 : 18);  // one block of a 16-row group
  // The 8 weight vectors of half h of block `blk` (inputs 4j..4j+3 of its 8 rows): Q8_0 as s8
  // w, Q4_0 as u8 nibbles.
  static inline __m256i vec(const uint8_t* blk, int h, int j) {
    if (kQ8) return _mm256_xor_si256(loadu256(blk + 32 + 64 * j + 32 * h), _mm256_set1_epi8(static_cast<char>(0x80)));
    const __m256i p = loadu256(blk + 32 + 64 * (j & 3) + 32 * h);
    const __m256i m4 = _mm256_set1_epi8(15);
    return j < 4 ? _mm256_and_si256(p, m4) : _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
  }
};

// R activation rows × the 8 output rows of each of halves h0 .. h0 + H − 1 of one group (K/32
// blocks of R16Half::kBytes from g) into out[r·N + 8k + 0..7] for half h0 + k. start (Q4_0)
// holds −8·Σx per row and block ([r·nb + b]). `prefetch`: the first pass over the group
// fetches each block LOOM_PREFETCH_AHEAD ahead; later passes find it in L1.
template <int R, int H, int kType>
inline void r16_tile(const uint8_t* g, int h0, int nb, const XQ8_0* x, const int32_t* start, float* out, int N,
                     bool prefetch, bool stream) {
  using B = R16Half<kType>;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[H][R];
  LOOM_UNROLL for (int k = 0; k < H; k++) LOOM_UNROLL for (int r = 0; r < R; r++) acc[k][r] = _mm256_setzero_ps();
  for (int b = 0; b < nb; b++, g += B::kBytes) {
    if (prefetch) LOOM_UNROLL for (int i = 0; i < B::kBytes; i += 64) LOOM_PREFETCH(g + i);
    __m256i sum[H][R];
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m256i s0 = B::kQ8 ? _mm256_setzero_si256() : _mm256_set1_epi32(start[r * nb + b]);
      LOOM_UNROLL for (int k = 0; k < H; k++) sum[k][r] = s0;
    }
    const auto step = [&](int j) {
      __m256i w[H], aw[H];
      LOOM_UNROLL for (int k = 0; k < H; k++) {
        w[k] = B::vec(g, h0 + k, j);
        if (B::kQ8) aw[k] = _mm256_abs_epi8(w[k]);
      }
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        const __m256i xb = bcast32_256(x[r].q + kQK * b + 4 * j);
        LOOM_UNROLL for (int k = 0; k < H; k++) {
          const __m256i p = B::kQ8 ? _mm256_maddubs_epi16(aw[k], _mm256_sign_epi8(xb, w[k])) : _mm256_maddubs_epi16(w[k], xb);
          sum[k][r] = _mm256_add_epi32(sum[k][r], _mm256_madd_epi16(p, ones));
        }
      }
    };
    // Q8_0: two steps unrolled, not eight: fully unrolled, GCC reassociates the int32 sums
    // into per-step partials and spills them (1,024 rows of 768 → 2304, one thread: 41 → 50 G
    // multiply-adds a second). Q4_0 (whose steps pick low or high nibbles) is faster unrolled.
    if constexpr (B::kQ8) {
      _Pragma("GCC unroll 2") for (int j = 0; j < 8; j++) step(j);
    } else {
      LOOM_UNROLL for (int j = 0; j < 8; j++) step(j);
    }
    LOOM_UNROLL for (int k = 0; k < H; k++) {
      const __m256 dw = _mm256_cvtph_ps(loadu128(g + 16 * (h0 + k)));
      LOOM_UNROLL for (int r = 0; r < R; r++)
        acc[k][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[k][r]), _mm256_mul_ps(dw, _mm256_set1_ps(x[r].d[b])), acc[k][r]);
    }
  }
  LOOM_UNROLL for (int k = 0; k < H; k++) LOOM_UNROLL for (int r = 0; r < R; r++) {
    float* dst = out + static_cast<size_t>(N) * r + 8 * k;
    if (stream) _mm256_stream_ps(dst, acc[k][r]);
    else _mm256_storeu_ps(dst, acc[k][r]);
  }
}

// One half of a group against n ≤ 4 activation rows.
template <int kType>
void r16_half_pass(const uint8_t* g, int h, int n, int nb, const XQ8_0* x, const int32_t* start, float* out, int N,
                   bool prefetch, bool stream) {
  switch (n) {
    case 1: return r16_tile<1, 1, kType>(g, h, nb, x, start, out, N, prefetch, stream);
    case 2: return r16_tile<2, 1, kType>(g, h, nb, x, start, out, N, prefetch, stream);
    case 3: return r16_tile<3, 1, kType>(g, h, nb, x, start, out, N, prefetch, stream);
    default: return r16_tile<4, 1, kType>(g, h, nb, x, start, out, N, prefetch, stream);
  }
}

template <int kType>
void dot_r16(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0, int o1,
             float* out, int N) {
  constexpr bool kQ8 = R16Half<kType>::kQ8;
  const int nb = K / kQK;
  const bool stream = streams_rows(out, N);
  // Rows are taken in chunks whose prepared activations (~256 KB) stay in L2 while each group
  // of [o0, o1) sweeps them, half by half, 4 rows at a time (one or two rows: both halves at once).
  const int chunk = imax(4, static_cast<int>((256u << 10) / xstride) & ~3);
  thread_local Buf<int32_t> start_buf;  // Q4_0, [chunk rows, nb]: −8·Σx of each row and block
  for (int r0 = 0; r0 < rows; r0 += chunk) {
    const int r1 = imin(rows, r0 + chunk);
    int32_t* const start = start_buf.get(kQ8 ? 1 : static_cast<size_t>(r1 - r0) * nb);
    if (!kQ8) {
      for (int r = r0; r < r1; r++) {
        const XQ8_0 xr = xq8_0_view(xa + xstride * r, K);
        for (int b = 0; b < nb; b++) start[static_cast<size_t>(r - r0) * nb + b] = -8 * xr.s[b];
      }
    }
    for (int o = o0; o < o1; o += kR16Rows) {
      const uint8_t* g = w + wstride * o;
      if (r1 - r0 <= 2) {
        XQ8_0 x[2];
        for (int i = 0; i < r1 - r0; i++) x[i] = xq8_0_view(xa + xstride * (r0 + i), K);
        float* dst = out + static_cast<size_t>(N) * r0 + o;
        if (r1 - r0 == 1) r16_tile<1, 2, kType>(g, 0, nb, x, start, dst, N, true, stream);
        else r16_tile<2, 2, kType>(g, 0, nb, x, start, dst, N, true, stream);
        continue;
      }
      for (int h = 0; h < 2; h++)
        for (int r = r0; r < r1; r += 4) {
          XQ8_0 x[4];
          const int n = imin(4, r1 - r);
          for (int i = 0; i < n; i++) x[i] = xq8_0_view(xa + xstride * (r + i), K);
          float* dst = out + static_cast<size_t>(N) * r + o + 8 * h;
          const int32_t* st = start + static_cast<size_t>(r - r0) * nb;
          r16_half_pass<kType>(g, h, n, nb, x, st, dst, N, h == 0 && r == r0, stream);
        }
    }
  }
  if (stream) _mm_sfence();  // the streamed stores are visible before the pool reports the task done
}

constexpr DotKernel one(DotFn fn, const char* name) { return {fn, name, name}; }

constexpr DotEntry kDots[] = {
    {kQ4_0_R16, one(dot_r16<kQ4_0_R16>, "avx2:dot_r16<Q4_0_R16>")},
    {kQ8_0_R16, one(dot_r16<kQ8_0_R16>, "avx2:dot_r16<Q8_0_R16>")},
};

}  // namespace

extern const KernelRegistration kAvx2DotR16 = {kIsaAvx2, kDots, 2, nullptr, 0};

}  // namespace x86
}  // namespace loom
#endif
