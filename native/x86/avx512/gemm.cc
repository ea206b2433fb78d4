// The AVX-512 GEMM for many activation rows: activations packed once per call in 16-row
// tiles (gemm_pack.cc, which describes their layouts), weights prepared a panel of 48 outputs
// at a time for one of five micro-kernel families (f32, bf16, q8, q4k, q6k), and each type's
// registration (its panel preparation, family and threshold).
//
// A micro-kernel computes NR output rows (weights, one broadcast 32-bit word at a time) by
// NV·16 activation rows (NV packed tiles, 16 rows per vector lane set) over a K-block,
// accumulating into acc[o][16·v + lane] (f32). Integer types sum exact int32 products per
// block with VNNI dpbusd (u8 × s8), then scale in f32. Blocks of 32 (Q8_0 activations): u8 =
// weight + 128 (a sign-bit flip of the broadcast word), s8 = x; the +128 is taken back by the
// tile's −128·Σx, the accumulator's initial value. K-quants: u8 = x + 128, s8 = weight, and
// −128·Σw comes from the panel's tables.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "../../half.h"
#include "../../quant.h"
#include "../../weight-types.h"
#include "../dot256.h"
#include "../matmul_x86.h"
#include "common.h"
#include "gemm.h"

namespace loom {
namespace x86 {
namespace {
// ---- per-panel weight preparation (thread-local, reused) ----

struct Q4KTab {  // one Q4_K block of one output row
  float d, dmin;
  int32_t C;          // −128 · Σ_j sc_j · Σ q over sub-block j
  int32_t sc[8];
  uint32_t mpair[4];  // (m_2i, m_2i+1) as two int16
};
struct Q6KTab {  // one Q6_K block of one output row
  float d;
  int32_t C;  // −128 · Σ_j sc_j · Σ (q − 32) over sub-block j
  int32_t sc[16];
};

struct Panel {
  const uint8_t* w[48];  // per output row: weight data the kernel reads (in place or unpacked)
  int bstride = 0;       // bytes between blocks in w[o] (integer types)
  Buf<uint8_t> unpacked;  // [48][K] s8 or f32 rows
  Buf<float> dw;          // Q8_0/Q4_0: [48][K/32]
  Buf<Q4KTab> q4k;        // [48][K/256]
  Buf<Q6KTab> q6k;        // [48][K/256]
};

// The scale bytes of values 64c .. 64c+63 of a Q4_K / Q5_K block (sub-blocks 2c, 2c+1; smb:
// q4_k_scales' 16 bytes in every 128-bit lane), to meet those values in one dpbusd
inline __m512i q4k_chunk_scales(__m512i smb, int c) {
  const __m512i lane = _mm512_setr_epi64(0, 0, 0, 0, 0x0101010101010101, 0x0101010101010101, 0x0101010101010101,
                                         0x0101010101010101);
  return _mm512_shuffle_epi8(smb, _mm512_add_epi8(_mm512_set1_epi8(static_cast<char>(2 * c)), lane));
}

// A Q4_K / Q5_K block's table: d, dmin at blk, scales and mins (q4_k_scales) in smv, and csum
// the dpbusd sums of its values × their sub-block's scale
inline void q4k_tab(const uint8_t* blk, __m128i smv, __m512i csum, Q4KTab& t) {
  t.d = f16_scalar(blk);
  t.dmin = f16_scalar(blk + 2);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(t.sc), _mm256_cvtepu8_epi32(smv));
  t.C = -128 * _mm512_reduce_add_epi32(csum);
  // (m_2i, m_2i+1) as two int16 each: the 8 mins widened in order
  _mm_storeu_si128(reinterpret_cast<__m128i*>(t.mpair), _mm_cvtepu8_epi16(_mm_srli_si128(smv, 8)));
}

// Q4_K block → s8 q (0..15, in order) and its table. C's Σ_j sc_j · Σ q over sub-block j is
// summed as the values are unpacked, one dpbusd a chunk (values × their scales), not a
// horizontal sum per sub-block.
inline void panel_q4_k(const uint8_t* blk, int8_t* q, Q4KTab& t) {
  uint8_t sm[16];
  q4_k_scales(blk + 4, sm);
  const __m128i smv = loadu128(sm);
  const __m512i smb = _mm512_broadcast_i32x4(smv);
  const __m256i m4 = _mm256_set1_epi8(15);
  __m512i csum = _mm512_setzero_si512();
  LOOM_UNROLL for (int c = 0; c < 4; c++) {
    const __m256i qs = loadu256(blk + 16 + 32 * c);
    const __m256i lo = _mm256_and_si256(qs, m4), hi = _mm256_and_si256(_mm256_srli_epi16(qs, 4), m4);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * c), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * c + 32), hi);
    csum = _mm512_dpbusd_epi32(csum, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), q4k_chunk_scales(smb, c));
  }
  q4k_tab(blk, smv, csum, t);
}

// Q6_K block → s8 q − 32 (−32..31, in order) and its table. C = Σ_j sc_j · Σ_{16 values}
// (q − 32) = Σ_j sc_j · Σ q − 512 · Σ_j sc_j: the first sum as the values are unpacked, one
// dpbusd per 64 (q × its sub-block's scale).
inline void panel_q6_k(const uint8_t* blk, int8_t* q, Q6KTab& t) {
  const __m128i sc8 = loadu128(blk + 192);
  const __m512i scb = _mm512_broadcast_i32x4(sc8);
  __m512i csum = _mm512_setzero_si512();
  LOOM_UNROLL for (int h = 0; h < 2; h++) {
    __m256i v[4];
    q6_k_unpack_half(blk, h, v);
    LOOM_UNROLL for (int c = 0; c < 4; c++)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 128 * h + 32 * c), _mm256_sub_epi8(v[c], _mm256_set1_epi8(32)));
    LOOM_UNROLL for (int c = 0; c < 4; c += 2) {  // values 128h + 32c .. + 63: sub-blocks 8h + 2c .. + 3
      const __m512i idx = _mm512_add_epi8(_mm512_set1_epi8(static_cast<char>(8 * h + 2 * c)),
                                          _mm512_setr_epi64(0, 0, 0x0101010101010101, 0x0101010101010101, 0x0202020202020202,
                                                            0x0202020202020202, 0x0303030303030303, 0x0303030303030303));
      const __m512i qv = _mm512_inserti64x4(_mm512_castsi256_si512(v[c]), v[c + 1], 1);
      csum = _mm512_dpbusd_epi32(csum, qv, _mm512_shuffle_epi8(scb, idx));
    }
  }
  // Σ_j sc_j from sad(sc ^ 0x80, 0) = Σ (sc + 128) per 8 bytes
  const __m128i sad = _mm_sad_epu8(_mm_xor_si128(sc8, _mm_set1_epi8(static_cast<char>(0x80))), _mm_setzero_si128());
  const int32_t sc_sum = _mm_cvtsi128_si32(_mm_add_epi64(sad, _mm_unpackhi_epi64(sad, sad))) - 2048;
  _mm512_storeu_si512(t.sc, _mm512_cvtepi8_epi32(sc8));
  t.d = f16_scalar(blk + 208);
  t.C = -128 * (_mm512_reduce_add_epi32(csum) - 512 * sc_sum);
}

// ---- the types that reuse another type's micro-kernels ----
//
// Q5_K block → s8 q (0..31, in order) and its Q4_K-style table (C summed as panel_q4_k does)
inline void panel_q5_k(const uint8_t* blk, int8_t* q, Q4KTab& t) {
  uint8_t sm[16];
  q4_k_scales(blk + 4, sm);
  const __m128i smv = loadu128(sm);
  const __m512i smb = _mm512_broadcast_i32x4(smv);
  const __m256i m4 = _mm256_set1_epi8(15), m16 = _mm256_set1_epi8(16), qh = loadu256(blk + 16);
  __m512i csum = _mm512_setzero_si512();
  LOOM_UNROLL for (int c = 0; c < 4; c++) {
    const __m256i qs = loadu256(blk + 48 + 32 * c);
    const __m256i lo = _mm256_or_si256(_mm256_and_si256(qs, m4), _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c), 4), m16));
    const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 4), m4),
                                       _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c + 1), 4), m16));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * c), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * c + 32), hi);
    csum = _mm512_dpbusd_epi32(csum, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), q4k_chunk_scales(smb, c));
  }
  q4k_tab(blk, smv, csum, t);
}

// Σ of 16 int8 at p
inline int32_t sum_i8_16(const int8_t* p) {
  return hsum256_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(loadu128(p)), _mm256_set1_epi16(1)));
}

// Q6_K-style table from 16 sub-block scales of 16 s8 values
inline void q6k_tab(const int8_t* q, const int16_t* sc, float d, Q6KTab& t) {
  t.d = d;
  int32_t C = 0;
  for (int j = 0; j < 16; j++) {
    t.sc[j] = sc[j];
    C += sc[j] * sum_i8_16(q + 16 * j);
  }
  t.C = -128 * C;
}

// Q3_K block → s8 q − 4 (−4..3, in order)
inline void panel_q3_k(const uint8_t* blk, int8_t* q, Q6KTab& t) {
  alignas(32) int16_t sc[16];
  q3_k_scales(blk + 96, sc);
  const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(4), hm = loadu256(blk);
  for (int n = 0; n < 2; n++) {
    const __m256i qs = loadu256(blk + 32 + 32 * n);
    for (int j = 0; j < 4; j++) {
      const __m256i hi = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hm, 4 * n + j), 2), m4);
      const __m256i v = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), m3), hi);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 128 * n + 32 * j), _mm256_sub_epi8(v, m4));
    }
  }
  q6k_tab(q, sc, f16_scalar(blk + 108), t);
}

// IQ4_XS block → s8 levels; each 32-value scale serves both of its 16-value halves
inline void panel_iq4_xs(const uint8_t* blk, int8_t* q, Q6KTab& t) {
  int16_t sc[16];
  const int h = blk[2] | (blk[3] << 8);
  for (int j = 0; j < 8; j++) {
    sc[2 * j] = sc[2 * j + 1] = static_cast<int16_t>((((blk[4 + (j >> 1)] >> (4 * (j & 1))) & 15) | (((h >> (2 * j)) & 3) << 4)) - 32);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * j), _mm256_shuffle_epi8(iq4nl_table(), q4_0_unpack(blk + 8 + 16 * j)));
  }
  q6k_tab(q, sc, f16_scalar(blk), t);
}

// A panel's weight preparation, one function per type: rows [o0, o0 + no) into p.
using PanelFn = void (*)(const uint8_t* w, size_t wstride, int K, int o0, int no, Panel& p);

// F32, BF16: read in place
void panel_in_place(const uint8_t* w, size_t wstride, int, int o0, int no, Panel& p) {
  for (int o = 0; o < no; o++) p.w[o] = w + wstride * (o0 + o);
}

// F16 → f32 rows
void panel_f16(const uint8_t* w, size_t wstride, int K, int o0, int no, Panel& p) {
  const size_t k = static_cast<size_t>(K);
  p.unpacked.get(48 * 4 * k);
  for (int o = 0; o < no; o++) {
    const uint8_t* src = w + wstride * (o0 + o);
    float* dst = reinterpret_cast<float*>(p.unpacked.data()) + k * o;
    int i = 0;
    for (; i + 16 <= K; i += 16) _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(loadu256(src + 2 * i)));
    for (; i < K; i++) dst[i] = f16_to_f32(load_u16(src + 2 * i));
    p.w[o] = reinterpret_cast<const uint8_t*>(dst);
  }
}

// Q8_0: the s8 values read in place (blocks 34 bytes apart), the scales as f32
void panel_q8_0(const uint8_t* w, size_t wstride, int K, int o0, int no, Panel& p) {
  const int nb = K / 32;
  p.dw.get(48 * static_cast<size_t>(nb));
  p.bstride = 34;
  for (int o = 0; o < no; o++) {
    const uint8_t* row = w + wstride * (o0 + o);
    for (int b = 0; b < nb; b++) p.dw.data()[o * nb + b] = f16_scalar(row + 34 * b);
    p.w[o] = row + 2;
  }
}

// The s8 values of a block of 32 in order (the weight is d·value)
inline __m256i s8_q4_0(const uint8_t* blk) { return _mm256_sub_epi8(q4_0_unpack(blk + 2), _mm256_set1_epi8(8)); }
inline __m256i s8_q5_0(const uint8_t* blk) {
  return _mm256_sub_epi8(_mm256_or_si256(q4_0_unpack(blk + 6), _mm256_and_si256(bits_to_bytes32(blk + 2), _mm256_set1_epi8(16))),
                         _mm256_set1_epi8(16));
}
inline __m256i s8_iq4_nl(const uint8_t* blk) { return _mm256_shuffle_epi8(iq4nl_table(), q4_0_unpack(blk + 2)); }

// Q4_0, Q5_0, IQ4_NL → s8 values in blocks of 32 and their scales, for kern_q8 as Q8_0's
template <int kBytes, __m256i (*Values)(const uint8_t*)>
void panel_s8_32(const uint8_t* w, size_t wstride, int K, int o0, int no, Panel& p) {
  const size_t k = static_cast<size_t>(K);
  const int nb = K / 32;
  p.dw.get(48 * static_cast<size_t>(nb));
  p.unpacked.get(48 * k);
  p.bstride = 32;
  for (int o = 0; o < no; o++) {
    const uint8_t* row = w + wstride * (o0 + o);
    int8_t* un = reinterpret_cast<int8_t*>(p.unpacked.data()) + k * o;
    for (int b = 0; b < nb; b++) {
      const uint8_t* blk = row + kBytes * b;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(un + 32 * b), Values(blk));
      p.dw.data()[o * nb + b] = f16_scalar(blk);
    }
    p.w[o] = reinterpret_cast<const uint8_t*>(un);
  }
}

// K-quants, IQ4_XS → s8 values per 256 and a table per block: Q4_K's (Q4_K, Q5_K) or Q6_K's
// (Q6_K, Q3_K, IQ4_XS), filled by Fill from the block
template <int kBytes, class Tab, void (*Fill)(const uint8_t*, int8_t*, Tab&), Buf<Tab> Panel::*kTabs>
void panel_kquant(const uint8_t* w, size_t wstride, int K, int o0, int no, Panel& p) {
  const size_t k = static_cast<size_t>(K);
  const int nb = K / 256;
  p.unpacked.get(48 * k);
  (p.*kTabs).get(48 * static_cast<size_t>(nb));
  p.bstride = 256;
  for (int o = 0; o < no; o++) {
    const uint8_t* row = w + wstride * (o0 + o);
    int8_t* un = reinterpret_cast<int8_t*>(p.unpacked.data()) + k * o;
    for (int b = 0; b < nb; b++) Fill(row + kBytes * b, un + 256 * b, (p.*kTabs).data()[o * nb + b]);
    p.w[o] = reinterpret_cast<const uint8_t*>(un);
  }
}

// ---- micro-kernels ----
// x: tile 0 of this micro-kernel at the K-block start; tile v is x + v·tw (32-bit words).

// The first K-block starts from zero (acc is not cleared beforehand), later ones from acc.
#define LOOM_ACC_LOAD(f, acc, astride, first)                                                       \
  LOOM_UNROLL for (int o = 0; o < NR; o++)                                                           \
    LOOM_UNROLL for (int v = 0; v < NV; v++) f[o][v] = (first) ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + o * astride + 16 * v)
#define LOOM_ACC_STORE(f, acc, astride)                                   \
  LOOM_UNROLL for (int o = 0; o < NR; o++)                                 \
    LOOM_UNROLL for (int v = 0; v < NV; v++) _mm512_storeu_ps(acc + o * astride + 16 * v, f[o][v])

// F32 / F16 (f32 weight rows): k in [k0, k0 + kc)
template <int NR, int NV>
void kern_f32(const Panel& p, int og, const uint32_t* x, size_t tw, int k0, int kc, float* acc, int astride) {
  __m512 f[NR][NV];
  LOOM_ACC_LOAD(f, acc, astride, k0 == 0);
  const float* w[NR];
  LOOM_UNROLL for (int o = 0; o < NR; o++) w[o] = reinterpret_cast<const float*>(p.w[og + o]) + k0;
  const float* xf = reinterpret_cast<const float*>(x);
  for (int k = 0; k < kc; k++) {
    __m512 xv[NV];
    LOOM_UNROLL for (int v = 0; v < NV; v++) xv[v] = _mm512_loadu_ps(xf + v * tw + 16 * k);
    LOOM_UNROLL for (int o = 0; o < NR; o++) {
      const __m512 wb = _mm512_set1_ps(w[o][k]);
      LOOM_UNROLL for (int v = 0; v < NV; v++) f[o][v] = _mm512_fmadd_ps(xv[v], wb, f[o][v]);
    }
  }
  LOOM_ACC_STORE(f, acc, astride);
}

// BF16: pairs of values per word; k0, kc even
template <int NR, int NV>
void kern_bf16(const Panel& p, int og, const uint32_t* x, size_t tw, int k0, int kc, float* acc, int astride) {
  __m512 f[NR][NV];
  LOOM_ACC_LOAD(f, acc, astride, k0 == 0);
  const uint8_t* w[NR];
  LOOM_UNROLL for (int o = 0; o < NR; o++) w[o] = p.w[og + o] + 2 * k0;
  for (int k2 = 0; k2 < kc / 2; k2++) {
    __m512bh xv[NV];
    LOOM_UNROLL for (int v = 0; v < NV; v++) xv[v] = (__m512bh)_mm512_loadu_si512(x + v * tw + 16 * k2);
    LOOM_UNROLL for (int o = 0; o < NR; o++) {
      const __m512bh wb = (__m512bh)bcast32(w[o] + 4 * k2);
      LOOM_UNROLL for (int v = 0; v < NV; v++) f[o][v] = _mm512_dpbf16_ps(f[o][v], xv[v], wb);
    }
  }
  LOOM_ACC_STORE(f, acc, astride);
}

// Q8_0 / Q4_0 (s8 weights in blocks of 32 with f32 scale dw): blocks [b0, b0 + nbk)
template <int NR, int NV>
void kern_q8(const Panel& p, int og, const uint32_t* x, size_t tw, int K, int b0, int nbk, float* acc, int astride) {
  __m512 f[NR][NV];
  LOOM_ACC_LOAD(f, acc, astride, b0 == 0);
  const int nb = K / 32;
  const uint32_t* xd = x + 16 * (K / 4);  // d section of tile 0
  const uint32_t* xc = xd + 16 * nb;      // −128·Σx section
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int b = b0; b < b0 + nbk; b++) {
    __m512i s[NR][NV];
    LOOM_UNROLL for (int v = 0; v < NV; v++) {
      const __m512i c = _mm512_loadu_si512(xc + v * tw + 16 * b);
      LOOM_UNROLL for (int o = 0; o < NR; o++) s[o][v] = c;
    }
    LOOM_UNROLL for (int g = 0; g < 8; g++) {
      __m512i xv[NV];
      LOOM_UNROLL for (int v = 0; v < NV; v++) xv[v] = _mm512_loadu_si512(x + v * tw + 16 * (8 * b + g));
      LOOM_UNROLL for (int o = 0; o < NR; o++) {
        const __m512i wb = _mm512_xor_si512(bcast32(p.w[og + o] + p.bstride * b + 4 * g), flip);  // w + 128
        LOOM_UNROLL for (int v = 0; v < NV; v++) s[o][v] = _mm512_dpbusd_epi32(s[o][v], wb, xv[v]);
      }
    }
    LOOM_UNROLL for (int v = 0; v < NV; v++) {
      const __m512 dx = _mm512_loadu_ps(reinterpret_cast<const float*>(xd + v * tw + 16 * b));
      LOOM_UNROLL for (int o = 0; o < NR; o++) {
        const __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(s[o][v]), dx);
        f[o][v] = _mm512_fmadd_ps(t, _mm512_set1_ps(p.dw.data()[(og + o) * nb + b]), f[o][v]);
      }
    }
  }
  LOOM_ACC_STORE(f, acc, astride);
}

// Q4_K / Q6_K (s8 weights unpacked per panel; sub-blocks of SUB values with int scales)
template <int NR, int NV, bool kQ4K>
void kern_kq(const Panel& p, int og, const uint32_t* x, size_t tw, int K, int b0, int nbk, float* acc, int astride) {
  constexpr int SUB = kQ4K ? 32 : 16, NSUB = 256 / SUB, G = SUB / 4;
  __m512 f[NR][NV];
  LOOM_ACC_LOAD(f, acc, astride, b0 == 0);
  const int nb = K / 256;
  const uint32_t* xd = x + 16 * (K / 4);
  const uint32_t* xs = xd + 16 * nb;
  for (int b = b0; b < b0 + nbk; b++) {
    __m512i blk[NR][NV];
    LOOM_UNROLL for (int o = 0; o < NR; o++) {
      const int32_t C = kQ4K ? p.q4k.data()[(og + o) * nb + b].C : p.q6k.data()[(og + o) * nb + b].C;
      LOOM_UNROLL for (int v = 0; v < NV; v++) blk[o][v] = _mm512_set1_epi32(C);
    }
    for (int j = 0; j < NSUB; j++) {
      __m512i s[NR][NV];
      LOOM_UNROLL for (int o = 0; o < NR; o++)
        LOOM_UNROLL for (int v = 0; v < NV; v++) s[o][v] = _mm512_setzero_si512();
      LOOM_UNROLL for (int g = 0; g < G; g++) {
        const int word = 64 * b + G * j + g;
        __m512i xv[NV];
        LOOM_UNROLL for (int v = 0; v < NV; v++) xv[v] = _mm512_loadu_si512(x + v * tw + 16 * word);
        LOOM_UNROLL for (int o = 0; o < NR; o++) {
          const __m512i wb = bcast32(p.w[og + o] + 4 * word);
          LOOM_UNROLL for (int v = 0; v < NV; v++) s[o][v] = _mm512_dpbusd_epi32(s[o][v], xv[v], wb);
        }
      }
      LOOM_UNROLL for (int o = 0; o < NR; o++) {
        const int32_t sc = kQ4K ? p.q4k.data()[(og + o) * nb + b].sc[j] : p.q6k.data()[(og + o) * nb + b].sc[j];
        const __m512i scv = _mm512_set1_epi32(sc);
        LOOM_UNROLL for (int v = 0; v < NV; v++) blk[o][v] = _mm512_add_epi32(blk[o][v], _mm512_mullo_epi32(s[o][v], scv));
      }
    }
    LOOM_UNROLL for (int v = 0; v < NV; v++) {
      const __m512 dx = _mm512_loadu_ps(reinterpret_cast<const float*>(xd + v * tw + 16 * b));
      __m512i xsum[4];
      if (kQ4K)
        LOOM_UNROLL for (int i = 0; i < 4; i++) xsum[i] = _mm512_loadu_si512(xs + v * tw + 16 * (4 * b + i));
      LOOM_UNROLL for (int o = 0; o < NR; o++) {
        __m512 t;
        if (kQ4K) {
          const Q4KTab& tb = p.q4k.data()[(og + o) * nb + b];
          __m512i mn = _mm512_setzero_si512();
          LOOM_UNROLL for (int i = 0; i < 4; i++) mn = _mm512_dpwssd_epi32(mn, xsum[i], _mm512_set1_epi32(tb.mpair[i]));
          t = _mm512_mul_ps(_mm512_cvtepi32_ps(blk[o][v]), _mm512_set1_ps(tb.d));
          t = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mn), _mm512_set1_ps(tb.dmin), t);
        } else {
          t = _mm512_mul_ps(_mm512_cvtepi32_ps(blk[o][v]), _mm512_set1_ps(p.q6k.data()[(og + o) * nb + b].d));
        }
        f[o][v] = _mm512_fmadd_ps(t, dx, f[o][v]);
      }
    }
  }
  LOOM_ACC_STORE(f, acc, astride);
}

// ---- driver ----

inline size_t ceil_div_size(int a, int b) { return static_cast<size_t>((a + b - 1) / b); }

constexpr int kPanel = 48;    // output rows per task (matmul.cc uses the same)
constexpr int kMaxTiles = 4;  // activation tiles per micro-kernel pass

struct GemmShape {
  int nr;     // output rows per micro-kernel
  int tiles;  // tiles per pass
  int kc;     // K-block (values)
};

using KernFn = void (*)(const Panel&, int, const uint32_t*, size_t, int, int, int, float*, int);

// Wrappers with one signature: (panel, og, x, tw, K, k0 (values), kc (values), acc, astride)
template <int NR, int NV>
void run_f32(const Panel& p, int og, const uint32_t* x, size_t tw, int, int k0, int kc, float* acc, int as) {
  kern_f32<NR, NV>(p, og, x + 16 * k0, tw, k0, kc, acc, as);
}
template <int NR, int NV>
void run_bf16(const Panel& p, int og, const uint32_t* x, size_t tw, int, int k0, int kc, float* acc, int as) {
  kern_bf16<NR, NV>(p, og, x + 16 * (k0 / 2), tw, k0, kc, acc, as);
}
template <int NR, int NV>
void run_q8(const Panel& p, int og, const uint32_t* x, size_t tw, int K, int k0, int kc, float* acc, int as) {
  kern_q8<NR, NV>(p, og, x, tw, K, k0 / 32, kc / 32, acc, as);
}
template <int NR, int NV>
void run_q4k(const Panel& p, int og, const uint32_t* x, size_t tw, int K, int k0, int kc, float* acc, int as) {
  kern_kq<NR, NV, true>(p, og, x, tw, K, k0 / 256, kc / 256, acc, as);
}
template <int NR, int NV>
void run_q6k(const Panel& p, int og, const uint32_t* x, size_t tw, int K, int k0, int kc, float* acc, int as) {
  kern_kq<NR, NV, false>(p, og, x, tw, K, k0 / 256, kc / 256, acc, as);
}

// table[nr − 1][nv − 1] for nr ≤ 6, nv ≤ 4
template <template <int, int> class Run>
struct Table;
#define LOOM_ROW(NR) {Run<NR, 1>::f, Run<NR, 2>::f, Run<NR, 3>::f, Run<NR, 4>::f}
#define LOOM_ROW1(NR) {Run<NR, 1>::f, nullptr, nullptr, nullptr}
template <int NR, int NV> struct RunF32 { static constexpr KernFn f = run_f32<NR, NV>; };
template <int NR, int NV> struct RunBF16 { static constexpr KernFn f = run_bf16<NR, NV>; };
template <int NR, int NV> struct RunQ8 { static constexpr KernFn f = run_q8<NR, NV>; };
template <int NR, int NV> struct RunQ4K { static constexpr KernFn f = run_q4k<NR, NV>; };
template <int NR, int NV> struct RunQ6K { static constexpr KernFn f = run_q6k<NR, NV>; };
template <template <int, int> class Run>
struct Table {
  // nr 7..12 only with one tile (nv = 1)
  static constexpr KernFn t[12][4] = {LOOM_ROW(1), LOOM_ROW(2), LOOM_ROW(3), LOOM_ROW(4), LOOM_ROW(5), LOOM_ROW(6),
                                      LOOM_ROW1(7), LOOM_ROW1(8), LOOM_ROW1(9), LOOM_ROW1(10), LOOM_ROW1(11),
                                      LOOM_ROW1(12)};
};
#undef LOOM_ROW
#undef LOOM_ROW1

// A micro-kernel family: its shape and kernels[nr − 1][nv − 1]. Output rows per micro-kernel
// when a pass holds a single tile (16 rows or fewer): single_nr, as twice as many weight rows
// keep as many accumulators busy (8 for the K-quants' Q8_K activations, else 12).
struct GemmFamily {
  GemmShape shape;
  int single_nr;
  const KernFn (*kernels)[4];
};
constexpr GemmFamily kFamilyF32 = {{6, 4, 128}, 12, Table<RunF32>::t};  // F32, F16
constexpr GemmFamily kFamilyBF16 = {{6, 4, 256}, 12, Table<RunBF16>::t};
constexpr GemmFamily kFamilyQ8 = {{6, 2, 1024}, 12, Table<RunQ8>::t};   // blocks of 32 as s8 values
constexpr GemmFamily kFamilyQ4K = {{4, 2, 1024}, 8, Table<RunQ4K>::t};  // Q4_K's tables
constexpr GemmFamily kFamilyQ6K = {{4, 2, 1024}, 8, Table<RunQ6K>::t};  // Q6_K's tables

// output rows per micro-kernel in a pass of nv tiles
inline int pass_nr(const GemmFamily& f, int nv) { return nv == 1 ? f.single_nr : f.shape.nr; }

// out[r·N + o] for r in [r0, r1), o in [o0, o1) (o1 − o0 ≤ kPanel); packed: every 16-row tile.
void gemm_panel(PanelFn prepare, const GemmFamily& fam, size_t tb, const uint8_t* packed, int r0, int r1,
                const uint8_t* w, size_t wstride, int K, int o0, int o1, float* out, int N, GemmPrefetch next) {
  thread_local Panel panel;
  const int no = o1 - o0;
  prepare(w, wstride, K, o0, no, panel);
  const GemmShape sh = fam.shape;
  const size_t tw = tb / 4;
  constexpr int AS = 16 * kMaxTiles;  // acc row stride (floats)
  alignas(64) float acc[kPanel * AS];
  // output rows as wide as an LM head's are streamed (as dot_r16 does), whole 16-float tiles
  const bool stream = streams_rows(out, N);
  // `next` is fetched into L2 in equal slices, one before each micro-kernel call of this
  // panel: weights come from memory, and prepare_panel would otherwise wait for them a line
  // at a time (a burst of prefetches at once stalls the kernel instead)
  size_t calls = 0;
  for (int t = r0 / 16; 16 * t < r1; t += sh.tiles)
    calls += ceil_div_size(K, sh.kc) * ceil_div_size(no, pass_nr(fam, imin(sh.tiles, (r1 - 16 * t + 15) / 16)));
  const size_t slice = (next.bytes + calls - 1) / calls;
  size_t call = 0;
  for (int t = r0 / 16; 16 * t < r1; t += sh.tiles) {
    const int nv = imin(sh.tiles, (r1 - 16 * t + 15) / 16);
    const uint32_t* x = reinterpret_cast<const uint32_t*>(packed + tb * t);
    for (int k0 = 0; k0 < K; k0 += sh.kc) {
      const int kc = imin(sh.kc, K - k0);
      const int step = pass_nr(fam, nv);
      for (int og = 0; og < no; og += step) {
        const int nr = imin(step, no - og);
        if (next.bytes > 0) {
          const size_t from = slice * static_cast<size_t>(call++), to = from + slice < next.bytes ? from + slice : next.bytes;
          for (size_t b = from; b < to; b += 64) __builtin_prefetch(next.begin + b, 0, 2);
        }
        fam.kernels[nr - 1][nv - 1](panel, og, x, tw, K, k0, kc, acc + og * AS, AS);
      }
    }
    // acc[o][r] → out[r][o], 16 × 16 at a time
    const int nrows = imin(r1, 16 * (t + nv)) - 16 * t;
    for (int rb = 0; rb < nrows; rb += 16) {
      for (int ob = 0; ob < no; ob += 16) {
        const uint32_t* rows[16];
        LOOM_UNROLL for (int i = 0; i < 16; i++)
          rows[i] = ob + i < no ? reinterpret_cast<const uint32_t*>(acc + (ob + i) * AS + rb) : nullptr;
        const int nob = imin(16, no - ob);
        float* dst = out + static_cast<size_t>(16 * t + rb) * N + o0 + ob;
        transpose16(rows, imin(16, nrows - rb), reinterpret_cast<uint32_t*>(dst), static_cast<size_t>(N),
                    static_cast<__mmask16>((1u << nob) - 1), stream && nob == 16 && reinterpret_cast<uintptr_t>(dst) % 64 == 0);
      }
    }
  }
  if (stream) _mm_sfence();  // the streamed stores are visible before the pool reports the task done
}

// A type's GEMM: panels of kPanel outputs, each prepared by Prepare for family F's micro-kernels
template <PanelFn Prepare, const GemmFamily& F>
void gemm(const uint8_t* packed, int r0, int r1, const uint8_t* w, size_t wstride, int K, int o0, int o1, float* out,
          int N, GemmPrefetch next, size_t tb) {
  for (int o = o0; o < o1; o += kPanel) {
    const int oe = imin(o1, o + kPanel);
    // the next panel of this call, else the caller's next range
    const GemmPrefetch ahead = oe < o1 ? GemmPrefetch{w + wstride * oe, wstride * static_cast<size_t>(imin(o1, oe + kPanel) - oe)} : next;
    gemm_panel(Prepare, F, tb, packed, r0, r1, w, wstride, K, o, oe, out, N, ahead);
  }
}
template <int kType, PanelFn Prepare, const GemmFamily& F>
void gemm_of(const uint8_t* packed, int r0, int r1, const uint8_t* w, size_t wstride, int K, int o0, int o1, float* out,
             int N, GemmPrefetch next) {
  gemm<Prepare, F>(packed, r0, r1, w, wstride, K, o0, o1, out, N, next, avx512_gemm_tile_bytes(kType, K));
}

// Rows at which the packed GEMM (16-row tiles) beats the dot kernels: where the dot
// kernels' cost, linear in rows, crosses the GEMM's, which is about flat up to 16 rows (its
// per-panel weight unpacking dominates there). Measured on an AMD EPYC (Zen 4-class AVX-512)
// at 2048 × 2048 and 2048 × 8192, dot / GEMM ms at 8 rows: Q4_K 0.27 / 0.37, Q6_K 0.24 / 0.45,
// Q3_K 0.32 / 0.51, Q5_K 0.33 / 0.36, IQ4_XS 0.49 / 0.53, Q8_0 0.38 / 0.35, Q4_0 0.42 / 0.41.
// After the quad-order dot kernels (2048 × 8192, 2 threads, dot / GEMM ms): Q4_0 at 8 rows
// 1.19–1.31 / 1.46–1.53, at 9 1.43–1.57 / 1.48–1.51, at 10 1.56–1.69 / 1.50; Q5_0 at 9
// 1.66 / 1.73–1.76, at 10 1.77–1.78 / 1.75–1.77. After the Q4_K and Q6_K panels' tables
// were vectorized (µs, dot / GEMM): Q6_K at 9 rows 1111–1115 / 1130–1236, at 10 1195–1201 /
// 1121–1127; Q4_K at 9 1158–1237 / 1058–1173. F16 and BF16: 12. Q4_1, Q5_1, Q2_K (a min per
// 16 values) have no GEMM: their dot kernels run at every row count.
constexpr GemmEntry kGemms[] = {
    {kF32, {gemm_of<kF32, panel_in_place, kFamilyF32>, "f32", 8, 1}},
    {kF16, {gemm_of<kF16, panel_f16, kFamilyF32>, "f32", 12, 1}},
    {kBF16, {gemm_of<kBF16, panel_in_place, kFamilyBF16>, "bf16", 12, 2}},
    {kQ8_0, {gemm_of<kQ8_0, panel_q8_0, kFamilyQ8>, "q8", 7, 1}},
    {kQ4_0, {gemm_of<kQ4_0, panel_s8_32<18, s8_q4_0>, kFamilyQ8>, "q8", 9, 1}},
    {kIQ4_NL, {gemm_of<kIQ4_NL, panel_s8_32<18, s8_iq4_nl>, kFamilyQ8>, "q8", 9, 1}},
    {kQ5_0, {gemm_of<kQ5_0, panel_s8_32<22, s8_q5_0>, kFamilyQ8>, "q8", 10, 1}},
    {kQ4_K, {gemm_of<kQ4_K, panel_kquant<144, Q4KTab, panel_q4_k, &Panel::q4k>, kFamilyQ4K>, "q4k", 9, 1}},
    {kQ5_K, {gemm_of<kQ5_K, panel_kquant<176, Q4KTab, panel_q5_k, &Panel::q4k>, kFamilyQ4K>, "q4k", 9, 1}},
    {kQ6_K, {gemm_of<kQ6_K, panel_kquant<210, Q6KTab, panel_q6_k, &Panel::q6k>, kFamilyQ6K>, "q6k", 10, 1}},
    {kQ3_K, {gemm_of<kQ3_K, panel_kquant<110, Q6KTab, panel_q3_k, &Panel::q6k>, kFamilyQ6K>, "q6k", 12, 1}},
    {kIQ4_XS, {gemm_of<kIQ4_XS, panel_kquant<136, Q6KTab, panel_iq4_xs, &Panel::q6k>, kFamilyQ6K>, "q6k", 9, 1}},
};

}  // namespace

extern const KernelRegistration kAvx512Gemm = {kIsaAvx512, nullptr, 0, kGemms, sizeof(kGemms) / sizeof(kGemms[0])};

}  // namespace x86
}  // namespace loom
#endif
