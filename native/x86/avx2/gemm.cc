// The AVX2 GEMM for many activation rows of F32, F16 and BF16 weights: the AVX-512 GEMM's plan
// (../avx512/gemm.cc) for its f32 family in 256-bit vectors. Activations are packed once per
// call in tiles of 16 rows, lanes = rows, as f32 v[K][16] (the AVX-512 packing's F32/F16
// layout; F16's and BF16's rounded to f16 or bf16 first, as the dot kernels' are, so BF16's
// products stay exact in f32); a panel of 48 outputs is read in place (F32) or converted to f32
// rows once (F16, BF16); the micro-kernel broadcasts one weight and multiplies it into a tile's
// 16 rows (two vectors), 6 outputs at a time: 12 accumulators, 2 activation vectors and the
// broadcast in the 16 registers, 12 FMAs to 8 loads.
//
// The dot kernels (dot_float.cc) read 4 activation rows per weight row and end every output
// in a horizontal sum; here nothing is summed across lanes and a weight loaded once serves 16
// rows. The integer types keep their dot kernels on AVX2 (dot_r16.cc already shares a weight
// vector among 4 rows, and without VNNI an int8 GEMM gains little over it).
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "../../half.h"
#include "../../quant.h"
#include "../../weight-types.h"
#include "../buf.h"
#include "../dot256.h"
#include "../matmul_x86.h"

namespace loom {
namespace x86 {
namespace {

constexpr int kNR = 6;    // outputs per micro-kernel call
constexpr int kKc = 128;  // inputs per K-block: a tile's slice (8 KB) and 6 weight rows' (3 KB) stay in L1

bool has_gemm(int type) {
  const WeightTraits* t = weight_traits(type);
  return t && (t->act == Act::kF32 || t->act == Act::kF16 || t->act == Act::kBF16);
}

// 8 bf16 bit patterns at p as f32
inline __m256 load_bf16x8(const uint8_t* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(loadu128(p)), 16));
}

// Columns [k, k + 8) of rows[0..8), transposed: dst[stride·j + i] = rows[i][k + j]
inline void transpose8(const float* const* rows, int k, float* dst, size_t stride) {
  __m256 r[8], t[8];
  LOOM_UNROLL for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(rows[i] + k);
  LOOM_UNROLL for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  LOOM_UNROLL for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  // r[c] (c < 4), 128-bit half h: column 4h + c of rows 0..3; r[4 + c]: the same of rows 4..7
  LOOM_UNROLL for (int c = 0; c < 4; c++) {
    _mm256_storeu_ps(dst + stride * c, _mm256_permute2f128_ps(r[c], r[4 + c], 0x20));
    _mm256_storeu_ps(dst + stride * (c + 4), _mm256_permute2f128_ps(r[c], r[4 + c], 0x31));
  }
}

// Rows [16·tile, 16·tile + 16) of x, prepared for `type`, into dst as f32 v[K][16] (zeros past
// the last row).
void pack_tile(int type, const float* x, int rows, int K, int tile, float* dst) {
  thread_local Buf<float> prep_buf;
  thread_local Buf<float> zeros;
  const Act act = weight_traits(type)->act;
  const size_t k = static_cast<size_t>(K);
  float* prep = prep_buf.get(act == Act::kF32 ? 1 : 17 * k);  // BF16: a row of bits after the 16 f32 rows
  const int r0 = 16 * tile, n = imin(16, rows - r0);
  float* zero = n < 16 ? zeros.get(K) : nullptr;  // the rows past the end of x (last tile only)
  if (zero)
    for (int i = 0; i < K; i++) zero[i] = 0.f;
  const float* src[16];
  for (int i = 0; i < 16; i++) {
    src[i] = zero;
    if (i >= n) continue;
    src[i] = x + static_cast<size_t>(r0 + i) * K;
    if (act == Act::kF16) {
      avx2_prepare_row(type, src[i], K, reinterpret_cast<uint8_t*>(prep + k * i));
      src[i] = prep + k * i;
    } else if (act == Act::kBF16) {
      uint8_t* bits = reinterpret_cast<uint8_t*>(prep + 16 * k);
      avx2_prepare_row(type, src[i], K, bits);
      float* row = prep + k * i;
      int j = 0;
      for (; j + 8 <= K; j += 8) _mm256_storeu_ps(row + j, load_bf16x8(bits + 2 * j));
      for (; j < K; j++) row[j] = bf16_to_f32(load_u16(bits + 2 * j));
      src[i] = row;
    }
  }
  int c = 0;
  for (; c + 8 <= K; c += 8) {
    transpose8(src, c, dst + 16 * c, 16);
    transpose8(src + 8, c, dst + 16 * c + 8, 16);
  }
  for (; c < K; c++)
    for (int i = 0; i < 16; i++) dst[16 * c + i] = src[i][c];
}

// ---- a panel's weights as f32 rows ----

struct Panel {
  const float* w[kGemmPanel];
  Buf<float> unpacked;  // F16, BF16: [48][K]
};
using PanelFn = void (*)(const uint8_t* w, size_t wstride, int K, int o0, int no, Panel& p);

void panel_f32(const uint8_t* w, size_t wstride, int, int o0, int no, Panel& p) {
  for (int o = 0; o < no; o++) p.w[o] = reinterpret_cast<const float*>(w + wstride * (o0 + o));
}

// F16 or BF16 rows → f32 rows
template <bool kBrain>
void panel_half(const uint8_t* w, size_t wstride, int K, int o0, int no, Panel& p) {
  const size_t k = static_cast<size_t>(K);
  float* un = p.unpacked.get(kGemmPanel * k);
  for (int o = 0; o < no; o++) {
    const uint8_t* src = w + wstride * (o0 + o);
    float* dst = un + k * o;
    int i = 0;
    for (; i + 8 <= K; i += 8)
      _mm256_storeu_ps(dst + i, kBrain ? load_bf16x8(src + 2 * i) : _mm256_cvtph_ps(loadu128(src + 2 * i)));
    for (; i < K; i++) dst[i] = kBrain ? bf16_to_f32(load_u16(src + 2 * i)) : f16_to_f32(load_u16(src + 2 * i));
    p.w[o] = dst;
  }
}

// ---- the micro-kernel ----

// acc[o·16 + r] (+)= Σ_{k in [k0, k0 + kc)} x[k][r] · w[o][k] for o < NR, r < 16; x: the tile
// at k0. The first K-block starts from zero, later ones from acc.
template <int NR>
void kern(const float* const* w, const float* x, int k0, int kc, float* acc) {
  __m256 f[NR][2];
  const float* wr[NR];
  LOOM_UNROLL for (int o = 0; o < NR; o++) {
    wr[o] = w[o] + k0;
    LOOM_UNROLL for (int h = 0; h < 2; h++) f[o][h] = k0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + 16 * o + 8 * h);
  }
  for (int k = 0; k < kc; k++) {
    const __m256 x0 = _mm256_loadu_ps(x + 16 * k), x1 = _mm256_loadu_ps(x + 16 * k + 8);
    LOOM_UNROLL for (int o = 0; o < NR; o++) {
      const __m256 wb = _mm256_broadcast_ss(wr[o] + k);
      f[o][0] = _mm256_fmadd_ps(x0, wb, f[o][0]);
      f[o][1] = _mm256_fmadd_ps(x1, wb, f[o][1]);
    }
  }
  LOOM_UNROLL for (int o = 0; o < NR; o++) LOOM_UNROLL for (int h = 0; h < 2; h++) _mm256_storeu_ps(acc + 16 * o + 8 * h, f[o][h]);
}

using KernFn = void (*)(const float* const* w, const float* x, int k0, int kc, float* acc);
constexpr KernFn kKernels[kNR] = {kern<1>, kern<2>, kern<3>, kern<4>, kern<5>, kern<6>};

// out[r·N + o] for r in [r0, r1), o in [o0, o1) (o1 − o0 ≤ kGemmPanel); packed: every tile.
void gemm_panel(PanelFn prepare, const float* packed, int r0, int r1, const uint8_t* w, size_t wstride, int K, int o0,
                int o1, float* out, int N) {
  thread_local Panel panel;
  const int no = o1 - o0;
  prepare(w, wstride, K, o0, no, panel);
  alignas(32) float acc[kGemmPanel * 16];  // [o][16 rows]
  for (int t = r0 / 16; 16 * t < r1; t++) {
    const float* x = packed + 16 * static_cast<size_t>(K) * t;
    for (int k0 = 0; k0 < K; k0 += kKc) {
      const int kc = imin(kKc, K - k0);
      for (int og = 0; og < no; og += kNR) kKernels[imin(kNR, no - og) - 1](panel.w + og, x + 16 * k0, k0, kc, acc + 16 * og);
    }
    // acc[o][r] → out[r][o]: 8 × 8 blocks, the rest one by one
    const int nrows = imin(16, r1 - 16 * t);
    float* const dst = out + static_cast<size_t>(16 * t) * N + o0;
    const int no8 = nrows == 16 ? no & ~7 : 0;
    for (int o = 0; o < no8; o += 8) {
      const float* rows[8];
      LOOM_UNROLL for (int i = 0; i < 8; i++) rows[i] = acc + 16 * (o + i);
      transpose8(rows, 0, dst + o, N);
      transpose8(rows, 8, dst + static_cast<size_t>(8) * N + o, N);
    }
    for (int r = 0; r < nrows; r++)
      for (int o = no8; o < no; o++) dst[static_cast<size_t>(r) * N + o] = acc[16 * o + r];
  }
}

template <PanelFn Prepare>
void gemm_float(const uint8_t* packed, int r0, int r1, const uint8_t* w, size_t wstride, int K, int o0, int o1,
                float* out, int N, GemmPrefetch) {
  for (int o = o0; o < o1; o += kGemmPanel)
    gemm_panel(Prepare, reinterpret_cast<const float*>(packed), r0, r1, w, wstride, K, o, imin(o1, o + kGemmPanel), out, N);
}

// Rows from which the GEMM beats the dot kernels (dot_float.cc). A tile of 16 rows costs
// about as much as one of 4, so the crossing is where 3 passes of the dot kernels meet one
// tile. Measured on an AMD EPYC (Zen 3, AVX2), 2 threads, µs dot / GEMM at 384 × 1152,
// 768 × 2304 and 3072 × 768: F16 at 10 rows 125–129 / 129–139, 329–465 / 391–442, 708–718 /
// 729–773; at 12 126–139 / 132–160, 457–537 / 395–552, 752–857 / 554–659. F32 at 8 82–94 /
// 116–118, 345–407 / 411–437, 578–628 / 525–565; at 10 120–127 / 118–119, 520–594 / 422–448,
// 808–848 / 551–566. BF16 (whose dot kernel widens x every step) at 8 rows 133 / 120–143,
// 474–475 / 446–530, 587–600 / 604–726; at 10 180–181 / 123–146, 651–654 / 449–534, 810–820 /
// 639–698.
constexpr GemmEntry kGemms[] = {
    {kF32, {gemm_float<panel_f32>, "f32", 10, 1}},
    {kF16, {gemm_float<panel_half<false>>, "f32", 12, 1}},
    {kBF16, {gemm_float<panel_half<true>>, "f32", 10, 1}},
};

}  // namespace

size_t avx2_gemm_tile_bytes(int type, int K) { return has_gemm(type) ? 64 * static_cast<size_t>(K) : 0; }

void avx2_gemm_pack(int type, const float* x, int rows, int K, int tile, uint8_t* dst_tile) {
  if (has_gemm(type)) pack_tile(type, x, rows, K, tile, reinterpret_cast<float*>(dst_tile));
}

extern const KernelRegistration kAvx2Gemm = {kIsaAvx2, nullptr, 0, kGemms, sizeof(kGemms) / sizeof(kGemms[0])};

}  // namespace x86
}  // namespace loom
#endif
