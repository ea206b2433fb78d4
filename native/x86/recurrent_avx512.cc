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

// R rows × up to 64 columns of c: 4R accumulators, each b row loaded once for the R rows
template <int R>
void gemm_block(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb, int inner, int cols, float c_scale) {
  __mmask16 mk[4];
  for (int v = 0; v < 4; v++) mk[v] = cols > 16 * v ? tail_mask(cols - 16 * v) : 0;
  __m512 acc[R][4];
  const __m512 cs = _mm512_set1_ps(c_scale);
  for (int r = 0; r < R; r++)
    for (int v = 0; v < 4; v++)
      acc[r][v] = c_scale == 0.0f ? _mm512_setzero_ps() : _mm512_mul_ps(cs, _mm512_maskz_loadu_ps(mk[v], c + r * ldc + 16 * v));
  for (int y = 0; y < inner; y++) {
    const float* by = b + y * ldb;
    __m512 bv[4];
    for (int v = 0; v < 4; v++) bv[v] = _mm512_maskz_loadu_ps(mk[v], by + 16 * v);
    for (int r = 0; r < R; r++) {
      const __m512 w = _mm512_set1_ps(a[r * lda + y]);
      for (int v = 0; v < 4; v++) acc[r][v] = _mm512_fmadd_ps(w, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int v = 0; v < 4; v++) _mm512_mask_storeu_ps(c + r * ldc + 16 * v, mk[v], acc[r][v]);
}

struct Avx512Ops {
  static void step(float* m, const float* k, const float* q, const float* v, float decay, float beta, float scale, float* out, int S) {
    if (S == 128) return step_nv<8>(m, k, q, v, decay, beta, scale, out, S);
    if (S == 64) return step_nv<4>(m, k, q, v, decay, beta, scale, out, S);
    step_any(m, k, q, v, decay, beta, scale, out, S);
  }
  static void gemm(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb, int rows, int inner, int cols,
                   float c_scale) {
    for (int x = 0; x < cols; x += 64) {
      const int w = cols - x < 64 ? cols - x : 64;
      int r = 0;
      for (; r + 4 <= rows; r += 4) gemm_block<4>(c + r * ldc + x, ldc, a + r * lda, lda, b + x, ldb, inner, w, c_scale);
      for (; r < rows; r++) gemm_block<1>(c + r * ldc + x, ldc, a + r * lda, lda, b + x, ldb, inner, w, c_scale);
    }
  }
};

void delta_head_avx512(const DeltaHead& h) { delta_head<Avx512Ops>(h); }

}  // namespace

namespace x86 {
const RecurrentOps kAvx512Recurrent = {"avx512", delta_head_avx512};
}  // namespace x86

}  // namespace loom
