// AVX-512 kernel for weights interleaved by 16 rows (../../r16.h), every row count. Per block, the group's quant bytes give
// 8 vectors of 16 rows × 4 inputs as u8 (Q4_0: 4 × 64 bytes unpacked into nibbles 0..15;
// Q8_0: 8 × 64 bytes of q + 128, used as they are), kept in registers while activation rows
// each take 8 dpbusd against broadcast words of x (s8). The int32 sum starts at bias·Σx (−8
// or −128: what the u8 values carry above the weights), and one fma per block applies d_w
// (16 lanes) · d_x. One to three rows stream the weights in stretches (dot_r16_few); more
// take two groups at a time (one for a last odd group), up to 4 rows a pass. Both give a row
// the same int32 sums and the same f32 operations in the same order, so its products do not
// depend on the batch.

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
#include "common.h"

namespace loom {
namespace x86 {
namespace {

template <int kType>
struct R16Block {
  static constexpr bool kQ8 = kType == kQ8_0_R16;
  static constexpr int kBytes = kR16Rows * (kQ8 ? 34 : 18);
  static constexpr int kBias = kQ8 ? -128 : -8;
  // f(j, v) for the 8 vectors v of a block's quant bytes (g: the block, after its 32 bytes of
  // scales), v holding inputs 4j..4j+3 of the 16 rows
  template <class F>
  static inline void each(const uint8_t* g, F&& f) {
    if (kQ8) {
      LOOM_UNROLL for (int j = 0; j < 8; j++) f(j, _mm512_loadu_si512(g + 64 * j));
      return;
    }
    const __m512i m4 = _mm512_set1_epi8(15);
    LOOM_UNROLL for (int i = 0; i < 4; i++) {
      const __m512i p = _mm512_loadu_si512(g + 64 * i);
      f(i, _mm512_and_si512(p, m4));
      f(i + 4, _mm512_and_si512(_mm512_srli_epi16(p, 4), m4));
    }
  }
};

// R activation rows × the 16 output rows of each of G groups (`gstride` bytes apart, K/32
// blocks each), into out[r·N + 16k + 0..15] for group k. With two groups each broadcast word
// of x serves 16 dpbusd, not 8, and the per-row bookkeeping (start, d_x) is shared: at 64 rows
// on one thread, Q8_0 576 → 1536 went 357 → 340 µs (fast phase) and 472 → 380 (slow one).
// start[r·nb + b]: row r's bias·Σx of block b, read by the broadcast itself (computed in
// the loop, a multiply and a broadcast from a general register, it cost 0–7%).
// The first pass over a group fetches the weights LOOM_PREFETCH_AHEAD ahead (the hardware
// prefetcher alone leaves a large matrix 10–20% slower at 4 and 64 rows); later passes
// find the group in L1.
template <int R, int G, int kType>
inline void r16_group(const uint8_t* g, size_t gstride, int nb, const XQ8_0* x, const int32_t* start, float* out, int N, bool first_pass,
                      bool stream) {
  using B = R16Block<kType>;
  __m512 acc[G][R];
  LOOM_UNROLL for (int k = 0; k < G; k++) LOOM_UNROLL for (int r = 0; r < R; r++) acc[k][r] = _mm512_setzero_ps();
  for (int b = 0; b < nb; b++, g += B::kBytes) {
    if (first_pass)
      LOOM_UNROLL for (int k = 0; k < G; k++) LOOM_UNROLL for (int i = 0; i < B::kBytes; i += 64) LOOM_PREFETCH(g + gstride * k + i);
    __m512 dw[G];
    __m512i q[G][8];
    LOOM_UNROLL for (int k = 0; k < G; k++) {
      dw[k] = _mm512_cvtph_ps(loadu256(g + gstride * k));
      B::each(g + gstride * k + 32, [&](int j, __m512i v) { q[k][j] = v; });
    }
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const uint8_t* xq = reinterpret_cast<const uint8_t*>(x[r].q + kQK * b);
      __m512i sum[G];
      LOOM_UNROLL for (int k = 0; k < G; k++) sum[k] = _mm512_set1_epi32(start[r * nb + b]);
      LOOM_UNROLL for (int j = 0; j < 8; j++) {
        const __m512i xb = bcast32(xq + 4 * j);
        LOOM_UNROLL for (int k = 0; k < G; k++) sum[k] = _mm512_dpbusd_epi32(sum[k], q[k][j], xb);
      }
      const __m512 dx = _mm512_set1_ps(x[r].d[b]);
      LOOM_UNROLL for (int k = 0; k < G; k++) acc[k][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[k]), _mm512_mul_ps(dw[k], dx), acc[k][r]);
    }
  }
  LOOM_UNROLL for (int k = 0; k < G; k++) LOOM_UNROLL for (int r = 0; r < R; r++) {
    float* dst = out + static_cast<size_t>(N) * r + kR16Rows * k;
    if (stream) _mm512_stream_ps(dst, acc[k][r]);
    else _mm512_storeu_ps(dst, acc[k][r]);
  }
}

// R ≤ 3 activation rows × the 16 output rows of S groups `gstride` bytes apart, into
// out[r·N + s·sout + 0..15]. With so few rows the weights stream from memory once and the
// kernel is bound by the stream: S groups from separate stretches of the task's rows keep S
// sequential streams a thread, as one_row_in_stretches does for the plain types, and no
// software prefetch holds the L1 miss buffers the streams need. Against the groups one at a
// time with prefetch, one row: Gemma-3-1B's Q4_0 lm_head (170 MB) 50 → 57 GB/s, an L3-resident
// Q8_0 matrix 120 → 160; two rows 88 → 158; three 62 → 108.
template <int R, int S, int kType>
inline void r16_stretches(const uint8_t* g, size_t gstride, int nb, const XQ8_0* x, float* out, int sout, int N) {
  using B = R16Block<kType>;
  __m512 acc[S][R];
  LOOM_UNROLL for (int s = 0; s < S; s++)
    LOOM_UNROLL for (int r = 0; r < R; r++) acc[s][r] = _mm512_setzero_ps();
  for (int b = 0; b < nb; b++, g += B::kBytes) {
    LOOM_UNROLL for (int s = 0; s < S; s++) {
      const uint8_t* gs = g + gstride * s;
      // one row: two chains of dpbusd (even and odd j), else their latency bounds the stream
      constexpr int C = R == 1 ? 2 : 1;
      __m512i sum[R][C];
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        sum[r][0] = _mm512_set1_epi32(B::kBias * x[r].s[b]);
        if (C == 2) sum[r][C - 1] = _mm512_setzero_si512();
      }
      B::each(gs + 32, [&](int j, __m512i v) {
        LOOM_UNROLL for (int r = 0; r < R; r++)
          sum[r][j % C] = _mm512_dpbusd_epi32(sum[r][j % C], v, bcast32(reinterpret_cast<const uint8_t*>(x[r].q + kQK * b) + 4 * j));
      });
      const __m512 dw = _mm512_cvtph_ps(loadu256(gs));
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        const __m512i total = C == 2 ? _mm512_add_epi32(sum[r][0], sum[r][C - 1]) : sum[r][0];
        acc[s][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_mul_ps(dw, _mm512_set1_ps(x[r].d[b])), acc[s][r]);
      }
    }
  }
  LOOM_UNROLL for (int s = 0; s < S; s++)
    LOOM_UNROLL for (int r = 0; r < R; r++) _mm512_storeu_ps(out + static_cast<size_t>(N) * r + static_cast<size_t>(sout) * s, acc[s][r]);
}

// R ≤ 3 rows: the groups of [o0, o1) in S stretches, the last (groups mod S) one at a time.
// (At four rows, two stretches were slower than one group at a time for Q4_0: 34 vs 42 GB/s.)
template <int R, int S, int kType>
void dot_r16_few(const uint8_t* xa, size_t xstride, const uint8_t* w, size_t wstride, int K, int o0, int o1,
                 float* out, int N) {
  const int nb = K / kQK;
  XQ8_0 x[R];
  for (int r = 0; r < R; r++) x[r] = xq8_0_view(xa + xstride * r, K);
  const int groups = (o1 - o0) / kR16Rows, q = groups / S;
  const size_t group_bytes = wstride * kR16Rows;
  for (int i = 0; i < q; i++) {
    const int o = o0 + kR16Rows * i;
    r16_stretches<R, S, kType>(w + wstride * o, group_bytes * q, nb, x, out + o, kR16Rows * q, N);
  }
  for (int o = o0 + kR16Rows * S * q; o < o1; o += kR16Rows)
    r16_stretches<R, 1, kType>(w + wstride * o, group_bytes, nb, x, out + o, kR16Rows, N);
}

// Rows are taken in chunks whose prepared activations (~256 KB) stay in L2 while every pair
// of groups of [o0, o1) sweeps them, 4 rows at a time.
template <int G, int kType>
void r16_groups_pass(const uint8_t* g, size_t gstride, int n, int nb, const XQ8_0* x, const int32_t* start, float* out,
                     int N, bool first, bool stream) {
  switch (n) {
    case 1: return r16_group<1, G, kType>(g, gstride, nb, x, start, out, N, first, stream);
    case 2: return r16_group<2, G, kType>(g, gstride, nb, x, start, out, N, first, stream);
    case 3: return r16_group<3, G, kType>(g, gstride, nb, x, start, out, N, first, stream);
    default: return r16_group<4, G, kType>(g, gstride, nb, x, start, out, N, first, stream);
  }
}

template <int kType>
void dot_r16(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0, int o1,
             float* out, int N) {
  switch (rows) {
    case 1: return dot_r16_few<1, 4, kType>(xa, xstride, w, wstride, K, o0, o1, out, N);
    case 2: return dot_r16_few<2, 4, kType>(xa, xstride, w, wstride, K, o0, o1, out, N);
    case 3: return dot_r16_few<3, 2, kType>(xa, xstride, w, wstride, K, o0, o1, out, N);
    default: break;
  }
  const int nb = K / kQK;
  const int chunk = imax(4, static_cast<int>((256u << 10) / xstride) & ~3);
  const size_t gstride = wstride * kR16Rows;
  const bool stream = streams_rows(out, N);
  thread_local Buf<int32_t> start_buf;  // [chunk rows, nb]: bias·Σx of each row and block
  for (int r0 = 0; r0 < rows; r0 += chunk) {
    const int r1 = imin(rows, r0 + chunk);
    int32_t* const start = start_buf.get(static_cast<size_t>(r1 - r0) * nb);
    for (int r = r0; r < r1; r++) {
      const XQ8_0 xr = xq8_0_view(xa + xstride * r, K);
      for (int b = 0; b < nb; b++) start[static_cast<size_t>(r - r0) * nb + b] = R16Block<kType>::kBias * xr.s[b];
    }
    for (int o = o0; o < o1; o += 2 * kR16Rows) {
      const uint8_t* g = w + wstride * o;
      const bool pair = o + 2 * kR16Rows <= o1;
      for (int r = r0; r < r1; r += 4) {
        XQ8_0 x[4];
        const int n = imin(4, r1 - r);
        for (int i = 0; i < n; i++) x[i] = xq8_0_view(xa + xstride * (r + i), K);
        float* dst = out + static_cast<size_t>(N) * r + o;
        const int32_t* st = start + static_cast<size_t>(r - r0) * nb;
        if (pair) r16_groups_pass<2, kType>(g, gstride, n, nb, x, st, dst, N, r == r0, stream);
        else r16_groups_pass<1, kType>(g, gstride, n, nb, x, st, dst, N, r == r0, stream);
      }
    }
  }
  if (stream) _mm_sfence();  // the streamed stores are visible before the pool reports the task done
}

template <size_t n>
constexpr int count(const DotEntry (&)[n]) {
  return static_cast<int>(n);
}
constexpr DotKernel one(DotFn fn, const char* name) { return {fn, name, name}; }

constexpr DotEntry kDots[] = {
    {kQ4_0_R16, one(dot_r16<kQ4_0_R16>, "avx512:dot_r16<Q4_0_R16>")},
    {kQ8_0_R16, one(dot_r16<kQ8_0_R16>, "avx512:dot_r16<Q8_0_R16>")},
};

}  // namespace

extern const KernelRegistration kAvx512DotR16 = {kIsaAvx512, kDots, count(kDots), nullptr, 0};

}  // namespace x86
}  // namespace loom
#endif
