// SimdOps for AVX-512 (F/BW/VL/DQ; compiled with the AVX-512 flags, called only when the
// CPU has them). Row tails use masked loads and stores. No STL here: see half.h.
#include <immintrin.h>

#include "../attention-head.h"
#include "../half.h"
#include "../kv-type.h"
#include "../simd.h"

namespace loom {
namespace {

inline __mmask16 tail_mask(int left) { return static_cast<__mmask16>(left >= 16 ? 0xffffu : (1u << left) - 1u); }

inline __m512 load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }

inline __m512 load_f16_masked(const uint16_t* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }

// e^x as vec-math.h's vexp (Cephes polynomial), 16 lanes; 2^n by scalef
inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.0f)), _mm512_set1_ps(-87.33654f));
  const __m512 fn = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 er = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(er, fn);
}

inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t* p) { return load_f16(p); }
inline __m512 load16_masked(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load16_masked(const uint16_t* p, __mmask16 m) { return load_f16_masked(p, m); }
// 16 values of one q8_0 block, d · q
inline __m512 load16(Q8Ptr p) {
  const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p.quants())));
  return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(p.scale_bits())), _mm512_cvtepi32_ps(q));
}
inline __m512 load16_masked(Q8Ptr p, __mmask16 m) {
  const __m512i q = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p.quants()));
  return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(p.scale_bits())), _mm512_cvtepi32_ps(q));
}
// 16 values of one q4_0 block: the low or high nibbles of its 16 bytes, d · (q − 8)
inline __m512 q4_values(Q4Ptr p, __m128i bytes) {
  if (p.high()) bytes = _mm_srli_epi16(bytes, 4);
  const __m512i q = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(bytes, _mm_set1_epi8(15))), _mm512_set1_epi32(8));
  return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(p.scale_bits())), _mm512_cvtepi32_ps(q));
}
inline __m512 load16(Q4Ptr p) { return q4_values(p, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p.bytes()))); }
inline __m512 load16_masked(Q4Ptr p, __mmask16 m) {
  return _mm512_maskz_mov_ps(m, q4_values(p, _mm_maskz_loadu_epi8(m, p.bytes())));
}

// (Σa, Σb, Σc, Σd) of four vectors
inline __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));  // per 128: a02 b02 a13 b13
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  const __m512 abcd = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)), _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(abcd), _mm512_extractf32x8_ps(abcd, 1));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// NV = head_dim / 16 vectors: q and the accumulators stay in registers.
template <int NV, class P>
void scores_nv(const float* q, P k, int64_t stride, int n, float scale, float* out) {
  __m512 qv[NV];
  for (int c = 0; c < NV; c++) qv[c] = _mm512_loadu_ps(q + 16 * c);
  const __m128 sv = _mm_set1_ps(scale);
  int j = 0;
  for (; j + 4 <= n; j += 4) {
    P k0 = k + j * stride;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (int c = 0; c < NV; c++) {
      s0 = _mm512_fmadd_ps(qv[c], load16(k0 + 16 * c), s0);
      s1 = _mm512_fmadd_ps(qv[c], load16(k0 + stride + 16 * c), s1);
      s2 = _mm512_fmadd_ps(qv[c], load16(k0 + 2 * stride + 16 * c), s2);
      s3 = _mm512_fmadd_ps(qv[c], load16(k0 + 3 * stride + 16 * c), s3);
    }
    _mm_storeu_ps(out + j, _mm_mul_ps(reduce4(s0, s1, s2, s3), sv));
  }
  for (; j < n; j++) {
    __m512 s = _mm512_setzero_ps();
    for (int c = 0; c < NV; c++) s = _mm512_fmadd_ps(qv[c], load16(k + j * stride + 16 * c), s);
    out[j] = _mm512_reduce_add_ps(s) * scale;
  }
}

// Heads wider than 8 vectors (Gemma's 256, 512): as scores_nv, q read from L1 instead of
// registers, and the same arithmetic (per key, products summed in column order, then reduce4).
// A key at a time with a horizontal sum each cost more than the dot products.
template <class P>
void scores_wide(const float* q, P k, int64_t stride, int n, int d, float scale, float* out) {
  const __m128 sv = _mm_set1_ps(scale);
  int j = 0;
  for (; j + 4 <= n; j += 4) {
    P k0 = k + j * stride;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (int i = 0; i < d; i += 16) {
      const __m512 qv = _mm512_loadu_ps(q + i);
      s0 = _mm512_fmadd_ps(qv, load16(k0 + i), s0);
      s1 = _mm512_fmadd_ps(qv, load16(k0 + stride + i), s1);
      s2 = _mm512_fmadd_ps(qv, load16(k0 + 2 * stride + i), s2);
      s3 = _mm512_fmadd_ps(qv, load16(k0 + 3 * stride + i), s3);
    }
    _mm_storeu_ps(out + j, _mm_mul_ps(reduce4(s0, s1, s2, s3), sv));
  }
  for (; j < n; j++) {
    __m512 s = _mm512_setzero_ps();
    for (int i = 0; i < d; i += 16) s = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), load16(k + j * stride + i), s);
    out[j] = _mm512_reduce_add_ps(s) * scale;
  }
}

// G query heads sharing these keys: each K row is loaded (and widened) once, 4 keys a step,
// and dotted with every head's q (read from L1).
template <int NV, class P>
void scores_heads_nv(const float* q, int G, P k, int64_t stride, int n, float scale, float* out, int64_t out_stride) {
  const __m128 sv = _mm_set1_ps(scale);
  int j = 0;
  for (; j + 4 <= n; j += 4) {
    P k0 = k + j * stride;
    __m512 kv[4][NV];
    for (int i = 0; i < 4; i++)
      for (int c = 0; c < NV; c++) kv[i][c] = load16(k0 + i * stride + 16 * c);
    for (int g = 0; g < G; g++) {
      const float* qg = q + g * 16 * NV;
      __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
      for (int c = 0; c < NV; c++) {
        const __m512 qv = _mm512_loadu_ps(qg + 16 * c);
        s0 = _mm512_fmadd_ps(qv, kv[0][c], s0);
        s1 = _mm512_fmadd_ps(qv, kv[1][c], s1);
        s2 = _mm512_fmadd_ps(qv, kv[2][c], s2);
        s3 = _mm512_fmadd_ps(qv, kv[3][c], s3);
      }
      _mm_storeu_ps(out + g * out_stride + j, _mm_mul_ps(reduce4(s0, s1, s2, s3), sv));
    }
  }
  for (; j < n; j++)
    for (int g = 0; g < G; g++) {
      __m512 s = _mm512_setzero_ps();
      for (int c = 0; c < NV; c++) s = _mm512_fmadd_ps(_mm512_loadu_ps(q + g * 16 * NV + 16 * c), load16(k + j * stride + 16 * c), s);
      out[g * out_stride + j] = _mm512_reduce_add_ps(s) * scale;
    }
}

// GC ≤ 4 heads' accumulators in registers; each V row is loaded (and widened) once for them.
template <int NV, int GC, class P>
void accumulate_heads_nv(float* acc, const float* w, int64_t w_stride, P v, int64_t stride, int n) {
  __m512 a[GC][NV];
  for (int g = 0; g < GC; g++)
    for (int c = 0; c < NV; c++) a[g][c] = _mm512_loadu_ps(acc + g * 16 * NV + 16 * c);
  for (int j = 0; j < n; j++) {
    __m512 vv[NV];
    for (int c = 0; c < NV; c++) vv[c] = load16(v + j * stride + 16 * c);
    for (int g = 0; g < GC; g++) {
      const __m512 wv = _mm512_set1_ps(w[g * w_stride + j]);
      for (int c = 0; c < NV; c++) a[g][c] = _mm512_fmadd_ps(wv, vv[c], a[g][c]);
    }
  }
  for (int g = 0; g < GC; g++)
    for (int c = 0; c < NV; c++) _mm512_storeu_ps(acc + g * 16 * NV + 16 * c, a[g][c]);
}

template <int NV, class P>
void accumulate_heads_nv(float* acc, int G, const float* w, int64_t w_stride, P v, int64_t stride, int n) {
  for (int g = 0; g < G; g += 4) {
    float* ag = acc + g * 16 * NV;
    const float* wg = w + g * w_stride;
    switch (G - g < 4 ? G - g : 4) {
      case 1: accumulate_heads_nv<NV, 1>(ag, wg, w_stride, v, stride, n); break;
      case 2: accumulate_heads_nv<NV, 2>(ag, wg, w_stride, v, stride, n); break;
      case 3: accumulate_heads_nv<NV, 3>(ag, wg, w_stride, v, stride, n); break;
      default: accumulate_heads_nv<NV, 4>(ag, wg, w_stride, v, stride, n); break;
    }
  }
}

// One head's acc += Σ_j w[j]·v_j. A narrow head has too few accumulators to hide the FMA
// latency (head_dim 32: 2 chains, each FMA waiting on the one before), so keys are dealt
// round robin to CH = 8/NV chains (at most 4), summed into the first at the end of the call:
// the order depends on the call's keys (one KV block's), never on the batch.
template <int NV, class P>
void accumulate_nv(float* acc, const float* w, P v, int64_t stride, int n) {
  constexpr int CH = NV >= 8 ? 1 : (8 / NV > 4 ? 4 : 8 / NV);
  __m512 a[CH][NV];
  for (int c = 0; c < NV; c++) a[0][c] = _mm512_loadu_ps(acc + 16 * c);
  _Pragma("GCC unroll 4") for (int h = 1; h < CH; h++)
    for (int c = 0; c < NV; c++) a[h][c] = _mm512_setzero_ps();
  int j = 0;
  for (; j + CH <= n; j += CH)
    _Pragma("GCC unroll 4") for (int h = 0; h < CH; h++) {
      const __m512 wv = _mm512_set1_ps(w[j + h]);
      for (int c = 0; c < NV; c++) a[h][c] = _mm512_fmadd_ps(wv, load16(v + (j + h) * stride + 16 * c), a[h][c]);
    }
  for (; j < n; j++) {
    const __m512 wv = _mm512_set1_ps(w[j]);
    for (int c = 0; c < NV; c++) a[0][c] = _mm512_fmadd_ps(wv, load16(v + j * stride + 16 * c), a[0][c]);
  }
  _Pragma("GCC unroll 4") for (int h = 1; h < CH; h++)
    for (int c = 0; c < NV; c++) a[0][c] = _mm512_add_ps(a[0][c], a[h][c]);
  for (int c = 0; c < NV; c++) _mm512_storeu_ps(acc + 16 * c, a[0][c]);
}

struct Avx512Ops : HeadLoopOps<Avx512Ops> {
  // any d: masked tails, one key at a time
  template <class P>
  static float dot(const float* q, P k, int d) {
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < d; i += 16) {
      const __mmask16 m = tail_mask(d - i);
      acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), load16_masked(k + i, m), acc);
    }
    return _mm512_reduce_add_ps(acc);
  }
  template <class P>
  static void axpy(float* acc, float w, P v, int d) {
    const __m512 wv = _mm512_set1_ps(w);
    for (int i = 0; i < d; i += 16) {
      const __mmask16 m = tail_mask(d - i);
      _mm512_mask_storeu_ps(acc + i, m, _mm512_fmadd_ps(wv, load16_masked(v + i, m), _mm512_maskz_loadu_ps(m, acc + i)));
    }
  }
  template <class P>
  static void scores(const float* q, P k, int64_t stride, int n, int d, float scale, float* out) {
    switch (d % 16 == 0 ? d / 16 : 0) {
      case 1: return scores_nv<1>(q, k, stride, n, scale, out);
      case 2: return scores_nv<2>(q, k, stride, n, scale, out);
      case 3: return scores_nv<3>(q, k, stride, n, scale, out);
      case 4: return scores_nv<4>(q, k, stride, n, scale, out);
      case 5: return scores_nv<5>(q, k, stride, n, scale, out);
      case 6: return scores_nv<6>(q, k, stride, n, scale, out);
      case 7: return scores_nv<7>(q, k, stride, n, scale, out);
      case 8: return scores_nv<8>(q, k, stride, n, scale, out);
      default:
        if (d % 16 == 0) return scores_wide(q, k, stride, n, d, scale, out);
        for (int j = 0; j < n; j++) out[j] = dot(q, k + j * stride, d) * scale;
    }
  }
  template <class P>
  static void accumulate(float* acc, const float* w, P v, int64_t stride, int n, int d) {
    switch (d % 16 == 0 ? d / 16 : 0) {
      case 1: return accumulate_nv<1>(acc, w, v, stride, n);
      case 2: return accumulate_nv<2>(acc, w, v, stride, n);
      case 3: return accumulate_nv<3>(acc, w, v, stride, n);
      case 4: return accumulate_nv<4>(acc, w, v, stride, n);
      case 5: return accumulate_nv<5>(acc, w, v, stride, n);
      case 6: return accumulate_nv<6>(acc, w, v, stride, n);
      case 7: return accumulate_nv<7>(acc, w, v, stride, n);
      case 8: return accumulate_nv<8>(acc, w, v, stride, n);
      default:
        if (d % 16 == 0) {  // wider heads: 128 columns at a time, their sums in registers
          for (int c = 0; c < d; c += 128) accumulate(acc + c, w, v + c, stride, n, d - c < 128 ? d - c : 128);
          return;
        }
        for (int j = 0; j < n; j++) axpy(acc, w[j], v + j * stride, d);
    }
  }
  // head_dim 16..64: every head's work shares each K/V row; wider heads go head by head
  // (their K rows would not stay in registers)
  template <class P>
  static void scores_heads(const float* q, int G, P k, int64_t stride, int n, int d, float scale, float* out,
                           int64_t out_stride) {
    switch (d % 16 == 0 && G > 1 ? d / 16 : 0) {
      case 1: return scores_heads_nv<1>(q, G, k, stride, n, scale, out, out_stride);
      case 2: return scores_heads_nv<2>(q, G, k, stride, n, scale, out, out_stride);
      case 3: return scores_heads_nv<3>(q, G, k, stride, n, scale, out, out_stride);
      case 4: return scores_heads_nv<4>(q, G, k, stride, n, scale, out, out_stride);
      default: return HeadLoopOps::scores_heads(q, G, k, stride, n, d, scale, out, out_stride);
    }
  }
  template <class P>
  static void accumulate_heads(float* acc, int G, const float* w, int64_t w_stride, P v, int64_t stride, int n, int d) {
    switch (d % 16 == 0 && G > 1 ? d / 16 : 0) {
      case 1: return accumulate_heads_nv<1>(acc, G, w, w_stride, v, stride, n);
      case 2: return accumulate_heads_nv<2>(acc, G, w, w_stride, v, stride, n);
      case 3: return accumulate_heads_nv<3>(acc, G, w, w_stride, v, stride, n);
      case 4: return accumulate_heads_nv<4>(acc, G, w, w_stride, v, stride, n);
      default: return HeadLoopOps::accumulate_heads(acc, G, w, w_stride, v, stride, n, d);
    }
  }
  static float max_of(const float* x, int n) {
    __m512 mx = _mm512_set1_ps(x[0]);
    for (int i = 0; i < n; i += 16) mx = _mm512_mask_max_ps(mx, tail_mask(n - i), mx, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
    return _mm512_reduce_max_ps(mx);
  }
  static float exp_shift_sum(float* x, int n, float max) {
    const __m512 mv = _mm512_set1_ps(max);
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < n; i += 16) {
      const __mmask16 m = tail_mask(n - i);
      const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mv));
      _mm512_mask_storeu_ps(x + i, m, e);
      acc = _mm512_mask_add_ps(acc, m, acc, e);
    }
    return _mm512_reduce_add_ps(acc);
  }
  static void round_f16(float* x, int n) {
    for (int i = 0; i < n; i += 16) {
      const __mmask16 m = tail_mask(n - i);
      const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT);
      _mm512_mask_storeu_ps(x + i, m, _mm512_cvtph_ps(h));
    }
  }
};

// AttendTokens (simd.h), lanes = tokens: scores s[p] (16 lanes) = scale · Σ_i q^T[i] · k_p[i],
// 8 keys at a time (8 FMA chains); softmax per lane; out^T[i] = Σ_p w[p] · v_p[i], 16
// dimensions at a time in registers.
void attend_tokens_avx512(const AttendTokens& a) {
  const int d = a.head_dim, span = a.ctx - a.first;
  float* const qt = a.scratch;       // [d][16]
  float* const s = qt + 16 * d;      // [span][16]
  float* const tile = s + 16 * static_cast<int64_t>(span);  // [16][16]
  for (int i = 0; i < d; i++)
    for (int t = 0; t < 16; t++) qt[16 * i + t] = t < a.n ? a.q[t * a.row_stride + i] : 0.0f;
  const auto row = [&](const float* base, int p) {
    return base + a.blocks[p / a.block_size] * a.block_stride + a.head_offset + static_cast<int64_t>(p % a.block_size) * d;
  };
  const __m512 sc = _mm512_set1_ps(a.scale);
  int p = a.first;
  for (; p + 8 <= a.ctx; p += 8) {
    const float* kr[8];
    __m512 acc[8];
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) kr[j] = row(a.k, p + j), acc[j] = _mm512_setzero_ps();
    for (int i = 0; i < d; i++) {
      const __m512 qv = _mm512_loadu_ps(qt + 16 * i);
      _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) acc[j] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[j][i]), acc[j]);
    }
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) _mm512_storeu_ps(s + 16 * (p + j - a.first), _mm512_mul_ps(acc[j], sc));
  }
  for (; p < a.ctx; p++) {
    const float* kr = row(a.k, p);
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < d; i++) acc = _mm512_fmadd_ps(_mm512_loadu_ps(qt + 16 * i), _mm512_set1_ps(kr[i]), acc);
    _mm512_storeu_ps(s + 16 * (p - a.first), _mm512_mul_ps(acc, sc));
  }
  __m512 mx = _mm512_loadu_ps(s);
  for (int j = 1; j < span; j++) mx = _mm512_max_ps(mx, _mm512_loadu_ps(s + 16 * j));
  __m512 sum = _mm512_setzero_ps();
  for (int j = 0; j < span; j++) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(s + 16 * j), mx));
    _mm512_storeu_ps(s + 16 * j, e);
    sum = _mm512_add_ps(sum, e);
  }
  const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.0f), sum);
  for (int j = 0; j < span; j++) _mm512_storeu_ps(s + 16 * j, _mm512_mul_ps(_mm512_loadu_ps(s + 16 * j), inv));
  for (int c = 0; c < d; c += 16) {
    __m512 acc[16];
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) acc[i] = _mm512_setzero_ps();
    for (int j = 0; j < span; j++) {
      const float* vr = row(a.v, a.first + j) + c;
      const __m512 w = _mm512_loadu_ps(s + 16 * j);
      _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) acc[i] = _mm512_fmadd_ps(w, _mm512_set1_ps(vr[i]), acc[i]);
    }
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) _mm512_storeu_ps(tile + 16 * i, acc[i]);
    for (int t = 0; t < a.n; t++)
      for (int i = 0; i < 16; i++) a.out[t * a.row_stride + c + i] = tile[16 * i + t];
  }
}

float max_avx512(const float* x, int n) { return Avx512Ops::max_of(x, n); }

float exp_shift_sum_avx512(float* x, int n, float max) { return Avx512Ops::exp_shift_sum(x, n, max); }

void silu_mul_avx512(float* out, const float* gate, const float* up, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(static_cast<int>(n - i < 16 ? n - i : 16));
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), g))));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

// 16 at a time: round to f16 (as f32_to_f16, to nearest even), gather the table's entries
// (32-bit loads at 2·index, low halves kept), widen back
void gelu_table_mul_avx512(float* out, const float* gate, const float* up, int64_t n, const uint16_t* table) {
  const __m512 lo = _mm512_set1_ps(-10.0f), hi = _mm512_set1_ps(10.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(static_cast<int>(n - i < 16 ? n - i : 16));
    const __m512 v = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512i idx = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    const __m512i words = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, idx, table, 2);
    __m512 g = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(words));
    g = _mm512_mask_mov_ps(g, _mm512_cmp_ps_mask(v, hi, _CMP_GE_OQ), v);
    g = _mm512_mask_mov_ps(g, _mm512_cmp_ps_mask(v, lo, _CMP_LE_OQ), _mm512_setzero_ps());
    if (up) g = _mm512_mul_ps(g, _mm512_maskz_loadu_ps(m, up + i));
    _mm512_mask_storeu_ps(out + i, m, g);
  }
}

// as argmax_portable: max(x, acc) keeps acc where x is NaN (and where both are zeros), the
// lanes are folded in the same order, then a compare finds the first index
int64_t argmax_avx512(const float* x, int64_t n) {
  __m512 acc = _mm512_set1_ps(x[0]);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(static_cast<int>(n - i < 16 ? n - i : 16));
    acc = _mm512_mask_max_ps(acc, m, _mm512_maskz_loadu_ps(m, x + i), acc);
  }
  alignas(64) float lane[16];
  _mm512_store_ps(lane, acc);
  float best = x[0];
  for (int l = 0; l < 16; l++) best = lane[l] > best ? lane[l] : best;
  const __m512 bv = _mm512_set1_ps(best);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(static_cast<int>(n - i < 16 ? n - i : 16));
    const __mmask16 eq = _mm512_mask_cmp_ps_mask(m, _mm512_maskz_loadu_ps(m, x + i), bv, _CMP_EQ_OQ);
    if (eq) return i + __builtin_ctz(eq);
  }
  return 0;  // only NaNs
}

void f32_to_f16_avx512(uint16_t* out, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(static_cast<int>(n - i < 16 ? n - i : 16));
    _mm256_mask_storeu_epi16(out + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT));
  }
}

void attend_scores_avx512(const AttendHead& job, int p0, int p1) { attend_scores_impl<Avx512Ops>(job, p0, p1); }
void attend_values_avx512(const AttendHead& job, int p0, int p1, const float* factor, float* out) {
  attend_values_impl<Avx512Ops>(job, p0, p1, factor, out);
}

}  // namespace

namespace x86 {
const SimdOps kAvx512Ops = {"avx512", max_avx512, exp_shift_sum_avx512, silu_mul_avx512, gelu_table_mul_avx512, argmax_avx512, f32_to_f16_avx512, attend_scores_avx512, attend_values_avx512, true, attend_tokens_avx512};
}  // namespace x86

}  // namespace loom
