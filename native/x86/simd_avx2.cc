// SimdOps for AVX2 + FMA + F16C (compiled with -mavx2 -mfma -mf16c; called only when the
// CPU has them). No STL here: see half.h on inline functions and mixed -m flags.
#include <immintrin.h>

#include "../attention-head.h"
#include "../half.h"
#include "../kv-type.h"
#include "../simd.h"
#include "../vec-math.h"

namespace loom {
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256 load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

// e^x as vec-math.h's vexp (Cephes polynomial), 8 lanes
inline __m256 exp8(__m256 x) {
  x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.0f)), _mm256_set1_ps(-87.33654f));
  const __m256 fn = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(fn, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(fn, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 er = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i n = _mm256_cvtps_epi32(fn);
  const __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(er, scale);
}

inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return load_f16(p); }
// 8 values of one q8_0 block, d · q
inline __m256 load8(Q8Ptr p) {
  const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p.quants())));
  return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(p.scale_bits())), _mm256_cvtepi32_ps(q));
}
// 8 values of one q4_0 block: low or high nibbles of 8 of its bytes, d · (q − 8)
inline __m256 load8(Q4Ptr p) {
  __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p.bytes()));
  if (p.high()) b = _mm_srli_epi16(b, 4);
  const __m256i q = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_and_si128(b, _mm_set1_epi8(15))), _mm256_set1_epi32(8));
  return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(p.scale_bits())), _mm256_cvtepi32_ps(q));
}

// (Σa, Σb, Σc, Σd) of four vectors
inline __m128 reduce4(__m256 a, __m256 b, __m256 c, __m256 d) {
  // per 128-bit half: (a, b, c, d) partial sums, then the halves added
  const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

// NV·8 columns of acc += Σ_j w[j]·v_j, the sums in registers (as axpy per key, same order)
template <int NV, class P>
void accumulate_cols(float* acc, const float* w, P v, int64_t stride, int n) {
  __m256 a[NV];
  for (int c = 0; c < NV; c++) a[c] = _mm256_loadu_ps(acc + 8 * c);
  for (int j = 0; j < n; j++) {
    const __m256 wv = _mm256_set1_ps(w[j]);
    for (int c = 0; c < NV; c++) a[c] = _mm256_fmadd_ps(wv, load8(v + j * stride + 8 * c), a[c]);
  }
  for (int c = 0; c < NV; c++) _mm256_storeu_ps(acc + 8 * c, a[c]);
}

struct Avx2Ops : PerKeyOps<Avx2Ops>, HeadLoopOps<Avx2Ops> {
  // head_dim a multiple of 8: keys 4 at a time, sharing each q load and one horizontal sum
  // (a key at a time, the sum cost as much as the products); other sizes key by key
  template <class P>
  static void scores(const float* q, P k, int64_t stride, int n, int d, float scale, float* out) {
    if (d % 8 != 0) return PerKeyOps<Avx2Ops>::scores(q, k, stride, n, d, scale, out);
    const __m128 sv = _mm_set1_ps(scale);
    int j = 0;
    for (; j + 4 <= n; j += 4) {
      P k0 = k + j * stride;
      __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
      for (int i = 0; i < d; i += 8) {
        const __m256 qv = _mm256_loadu_ps(q + i);
        s0 = _mm256_fmadd_ps(qv, load8(k0 + i), s0);
        s1 = _mm256_fmadd_ps(qv, load8(k0 + stride + i), s1);
        s2 = _mm256_fmadd_ps(qv, load8(k0 + 2 * stride + i), s2);
        s3 = _mm256_fmadd_ps(qv, load8(k0 + 3 * stride + i), s3);
      }
      _mm_storeu_ps(out + j, _mm_mul_ps(reduce4(s0, s1, s2, s3), sv));
    }
    for (; j < n; j++) out[j] = dot(q, k + j * stride, d) * scale;
  }
  // head_dim a multiple of 8: 64 columns at a time with their sums in registers, instead of
  // loading and storing the accumulator once a key
  template <class P>
  static void accumulate(float* acc, const float* w, P v, int64_t stride, int n, int d) {
    if (d % 8 != 0) return PerKeyOps<Avx2Ops>::accumulate(acc, w, v, stride, n, d);
    for (int c = 0; c < d; c += 64) {
      switch ((d - c < 64 ? d - c : 64) / 8) {
        case 1: accumulate_cols<1>(acc + c, w, v + c, stride, n); break;
        case 2: accumulate_cols<2>(acc + c, w, v + c, stride, n); break;
        case 3: accumulate_cols<3>(acc + c, w, v + c, stride, n); break;
        case 4: accumulate_cols<4>(acc + c, w, v + c, stride, n); break;
        case 5: accumulate_cols<5>(acc + c, w, v + c, stride, n); break;
        case 6: accumulate_cols<6>(acc + c, w, v + c, stride, n); break;
        case 7: accumulate_cols<7>(acc + c, w, v + c, stride, n); break;
        default: accumulate_cols<8>(acc + c, w, v + c, stride, n); break;
      }
    }
  }
  static float dot(const float* q, const float* k, int d) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= d; i += 16) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(k + i + 8), a1);
    }
    for (; i + 8 <= d; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), a0);
    float sum = hsum(_mm256_add_ps(a0, a1));
    for (; i < d; i++) sum += q[i] * k[i];
    return sum;
  }
  static float dot(const float* q, const uint16_t* k, int d) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= d; i += 16) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load_f16(k + i), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), load_f16(k + i + 8), a1);
    }
    for (; i + 8 <= d; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load_f16(k + i), a0);
    float sum = hsum(_mm256_add_ps(a0, a1));
    for (; i < d; i++) sum += q[i] * f16_to_f32(k[i]);
    return sum;
  }
  // q8_0 and q4_0 rows (whole blocks of 32: no tails)
  template <class P>
  static float dot_blocks(const float* q, P k, int d) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int i = 0; i < d; i += 16) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8(k + i), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), load8(k + i + 8), a1);
    }
    return hsum(_mm256_add_ps(a0, a1));
  }
  static void axpy(float* acc, float w, const float* v, int d) {
    const __m256 wv = _mm256_set1_ps(w);
    int i = 0;
    for (; i + 8 <= d; i += 8) _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(wv, _mm256_loadu_ps(v + i), _mm256_loadu_ps(acc + i)));
    for (; i < d; i++) acc[i] += w * v[i];
  }
  static void axpy(float* acc, float w, const uint16_t* v, int d) {
    const __m256 wv = _mm256_set1_ps(w);
    int i = 0;
    for (; i + 8 <= d; i += 8) _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(wv, load_f16(v + i), _mm256_loadu_ps(acc + i)));
    for (; i < d; i++) acc[i] += w * f16_to_f32(v[i]);
  }
  static float dot(const float* q, Q8Ptr k, int d) { return dot_blocks(q, k, d); }
  static float dot(const float* q, Q4Ptr k, int d) { return dot_blocks(q, k, d); }
  template <class P>
  static void axpy_blocks(float* acc, float w, P v, int d) {
    const __m256 wv = _mm256_set1_ps(w);
    for (int i = 0; i < d; i += 8) _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(wv, load8(v + i), _mm256_loadu_ps(acc + i)));
  }
  static void axpy(float* acc, float w, Q8Ptr v, int d) { axpy_blocks(acc, w, v, d); }
  static void axpy(float* acc, float w, Q4Ptr v, int d) { axpy_blocks(acc, w, v, d); }
  static float max_of(const float* x, int n) {
    if (n < 8) return loom::max_of(x, n);
    __m256 m = _mm256_loadu_ps(x);
    int i = 8;
    for (; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    float r = _mm_cvtss_f32(s);
    for (; i < n; i++) r = x[i] > r ? x[i] : r;
    return r;
  }
  static float exp_shift_sum(float* x, int n, float max) {
    const __m256 mv = _mm256_set1_ps(max);
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
      const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv));
      _mm256_storeu_ps(x + i, e);
      acc = _mm256_add_ps(acc, e);
    }
    float sum = hsum(acc);
    for (; i < n; i++) sum += (x[i] = vexp(x[i] - max));
    return sum;
  }
  static void round_f16(float* x, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
    for (; i < n; i++) x[i] = round_to_f16(x[i]);
  }
};

float max_avx2(const float* x, int n) { return Avx2Ops::max_of(x, n); }

float exp_shift_sum_avx2(float* x, int n, float max) { return Avx2Ops::exp_shift_sum(x, n, max); }

void silu_mul_avx2(float* out, const float* gate, const float* up, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), g))));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
  }
  for (; i < n; i++) out[i] = gate[i] / (1.0f + vexp(-gate[i])) * up[i];
}

// 8 at a time as the AVX-512 version; the tail one at a time
void gelu_table_mul_avx2(float* out, const float* gate, const float* up, int64_t n, const uint16_t* table) {
  const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
  const int* words = reinterpret_cast<const int*>(table);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(gate + i);
    const __m256i idx = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    const __m256i w = _mm256_and_si256(_mm256_i32gather_epi32(words, idx, 2), _mm256_set1_epi32(0xffff));
    // the 8 low halves in order: pack (lanes 0-3 | 4-7 per 128) and take qwords 0 and 2
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(w, w), 0x08);
    __m256 g = _mm256_cvtph_ps(_mm256_castsi256_si128(packed));
    g = _mm256_blendv_ps(g, v, _mm256_cmp_ps(v, hi, _CMP_GE_OQ));
    g = _mm256_blendv_ps(g, _mm256_setzero_ps(), _mm256_cmp_ps(v, lo, _CMP_LE_OQ));
    if (up) g = _mm256_mul_ps(g, _mm256_loadu_ps(up + i));
    _mm256_storeu_ps(out + i, g);
  }
  for (; i < n; i++) {
    const float g = gelu_from_table(gate[i], table);
    out[i] = up ? g * up[i] : g;
  }
}

// as argmax_portable, 8 lanes (max(x, acc) keeps acc where x is NaN); the tail one at a time
int64_t argmax_avx2(const float* x, int64_t n) {
  __m256 acc = _mm256_set1_ps(x[0]);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_max_ps(_mm256_loadu_ps(x + i), acc);
  alignas(32) float lane[8];
  _mm256_store_ps(lane, acc);
  float best = x[0];
  for (int l = 0; l < 8; l++) best = lane[l] > best ? lane[l] : best;
  for (; i < n; i++) best = x[i] > best ? x[i] : best;
  const __m256 bv = _mm256_set1_ps(best);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const int eq = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + j), bv, _CMP_EQ_OQ));
    if (eq) return j + __builtin_ctz(eq);
  }
  for (; j < n; j++)
    if (x[j] == best) return j;
  return 0;  // only NaNs
}

void f32_to_f16_avx2(uint16_t* out, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++) out[i] = f32_to_f16(x[i]);
}

// AttendTokens (simd.h) on AVX2: a job's up to 16 tokens in one pass over the head's K and V,
// lanes = tokens (two vectors of 8), both products in the shape of the GEMM's micro-kernel
// (x86/avx2/gemm.cc: a broadcast meets both vectors, 12 FMA chains). Scores s[p] = scale ·
// Σ_i q^T[i] · k_p[i], 6 keys at a time, their maximum kept on the way; e^(s − max) per lane;
// out^T[c] = Σ_p e[p] · v_p[c] / Σ_p e[p], 6 dimensions at a time over chunks of positions
// whose V rows stay in L1. Positions are visited block by block (a block's rows of one head lie
// d apart): no row address is divided out of its position. One bge-small head (d 32) of 512
// tokens, one thread: 10.7 ms → 6.8 ms (19 → 31 G multiply-adds a second; d 64: 20 → 36 G).

// fn(rows, j0, len) for each run of positions [p0, p1) within one block: position a.first + j0 + j
// at rows + j·d
template <typename Fn>
inline void for_each_block_run(const AttendTokens& a, const float* base, int p0, int p1, Fn&& fn) {
  const int d = a.head_dim, bs = a.block_size;
  for (int p = p0; p < p1;) {
    const int in_block = p % bs, len = bs - in_block < p1 - p ? bs - in_block : p1 - p;
    fn(base + a.blocks[p / bs] * a.block_stride + a.head_offset + static_cast<int64_t>(in_block) * d, p - a.first, len);
    p += len;
  }
}

// s[16·r + lane] for the KG keys at kr (d apart), tokens' queries qt [d][16]; mx: the running maximum
template <int KG>
inline void score_keys(const float* qt, int d, const float* kr, __m256 sc, float* s, __m256* mx) {
  __m256 acc[KG][2];
  _Pragma("GCC unroll 6") for (int r = 0; r < KG; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int i = 0; i < d; i++) {
    const __m256 q0 = _mm256_loadu_ps(qt + 16 * i), q1 = _mm256_loadu_ps(qt + 16 * i + 8);
    _Pragma("GCC unroll 6") for (int r = 0; r < KG; r++) {
      const __m256 b = _mm256_broadcast_ss(kr + r * d + i);
      acc[r][0] = _mm256_fmadd_ps(q0, b, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(q1, b, acc[r][1]);
    }
  }
  _Pragma("GCC unroll 6") for (int r = 0; r < KG; r++) _Pragma("GCC unroll 16") for (int h = 0; h < 2; h++) {
    const __m256 v = _mm256_mul_ps(acc[r][h], sc);
    _mm256_storeu_ps(s + 16 * r + 8 * h, v);
    mx[h] = _mm256_max_ps(mx[h], v);
  }
}

// tile[16·c + lane] (+)= Σ_{p in [p0, p1)} e[p][lane] · v_p[c] for c in [c0, c0 + C): the GEMM
// micro-kernel's shape (x86/avx2/gemm.cc), tokens for rows, positions for K, dimensions for outputs
template <int C>
inline void weigh_values(const AttendTokens& a, const float* e, float* tile, int c0, int p0, int p1, bool first) {
  const int d = a.head_dim;
  __m256 acc[C][2];
  _Pragma("GCC unroll 16") for (int c = 0; c < C; c++) _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
    acc[c][h] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(tile + 16 * (c0 + c) + 8 * h);
  for_each_block_run(a, a.v, p0, p1, [&](const float* rows, int j0, int len) {
    const float* vr = rows + c0;
    const float* ej = e + 16 * j0;
    for (int j = 0; j < len; j++, vr += d, ej += 16) {
      const __m256 e0 = _mm256_loadu_ps(ej), e1 = _mm256_loadu_ps(ej + 8);
      _Pragma("GCC unroll 16") for (int c = 0; c < C; c++) {
        const __m256 b = _mm256_broadcast_ss(vr + c);
        acc[c][0] = _mm256_fmadd_ps(e0, b, acc[c][0]);
        acc[c][1] = _mm256_fmadd_ps(e1, b, acc[c][1]);
      }
    }
  });
  _Pragma("GCC unroll 16") for (int c = 0; c < C; c++) _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
    _mm256_storeu_ps(tile + 16 * (c0 + c) + 8 * h, acc[c][h]);
}

void attend_tokens_avx2(const AttendTokens& a) {
  const int d = a.head_dim, span = a.ctx - a.first, n = a.n;
  float* const qt = a.scratch;                             // [d][16]
  float* const s = qt + 16 * d;                            // [span][16]: scores, then e
  float* const inv = s + 16 * static_cast<int64_t>(span);  // [16]
  for (int i = 0; i < d; i++)
    for (int t = 0; t < 16; t++) qt[16 * i + t] = t < n ? a.q[t * a.row_stride + i] : 0.0f;
  const __m256 sc = _mm256_set1_ps(a.scale);
  __m256 mx[2] = {_mm256_set1_ps(-__builtin_inff()), _mm256_set1_ps(-__builtin_inff())};
  for_each_block_run(a, a.k, a.first, a.ctx, [&](const float* rows, int j0, int len) {
    int j = 0;
    for (; j + 6 <= len; j += 6) score_keys<6>(qt, d, rows + static_cast<int64_t>(j) * d, sc, s + 16 * (j0 + j), mx);
    const float* kr = rows + static_cast<int64_t>(j) * d;
    float* sj = s + 16 * (j0 + j);
    switch (len - j) {
      case 5: score_keys<5>(qt, d, kr, sc, sj, mx); break;
      case 4: score_keys<4>(qt, d, kr, sc, sj, mx); break;
      case 3: score_keys<3>(qt, d, kr, sc, sj, mx); break;
      case 2: score_keys<2>(qt, d, kr, sc, sj, mx); break;
      case 1: score_keys<1>(qt, d, kr, sc, sj, mx); break;
      default: break;
    }
  });
  __m256 sum[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int j = 0; j < span; j++)
    _Pragma("GCC unroll 16") for (int h = 0; h < 2; h++) {
      const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + 16 * j + 8 * h), mx[h]));
      _mm256_storeu_ps(s + 16 * j + 8 * h, e);
      sum[h] = _mm256_add_ps(sum[h], e);
    }
  _Pragma("GCC unroll 16") for (int h = 0; h < 2; h++) _mm256_storeu_ps(inv + 8 * h, _mm256_div_ps(_mm256_set1_ps(1.0f), sum[h]));
  // Positions in chunks whose V rows (16 KB) stay in L1 while every 6 dimensions pass over
  // them; the sums wait in qt's place ([d][16]), then go to the tokens' rows scaled by 1 / Σ e.
  float* const tile = qt;
  const int chunk = 4096 / d > 16 ? 4096 / d : 16;
  for (int p0 = a.first; p0 < a.ctx; p0 += chunk) {
    const int p1 = a.ctx - p0 < chunk ? a.ctx : p0 + chunk;
    const bool first = p0 == a.first;
    int c0 = 0;
    for (; c0 + 6 <= d; c0 += 6) weigh_values<6>(a, s, tile, c0, p0, p1, first);
    switch (d - c0) {
      case 5: weigh_values<5>(a, s, tile, c0, p0, p1, first); break;
      case 4: weigh_values<4>(a, s, tile, c0, p0, p1, first); break;
      case 3: weigh_values<3>(a, s, tile, c0, p0, p1, first); break;
      case 2: weigh_values<2>(a, s, tile, c0, p0, p1, first); break;
      case 1: weigh_values<1>(a, s, tile, c0, p0, p1, first); break;
      default: break;
    }
  }
  for (int t = 0; t < n; t++) {
    float* o = a.out + t * a.row_stride;
    for (int c = 0; c < d; c++) o[c] = tile[16 * c + t] * inv[t];
  }
}

void attend_scores_avx2(const AttendHead& job, int p0, int p1) { attend_scores_impl<Avx2Ops>(job, p0, p1); }
void attend_values_avx2(const AttendHead& job, int p0, int p1, const float* factor, float* out) {
  attend_values_impl<Avx2Ops>(job, p0, p1, factor, out);
}

}  // namespace

namespace x86 {
const SimdOps kAvx2Ops = {"avx2", max_avx2, exp_shift_sum_avx2, silu_mul_avx2, gelu_table_mul_avx2, argmax_avx2, f32_to_f16_avx2, attend_scores_avx2, attend_values_avx2, false, attend_tokens_avx2};
}  // namespace x86

}  // namespace loom
