// The gated delta rule of one (sequence, value head), written once over an `Ops` struct of
// static vector primitives and instantiated by each instruction-set translation unit
// (recurrent.cc portable, x86/recurrent_avx2.cc, x86/recurrent_avx512.cc):
//   step(m, k, q, v, decay, beta, scale, out, S)   one token on the S×S state m (row j over
//       keys i): m_j ← decay·m_j; δ_j = β(v_j − m_j·k); m_j += δ_j k; out_j = scale · m_j·q
//   gemm(c, ldc, a, lda, b, ldb, rows, inner, cols, c_scale)
//       c[r][x] = c_scale·c[r][x] + Σ_y a[r][y]·b[y][x]  (c_scale 0: c is not read)
//   kChunkMin   tokens of one head from which the chunked form is used
// Long runs of tokens go through the chunkwise-parallel form (fla's chunk_gated_delta_rule,
// the WY/UT transform) so that the work is matmul-shaped and the state is read and written
// once per chunk of kDeltaChunk tokens instead of once per token.
// No STL (see half.h): static templates, each translation unit keeps its own instantiation.
#pragma once
#include <cstdint>

#include "vec-math.h"

namespace loom {

constexpr int kDeltaChunk = 64;
// the fewest tokens any Ops chunks (the caller provides scratch from here on)
constexpr int kDeltaChunkMin = 8;

// One (sequence, value head): its n tokens' rows and its state.
struct DeltaHead {
  float* m;               // state S×S, row j (value) over keys i: m[j·S + i] = S[i][j]
  const float* q;         // token t's query at q + t·qk_stride (S values), key likewise
  const float* k;
  int64_t qk_stride;
  const float* v;         // token t's value at v + t·v_stride, its output at out + t·v_stride
  float* out;
  int64_t v_stride;
  const float* g;         // token t's log decay and β at g[t·gb_stride], beta[t·gb_stride]
  const float* beta;
  int64_t gb_stride;
  int n;
  int S;
  float scale;
  float* scratch;         // delta_scratch_floats(S) floats when n ≥ kDeltaChunkMin
};

static inline int64_t delta_scratch_floats(int S) {
  const int64_t C = kDeltaChunk;
  return 2 * C + 5 * static_cast<int64_t>(S) * C + 4 * C * C;
}

// dst[x][r] = scale · src[r][x] in tiles of 8 src rows: the stores run along dst rows and the
// 8 src lines a tile reads stay in L1 even when src rows are a multiple of 4 KiB apart (q, k,
// v and out rows are: they land in one L1 set)
static inline void transpose(float* dst, int64_t ldd, const float* src, int64_t lds, int rows, int cols, float scale) {
  for (int r0 = 0; r0 < rows; r0 += 8) {
    const int r1 = rows - r0 < 8 ? rows : r0 + 8;
    for (int x = 0; x < cols; x++)
      for (int r = r0; r < r1; r++) dst[x * ldd + r] = src[r * lds + x] * scale;
  }
}

// c[j][t] = c_scale·c[j][t] + Σ_{s≤t} a[j][s]·b[s][t], for b upper triangular ([s][t] = 0 for
// s > t; all arrays kDeltaChunk apart): columns [x, x + 16) need rows s < x + 16 of b only
template <class Ops>
static void lower_gemm(float* c, const float* a, const float* b, int rows, int n, float c_scale) {
  constexpr int C = kDeltaChunk;
  for (int x = 0; x < n; x += 16) {
    const int cols = n - x < 16 ? n - x : 16;
    Ops::gemm(c + x, C, a, C, b + x, C, rows, x + cols, cols, c_scale);
  }
}

// Tokens [t0, t0 + n), n ≤ kDeltaChunk, of h in one chunk. With the state S0 at the chunk
// start, G_t = Σ_{u≤t} g_u, D[t][s] = e^(G_t − G_s), γ_t = e^(G_t):
//   A[t][s] = β_t D[t][s] (k_t·k_s) (s < t), T = (I + A)^-1
//   V' = T · (diag(β) V − diag(βγ) K S0)         (the values corrected for what S0 and the
//                                                  chunk's earlier tokens already predict)
//   O_t = scale · (γ_t S0ᵀq_t + Σ_{s≤t} D[t][s] (q_t·k_s) V'_s)
//   S_end = γ_last S0 + Σ_s D[last][s] k_s V'_sᵀ
// Every array over tokens is stored transposed ([j][t], row stride C) so each product is a
// gemm over contiguous rows.
template <class Ops>
static void delta_chunk(const DeltaHead& h, int t0, int n) {
  constexpr int C = kDeltaChunk;
  const int S = h.S;
  float* G = h.scratch;
  float* KT = G + 2 * C;                  // [i][t] keys
  float* QT = KT + S * C;                 // [i][t] queries
  float* RT = QT + S * C;                 // [j][t] K·S0, then R
  float* VT = RT + S * C;                 // [j][t] V'
  float* OT = VT + S * C;                 // [j][t] S0ᵀq, then outputs
  float* KK = OT + S * C;                 // [t][s] k_t·k_s, then A
  float* QK = KK + C * C;                 // [t][s] q_t·k_s
  float* T = QK + C * C;                  // [t][s] (I + A)^-1
  float* TT = T + C * C;                  // Tᵀ, then Pᵀ[s][t] = D[t][s] (q_t·k_s)
  const float* k = h.k + t0 * h.qk_stride;
  const float* q = h.q + t0 * h.qk_stride;

  float* E = G + C;                       // [t] γ_t = e^(G_t), then e^(G_last − G_t)
  float acc = 0.0f;
  for (int t = 0; t < n; t++) G[t] = acc += h.g[(t0 + t) * h.gb_stride];
  for (int t = 0; t < n; t++) E[t] = vexp(G[t]);
  transpose(KT, C, k, h.qk_stride, n, S, 1.0f);
  transpose(QT, C, q, h.qk_stride, n, S, 1.0f);
  // only s ≤ t is used: rows [r, r + 16) need columns up to r + 16
  for (int r = 0; r < n; r += 16) {
    const int rows = n - r < 16 ? n - r : 16;
    Ops::gemm(KK + r * C, C, k + r * h.qk_stride, h.qk_stride, KT, C, rows, S, r + rows, 0.0f);
    Ops::gemm(QK + r * C, C, q + r * h.qk_stride, h.qk_stride, KT, C, rows, S, r + rows, 0.0f);
  }
  // A in KK, P[t][s] = D[t][s] (q_t·k_s) in QK; both 0 above the diagonal
  for (int t = 0; t < n; t++) {
    const float bt = h.beta[(t0 + t) * h.gb_stride];
    float* kk = KK + t * C;
    float* qk = QK + t * C;
    for (int s = 0; s <= t; s++) {
      const float d = vexp(G[t] - G[s]);
      kk[s] *= bt * d;
      qk[s] *= d;
    }
    for (int s = t; s < n; s++) kk[s] = 0.0f;
    for (int s = t + 1; s < n; s++) qk[s] = 0.0f;
  }
  // T = (I + A)^-1 by forward substitution, row t = e_t − Σ_{s<t} A[t][s] T[s]
  for (int t = 0; t < n; t++) {
    float* row = T + t * C;
    for (int s = 0; s < n; s++) row[s] = s == t ? 1.0f : 0.0f;
    for (int s = 0; s < t; s++) {
      const float a = KK[t * C + s];
      const float* rs = T + s * C;
      for (int x = 0; x <= s; x++) row[x] -= a * rs[x];
    }
  }
  transpose(TT, C, T, C, n, n, 1.0f);
  // R = diag(β) V − diag(βγ) K S0, transposed: RT[j][t] (K S0 in VT for now)
  Ops::gemm(VT, C, h.m, S, KT, C, S, S, n, 0.0f);
  transpose(RT, C, h.v + t0 * h.v_stride, h.v_stride, n, S, 1.0f);
  float* B = T;  // T is in TT now: β_t, β_t γ_t
  for (int t = 0; t < n; t++) {
    B[t] = h.beta[(t0 + t) * h.gb_stride];
    B[C + t] = B[t] * E[t];
  }
  for (int j = 0; j < S; j++)
    for (int t = 0; t < n; t++) RT[j * C + t] = B[t] * RT[j * C + t] - B[C + t] * VT[j * C + t];
  lower_gemm<Ops>(VT, RT, TT, S, n, 0.0f);  // V'ᵀ = Rᵀ Tᵀ
  // Oᵀ = S0ᵀ Qᵀ ⊙ γ + V'ᵀ Pᵀ
  Ops::gemm(OT, C, h.m, S, QT, C, S, S, n, 0.0f);
  for (int j = 0; j < S; j++)
    for (int t = 0; t < n; t++) OT[j * C + t] *= E[t];
  transpose(TT, C, QK, C, n, n, 1.0f);
  lower_gemm<Ops>(OT, VT, TT, S, n, 1.0f);
  transpose(h.out + t0 * h.v_stride, h.v_stride, OT, C, S, n, h.scale);
  // S_end: m = γ_last m + (V'ᵀ ⊙ D[last]) K
  const float last = G[n - 1];
  for (int s = 0; s < n; s++) E[s] = vexp(last - G[s]);
  for (int j = 0; j < S; j++)
    for (int s = 0; s < n; s++) VT[j * C + s] *= E[s];
  Ops::gemm(h.m, S, VT, C, k, h.qk_stride, S, n, S, vexp(last));
}

// A head with at least Ops::kChunkMin tokens (each Ops sets it from measurements) goes
// through chunks; fewer go token by token, where a chunk's fixed costs (the C×C products, the
// solve) would outweigh the state traffic they save.
template <class Ops>
static void delta_head(const DeltaHead& h) {
  if (h.n >= Ops::kChunkMin && h.scratch) {
    for (int t0 = 0; t0 < h.n; t0 += kDeltaChunk) delta_chunk<Ops>(h, t0, h.n - t0 < kDeltaChunk ? h.n - t0 : kDeltaChunk);
    return;
  }
  for (int t = 0; t < h.n; t++) {
    Ops::step(h.m, h.k + t * h.qk_stride, h.q + t * h.qk_stride, h.v + t * h.v_stride, vexp(h.g[t * h.gb_stride]),
              h.beta[t * h.gb_stride], h.scale, h.out + t * h.v_stride, h.S);
  }
}

// The per-ISA entry points (recurrent.cc picks one as simd.cc does)
struct RecurrentOps {
  const char* name;
  void (*delta_head)(const DeltaHead& h);
};

#if defined(__x86_64__)
namespace x86 {
extern const RecurrentOps kAvx2Recurrent;
extern const RecurrentOps kAvx512Recurrent;
}  // namespace x86
#endif

}  // namespace loom
