// The gated delta rule's Ops (recurrent-impl.h) for AVX2 + FMA (compiled with -mavx2 -mfma,
// called only when the CPU has them). Tails use masked loads and stores. No STL here: see
// half.h.
#include <immintrin.h>

#include "../recurrent-impl.h"

namespace loom {
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// lanes [0, left) on
inline __m256i tail_mask(int left) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lanes);
}

// One token on rows j of an S = 8·NV state: the row stays in registers between its two dots.
template <int NV>
void step_nv(float* m, const float* k, const float* q, const float* v, float decay, float beta, float scale, float* out, int S) {
  const __m256 dv = _mm256_set1_ps(decay);
  for (int j = 0; j < S; j++) {
    float* row = m + static_cast<int64_t>(j) * S;
    __m256 r[NV];
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int c = 0; c < NV; c += 2) {
      r[c] = _mm256_mul_ps(_mm256_loadu_ps(row + 8 * c), dv);
      r[c + 1] = _mm256_mul_ps(_mm256_loadu_ps(row + 8 * c + 8), dv);
      a0 = _mm256_fmadd_ps(r[c], _mm256_loadu_ps(k + 8 * c), a0);
      a1 = _mm256_fmadd_ps(r[c + 1], _mm256_loadu_ps(k + 8 * c + 8), a1);
    }
    const __m256 delta = _mm256_set1_ps((v[j] - hsum(_mm256_add_ps(a0, a1))) * beta);
    a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int c = 0; c < NV; c += 2) {
      r[c] = _mm256_fmadd_ps(_mm256_loadu_ps(k + 8 * c), delta, r[c]);
      r[c + 1] = _mm256_fmadd_ps(_mm256_loadu_ps(k + 8 * c + 8), delta, r[c + 1]);
      a0 = _mm256_fmadd_ps(r[c], _mm256_loadu_ps(q + 8 * c), a0);
      a1 = _mm256_fmadd_ps(r[c + 1], _mm256_loadu_ps(q + 8 * c + 8), a1);
      _mm256_storeu_ps(row + 8 * c, r[c]);
      _mm256_storeu_ps(row + 8 * c + 8, r[c + 1]);
    }
    out[j] = hsum(_mm256_add_ps(a0, a1)) * scale;
  }
}

// Any S: two passes over each row (it is in L1 for the second); masked loads and stores only
// for a tail (vmaskmovps stores are slow on some CPUs)
void step_any(float* m, const float* k, const float* q, const float* v, float decay, float beta, float scale, float* out, int S) {
  const __m256 dv = _mm256_set1_ps(decay);
  const int full = S & ~7;
  const __m256i mk = tail_mask(S - full);
  for (int j = 0; j < S; j++) {
    float* row = m + static_cast<int64_t>(j) * S;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < full; i += 8) {
      const __m256 r = _mm256_mul_ps(_mm256_loadu_ps(row + i), dv);
      acc = _mm256_fmadd_ps(r, _mm256_loadu_ps(k + i), acc);
      _mm256_storeu_ps(row + i, r);
    }
    if (full < S) {
      const __m256 r = _mm256_mul_ps(_mm256_maskload_ps(row + full, mk), dv);
      acc = _mm256_fmadd_ps(r, _mm256_maskload_ps(k + full, mk), acc);
      _mm256_maskstore_ps(row + full, mk, r);
    }
    const __m256 delta = _mm256_set1_ps((v[j] - hsum(acc)) * beta);
    acc = _mm256_setzero_ps();
    for (int i = 0; i < full; i += 8) {
      const __m256 r = _mm256_fmadd_ps(_mm256_loadu_ps(k + i), delta, _mm256_loadu_ps(row + i));
      acc = _mm256_fmadd_ps(r, _mm256_loadu_ps(q + i), acc);
      _mm256_storeu_ps(row + i, r);
    }
    if (full < S) {
      const __m256 r = _mm256_fmadd_ps(_mm256_maskload_ps(k + full, mk), delta, _mm256_maskload_ps(row + full, mk));
      acc = _mm256_fmadd_ps(r, _mm256_maskload_ps(q + full, mk), acc);
      _mm256_maskstore_ps(row + full, mk, r);
    }
    out[j] = hsum(acc) * scale;
  }
}

// R rows × up to 16 columns of c: 2R accumulators (named, so they stay in registers), each
// b row loaded once for the R rows
template <int R, bool kFull>
void gemm_block(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb, int inner, int cols, float c_scale) {
  const __m256i m0 = tail_mask(cols), m1 = tail_mask(cols - 8);
  const float* a0 = a;
  const float* a1 = a + (R > 1 ? lda : 0);
  const float* a2 = a + (R > 2 ? 2 * lda : 0);
  const float* a3 = a + (R > 3 ? 3 * lda : 0);
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  for (int y = 0; y < inner; y++) {
    const float* by = b + y * ldb;
    const __m256 b0 = kFull ? _mm256_loadu_ps(by) : _mm256_maskload_ps(by, m0);
    const __m256 b1 = kFull ? _mm256_loadu_ps(by + 8) : _mm256_maskload_ps(by + 8, m1);
    __m256 w = _mm256_broadcast_ss(a0 + y);
    c00 = _mm256_fmadd_ps(w, b0, c00), c01 = _mm256_fmadd_ps(w, b1, c01);
    if (R > 1) w = _mm256_broadcast_ss(a1 + y), c10 = _mm256_fmadd_ps(w, b0, c10), c11 = _mm256_fmadd_ps(w, b1, c11);
    if (R > 2) w = _mm256_broadcast_ss(a2 + y), c20 = _mm256_fmadd_ps(w, b0, c20), c21 = _mm256_fmadd_ps(w, b1, c21);
    if (R > 3) w = _mm256_broadcast_ss(a3 + y), c30 = _mm256_fmadd_ps(w, b0, c30), c31 = _mm256_fmadd_ps(w, b1, c31);
  }
  const __m256 cs = _mm256_set1_ps(c_scale);
  const auto put = [&](float* row, __m256 x0, __m256 x1) {
    if (kFull) {
      if (c_scale != 0.0f) {
        x0 = _mm256_fmadd_ps(cs, _mm256_loadu_ps(row), x0);
        x1 = _mm256_fmadd_ps(cs, _mm256_loadu_ps(row + 8), x1);
      }
      _mm256_storeu_ps(row, x0);
      _mm256_storeu_ps(row + 8, x1);
      return;
    }
    if (c_scale != 0.0f) {
      x0 = _mm256_fmadd_ps(cs, _mm256_maskload_ps(row, m0), x0);
      x1 = _mm256_fmadd_ps(cs, _mm256_maskload_ps(row + 8, m1), x1);
    }
    _mm256_maskstore_ps(row, m0, x0);
    _mm256_maskstore_ps(row + 8, m1, x1);
  };
  put(c, c00, c01);
  if (R > 1) put(c + ldc, c10, c11);
  if (R > 2) put(c + 2 * ldc, c20, c21);
  if (R > 3) put(c + 3 * ldc, c30, c31);
}

struct Avx2Ops {
  // S = 128, one thread, CPU time per token of 16 heads: a chunk of 8 tokens costs 57 µs
  // against 62 token by token, 64 costs 44 against 61
  static constexpr int kChunkMin = 8;
  static void step(float* m, const float* k, const float* q, const float* v, float decay, float beta, float scale, float* out, int S) {
    if (S == 64) return step_nv<8>(m, k, q, v, decay, beta, scale, out, S);
    step_any(m, k, q, v, decay, beta, scale, out, S);
  }
  static void gemm(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb, int rows, int inner, int cols,
                   float c_scale) {
    for (int x = 0; x < cols; x += 16) {
      if (cols - x >= 16) {
        block_rows<true>(c + x, ldc, a, lda, b + x, ldb, rows, inner, 16, c_scale);
      } else {
        block_rows<false>(c + x, ldc, a, lda, b + x, ldb, rows, inner, cols - x, c_scale);
      }
    }
  }
  template <bool kFull>
  static void block_rows(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t ldb, int rows, int inner, int w,
                         float c_scale) {
    int r = 0;
    for (; r + 4 <= rows; r += 4) gemm_block<4, kFull>(c + r * ldc, ldc, a + r * lda, lda, b, ldb, inner, w, c_scale);
    for (; r < rows; r++) gemm_block<1, kFull>(c + r * ldc, ldc, a + r * lda, lda, b, ldb, inner, w, c_scale);
  }
};

void delta_head_avx2(const DeltaHead& h) { delta_head<Avx2Ops>(h); }

}  // namespace

namespace x86 {
const RecurrentOps kAvx2Recurrent = {"avx2", delta_head_avx2};
}  // namespace x86

}  // namespace loom
