// The gated delta rule's Ops (recurrent-impl.h) for AVX-512 (compiled with the AVX-512
// flags, called only when the CPU has them). Tails use masked loads and stores. No STL here:
// see half.h.
#include <immintrin.h>

#include "../recurrent-impl.h"

namespace loom {
namespace {

inline __mmask16 tail_mask(int left) { return static_cast<__mmask16>(left >= 16 ? 0xffffu : (1u << left) - 1u); }

// One token on rows j of an S = 16·NV state: the row stays in registers between its two dots.
template <int NV>
void step_nv(float* m, const float* k, const float* q, const float* v, float decay, float beta, float scale, float* out, int S) {
  __m512 kv[NV];
  for (int c = 0; c < NV; c++) kv[c] = _mm512_loadu_ps(k + 16 * c);
  const __m512 dv = _mm512_set1_ps(decay);
  for (int j = 0; j < S; j++) {
    float* row = m + static_cast<int64_t>(j) * S;
    __m512 r[NV];
    __m512 acc = _mm512_setzero_ps();
    for (int c = 0; c < NV; c++) {
      r[c] = _mm512_mul_ps(_mm512_loadu_ps(row + 16 * c), dv);
      acc = _mm512_fmadd_ps(r[c], kv[c], acc);
    }
    const __m512 delta = _mm512_set1_ps((v[j] - _mm512_reduce_add_ps(acc)) * beta);
    __m512 acc2 = _mm512_setzero_ps();
    for (int c = 0; c < NV; c++) {
      r[c] = _mm512_fmadd_ps(kv[c], delta, r[c]);
      acc2 = _mm512_fmadd_ps(r[c], _mm512_loadu_ps(q + 16 * c), acc2);
      _mm512_storeu_ps(row + 16 * c, r[c]);
    }
    out[j] = _mm512_reduce_add_ps(acc2) * scale;
  }
}

// Any S: two passes over each row (it is in L1 for the second)
void step_any(float* m, const float* k, const float* q, const float* v, float decay, float beta, float scale, float* out, int S) {
  const __m512 dv = _mm512_set1_ps(decay);
  for (int j = 0; j < S; j++) {
    float* row = m + static_cast<int64_t>(j) * S;
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < S; i += 16) {
      const __mmask16 mk = tail_mask(S - i);
      const __m512 r = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, row + i), dv);
      acc = _mm512_fmadd_ps(r, _mm512_maskz_loadu_ps(mk, k + i), acc);
      _mm512_mask_storeu_ps(row + i, mk, r);
    }
    const __m512 delta = _mm512_set1_ps((v[j] - _mm512_reduce_add_ps(acc)) * beta);
    __m512 acc2 = _mm512_setzero_ps();
    for (int i = 0; i < S; i += 16) {
      const __mmask16 mk = tail_mask(S - i);
      const __m512 r = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, k + i), delta, _mm512_maskz_loadu_ps(mk, row + i));
      acc2 = _mm512_fmadd_ps(r, _mm512_maskz_loadu_ps(mk, q + i), acc2);
      _mm512_mask_storeu_ps(row + i, mk, r);
    }
    out[j] = _mm512_reduce_add_ps(acc2) * scale;
  }
}

// R rows × up to 16·NV ≤ 64 columns of c: R·NV accumulators (named, so they stay in
// registers), each b row loaded once for the R rows
template <int R, int NV>
void gemm_block(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb, int inner, int cols, float c_scale) {
  const __mmask16 m0 = tail_mask(cols), m1 = cols > 16 ? tail_mask(cols - 16) : 0;
  const __mmask16 m2 = cols > 32 ? tail_mask(cols - 32) : 0, m3 = cols > 48 ? tail_mask(cols - 48) : 0;
  const float* a0 = a;
  const float* a1 = a + (R > 1 ? lda : 0);
  const float* a2 = a + (R > 2 ? 2 * lda : 0);
  const float* a3 = a + (R > 3 ? 3 * lda : 0);
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00;
  __m512 c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00;
  for (int y = 0; y < inner; y++) {
    const float* by = b + y * ldb;
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, by);
    const __m512 b1 = NV > 1 ? _mm512_maskz_loadu_ps(m1, by + 16) : b0;
    const __m512 b2 = NV > 2 ? _mm512_maskz_loadu_ps(m2, by + 32) : b0;
    const __m512 b3 = NV > 3 ? _mm512_maskz_loadu_ps(m3, by + 48) : b0;
    __m512 w = _mm512_set1_ps(a0[y]);
    c00 = _mm512_fmadd_ps(w, b0, c00);
    if (NV > 1) c01 = _mm512_fmadd_ps(w, b1, c01);
    if (NV > 2) c02 = _mm512_fmadd_ps(w, b2, c02);
    if (NV > 3) c03 = _mm512_fmadd_ps(w, b3, c03);
    if (R > 1) {
      w = _mm512_set1_ps(a1[y]);
      c10 = _mm512_fmadd_ps(w, b0, c10);
    if (NV > 1) c11 = _mm512_fmadd_ps(w, b1, c11);
    if (NV > 2) c12 = _mm512_fmadd_ps(w, b2, c12);
    if (NV > 3) c13 = _mm512_fmadd_ps(w, b3, c13);
    }
    if (R > 2) {
      w = _mm512_set1_ps(a2[y]);
      c20 = _mm512_fmadd_ps(w, b0, c20);
    if (NV > 1) c21 = _mm512_fmadd_ps(w, b1, c21);
    if (NV > 2) c22 = _mm512_fmadd_ps(w, b2, c22);
    if (NV > 3) c23 = _mm512_fmadd_ps(w, b3, c23);
    }
    if (R > 3) {
      w = _mm512_set1_ps(a3[y]);
      c30 = _mm512_fmadd_ps(w, b0, c30);
    if (NV > 1) c31 = _mm512_fmadd_ps(w, b1, c31);
    if (NV > 2) c32 = _mm512_fmadd_ps(w, b2, c32);
    if (NV > 3) c33 = _mm512_fmadd_ps(w, b3, c33);
    }
  }
  const __m512 cs = _mm512_set1_ps(c_scale);
  const auto put = [&](float* row, __m512 x0, __m512 x1, __m512 x2, __m512 x3) {
    if (c_scale != 0.0f) {
      x0 = _mm512_fmadd_ps(cs, _mm512_maskz_loadu_ps(m0, row), x0);
      if (NV > 1) x1 = _mm512_fmadd_ps(cs, _mm512_maskz_loadu_ps(m1, row + 16), x1);
      if (NV > 2) x2 = _mm512_fmadd_ps(cs, _mm512_maskz_loadu_ps(m2, row + 32), x2);
      if (NV > 3) x3 = _mm512_fmadd_ps(cs, _mm512_maskz_loadu_ps(m3, row + 48), x3);
    }
    _mm512_mask_storeu_ps(row, m0, x0);
    if (NV > 1) _mm512_mask_storeu_ps(row + 16, m1, x1);
    if (NV > 2) _mm512_mask_storeu_ps(row + 32, m2, x2);
    if (NV > 3) _mm512_mask_storeu_ps(row + 48, m3, x3);
  };
  put(c, c00, c01, c02, c03);
  if (R > 1) put(c + ldc, c10, c11, c12, c13);
  if (R > 2) put(c + 2 * ldc, c20, c21, c22, c23);
  if (R > 3) put(c + 3 * ldc, c30, c31, c32, c33);
}

struct Avx512Ops {
  // S = 128, one thread, CPU time per token of 16 heads: a chunk of 8 tokens costs 39 µs
  // against 33 token by token, 12 costs 28 against 33, 64 costs 29 against 33
  static constexpr int kChunkMin = 12;
  static void step(float* m, const float* k, const float* q, const float* v, float decay, float beta, float scale, float* out, int S) {
    if (S == 128) return step_nv<8>(m, k, q, v, decay, beta, scale, out, S);
    if (S == 64) return step_nv<4>(m, k, q, v, decay, beta, scale, out, S);
    step_any(m, k, q, v, decay, beta, scale, out, S);
  }
  static void gemm(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb, int rows, int inner, int cols,
                   float c_scale) {
    for (int x = 0; x < cols; x += 64) {
      const int w = cols - x < 64 ? cols - x : 64;
      switch ((w + 15) / 16) {
        case 1: block_rows<1>(c + x, ldc, a, lda, b + x, ldb, rows, inner, w, c_scale); break;
        case 2: block_rows<2>(c + x, ldc, a, lda, b + x, ldb, rows, inner, w, c_scale); break;
        case 3: block_rows<3>(c + x, ldc, a, lda, b + x, ldb, rows, inner, w, c_scale); break;
        default: block_rows<4>(c + x, ldc, a, lda, b + x, ldb, rows, inner, w, c_scale); break;
      }
    }
  }
  template <int NV>
  static void block_rows(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb, int rows, int inner, int w,
                         float c_scale) {
    int r = 0;
    for (; r + 4 <= rows; r += 4) gemm_block<4, NV>(c + r * ldc, ldc, a + r * lda, lda, b, ldb, inner, w, c_scale);
    for (; r < rows; r++) gemm_block<1, NV>(c + r * ldc, ldc, a + r * lda, lda, b, ldb, inner, w, c_scale);
  }
};

void delta_head_avx512(const DeltaHead& h) { delta_head<Avx512Ops>(h); }

}  // namespace

namespace x86 {
const RecurrentOps kAvx512Recurrent = {"avx512", delta_head_avx512};
}  // namespace x86

}  // namespace loom
