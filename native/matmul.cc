// matmul dispatch: activation preparation, work partitioning over loom::pool(), the best
// kernel for the CPU (AVX-512, AVX2, or the portable scalar code below), and embed_rows.
// No -m flags here: this file must compile for any target (the x86 kernels live in their
// own translation units, native/x86/*.cc).
#include "matmul.h"

#include <algorithm>
#include <new>

#include "cpu.h"
#include "r16.h"
#include "quant.h"
#include "threadpool.h"
#include "x86/matmul_x86.h"

#if (defined(__x86_64__) || defined(_M_X64)) && !defined(LOOM_NO_X86)  // LOOM_NO_X86: test the portable build
#define LOOM_X86 1
#endif

namespace loom {

bool is_supported_weight_type(int type) { return weight_block_values(type) > 0; }

// ---- portable scalar kernels: one weight row · one prepared activation row ----

namespace {

// Float dots keep 8 partial sums (less rounding error than one running sum, and vectorizable).
template <typename W, typename X>
float dot_float(W wval, X xval, int K) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= K; i += 8)
    for (int j = 0; j < 8; j++) s[j] += wval(i + j) * xval(i + j);
  for (; i < K; i++) s[0] += wval(i) * xval(i);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

float dot_f32(const float* w, const float* x, int K) {
  return dot_float([w](int i) { return w[i]; }, [x](int i) { return x[i]; }, K);
}

float dot_f16(const uint8_t* w, const float* x, int K) {
  return dot_float([w](int i) { return f16_to_f32(load_u16(w + 2 * i)); }, [x](int i) { return x[i]; }, K);
}

float dot_bf16(const uint8_t* w, const uint8_t* x, int K) {
  return dot_float([w](int i) { return bf16_to_f32(load_u16(w + 2 * i)); },
                   [x](int i) { return bf16_to_f32(load_u16(x + 2 * i)); }, K);
}

// Σ_b dw·dx·Σ q_w·q_x over Q8_0 blocks
float dot_q8_0(const uint8_t* w, const XQ8_0& x, int K) {
  float s = 0;
  for (int b = 0; b < K / kQK; b++) {
    const uint8_t* blk = w + kQ8_0Bytes * b;
    const int8_t* qw = reinterpret_cast<const int8_t*>(blk + 2);
    const int8_t* qx = x.q + kQK * b;
    int32_t isum = 0;
    for (int j = 0; j < kQK; j++) isum += qw[j] * qx[j];
    s += f16_to_f32(load_u16(blk)) * x.d[b] * static_cast<float>(isum);
  }
  return s;
}

// Q4_0 value (q − 8)·d: Σ q·x − 8·Σx per block
float dot_q4_0(const uint8_t* w, const XQ8_0& x, int K) {
  float s = 0;
  for (int b = 0; b < K / kQK; b++) {
    const uint8_t* blk = w + kQ4_0Bytes * b;
    const int8_t* qx = x.q + kQK * b;
    int32_t isum = 0;
    for (int j = 0; j < 16; j++) isum += (blk[2 + j] & 15) * qx[j] + (blk[2 + j] >> 4) * qx[j + 16];
    isum -= 8 * x.s[b];
    s += f16_to_f32(load_u16(blk)) * x.d[b] * static_cast<float>(isum);
  }
  return s;
}

// Q4_K: dx·(d·Σ_j sc_j·Σ q·x − dmin·Σ_j m_j·Σx) per super-block
float dot_q4_k(const uint8_t* w, const XQ8_K& x, int K) {
  float s = 0;
  for (int b = 0; b < K / kQKK; b++) {
    const uint8_t* blk = w + kQ4_KBytes * b;
    const int8_t* qx = x.q + kQKK * b;
    int32_t main = 0, mins = 0;
    for (int c = 0; c < 4; c++) {
      const uint8_t* qs = blk + 16 + 32 * c;
      int32_t lo = 0, hi = 0;
      for (int l = 0; l < 32; l++) {
        lo += (qs[l] & 15) * qx[64 * c + l];
        hi += (qs[l] >> 4) * qx[64 * c + 32 + l];
      }
      uint8_t s1, m1, s2, m2;
      q4k_scale_min(blk + 4, 2 * c, &s1, &m1);
      q4k_scale_min(blk + 4, 2 * c + 1, &s2, &m2);
      main += s1 * lo + s2 * hi;
      mins += m1 * x.s32[8 * b + 2 * c] + m2 * x.s32[8 * b + 2 * c + 1];
    }
    const float d = f16_to_f32(load_u16(blk)), dmin = f16_to_f32(load_u16(blk + 2));
    s += x.d[b] * (d * static_cast<float>(main) - dmin * static_cast<float>(mins));
  }
  return s;
}

// Q6_K: d·dx·Σ_j sc_j·(Σ q·x − 32·Σx) over sub-blocks of 16
float dot_q6_k(const uint8_t* w, const XQ8_K& x, int K) {
  float s = 0;
  for (int b = 0; b < K / kQKK; b++) {
    const uint8_t* blk = w + kQ6_KBytes * b;
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
    const int8_t* qx = x.q + kQKK * b;
    int32_t isum = 0;
    for (int j = 0; j < 16; j++) {
      int32_t sub = 0;
      for (int i = 16 * j; i < 16 * j + 16; i++) sub += q6k_value(blk, i) * qx[i];
      isum += sc[j] * (sub - 32 * x.s16[16 * b + j]);
    }
    s += f16_to_f32(load_u16(blk + 208)) * x.d[b] * static_cast<float>(isum);
  }
  return s;
}

// Any block type: each weight block dequantized, then dotted with the prepared values
// (the types without an integer kernel of their own here; the x86 paths have them all).
float dot_dequantized(int type, const uint8_t* w, const uint8_t* xa, int K) {
  const WeightTraits* t = weight_traits(type);
  const int bv = t->block_values;
  float wv[256], xv[256];
  double s = 0;
  for (int b = 0; b < K / bv; b++) {
    t->dequantize(w + static_cast<size_t>(t->block_bytes) * b, wv);
    if (t->act == Act::kQ8_0) {
      const XQ8_0 x = xq8_0_view(xa, K);
      for (int i = 0; i < bv; i++) xv[i] = x.d[b] * x.q[bv * b + i];
    } else {
      const XQ8_K x = xq8_k_view(xa, K);
      for (int i = 0; i < bv; i++) xv[i] = x.d[b] * x.q[bv * b + i];
    }
    float part = 0;
    for (int i = 0; i < bv; i++) part += wv[i] * xv[i];
    s += part;
  }
  return static_cast<float>(s);
}

float dot_scalar(int type, const uint8_t* w, const uint8_t* xa, int K) {
  switch (type) {
    case kF32:
    case kF16: {
      const float* x = reinterpret_cast<const float*>(xa);
      return type == kF32 ? dot_f32(reinterpret_cast<const float*>(w), x, K) : dot_f16(w, x, K);
    }
    case kBF16: return dot_bf16(w, xa, K);
    case kQ8_0: return dot_q8_0(w, xq8_0_view(xa, K), K);
    case kQ4_0: return dot_q4_0(w, xq8_0_view(xa, K), K);
    case kQ4_K: return dot_q4_k(w, xq8_k_view(xa, K), K);
    case kQ6_K: return dot_q6_k(w, xq8_k_view(xa, K), K);
    default: return dot_dequantized(type, w, xa, K);
  }
}

void scalar_dot(int type, const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K,
                int o0, int o1, float* out, int N) {
  if (r16_plain_type(type) >= 0) {
    dot_r16_portable(type, xa, xstride, rows, w, K, o0, o1, out, N);
    return;
  }
  for (int o = o0; o < o1; o++)
    for (int r = 0; r < rows; r++)
      out[static_cast<size_t>(r) * N + o] = dot_scalar(type, w + wstride * o, xa + xstride * r, K);
}

// ---- kernel path selection ----

enum Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// The CPU's features, less what LOOM_NO_SIMD switches off (as for the other kernels)
int detect_isa() {
#ifdef LOOM_X86
  if (use_avx512()) return kAvx512;
  if (use_avx2()) return kAvx2;
#endif
  return kScalar;
}

int best_isa() {
  static const int isa = detect_isa();
  return isa;
}

int g_isa = -1;             // forced path, -1 = best
int g_gemm_min_rows = 0;    // forced GEMM threshold, 0 = per type (gemm_min_rows)

// AVX-512: rows at which the packed GEMM (16-row tiles) beats the dot kernels: where the dot
// kernels' cost, linear in rows, crosses the GEMM's, which is about flat up to 16 rows (its
// per-panel weight unpacking dominates there). Measured on an AMD EPYC (Zen 4-class AVX-512)
// at 2048 × 2048 and 2048 × 8192, dot / GEMM ms at 8 rows: Q4_K 0.27 / 0.37, Q6_K 0.24 / 0.45,
// Q3_K 0.32 / 0.51, Q5_K 0.33 / 0.36, IQ4_XS 0.49 / 0.53, Q8_0 0.38 / 0.35, Q4_0 0.42 / 0.41.
// After the quad-order dot kernels (2048 × 8192, 2 threads, dot / GEMM ms): Q4_0 at 8 rows
// 1.19–1.31 / 1.46–1.53, at 9 1.43–1.57 / 1.48–1.51, at 10 1.56–1.69 / 1.50; Q5_0 at 9
// 1.66 / 1.73–1.76, at 10 1.77–1.78 / 1.75–1.77. After the Q4_K and Q6_K panels' tables
// were vectorized (µs, dot / GEMM): Q6_K at 9 rows 1111–1115 / 1130–1236, at 10 1195–1201 /
// 1121–1127; Q4_K at 9 1158–1237 / 1058–1173.
[[maybe_unused]] int gemm_min_rows(int type) {
  if (g_gemm_min_rows > 0) return g_gemm_min_rows;
  switch (type) {
    case kQ8_0: return 7;
    case kQ4_0:
    case kIQ4_NL: return 9;
    case kQ5_0: return 10;
    case kF32: return 8;
    case kQ5_K:
    case kIQ4_XS: return 9;
    case kQ4_K: return 9;
    case kQ3_K: return 12;
    case kQ6_K: return 10;
    default: return 12;  // F16, BF16
  }
}

int current_isa() { return g_isa < 0 ? best_isa() : g_isa; }

using PrepareFn = void (*)(int, const float*, int, uint8_t*);
using DotFn = void (*)(int, const uint8_t*, size_t, int, const uint8_t*, size_t, int, int, int, float*, int);

struct Kernels {
  PrepareFn prepare;
  DotFn dot;
  bool gemm;  // the AVX-512 packed GEMM is available
};

Kernels kernels_for(int isa) {
#ifdef LOOM_X86
  if (isa == kAvx512) return {x86::avx512_prepare_row, x86::avx512_dot, true};
  if (isa == kAvx2) return {x86::avx2_prepare_row, x86::avx2_dot, false};
#else
  (void)isa;
#endif
  return {prepare_row_scalar, scalar_dot, false};
}

// ---- scratch: grows, never shrinks; one per calling thread ----

class Scratch {
 public:
  ~Scratch() { release(); }
  uint8_t* get(size_t bytes) {
    if (bytes > size_) {
      release();
      data_ = static_cast<uint8_t*>(::operator new(bytes, std::align_val_t(64)));
      size_ = bytes;
    }
    return data_;
  }

 private:
  void release() {
    if (data_) ::operator delete(data_, std::align_val_t(64));
    data_ = nullptr;
    size_ = 0;
  }
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

thread_local Scratch t_xa;  // prepared or packed activations of the current call

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// ---- few rows: every task takes a range of output rows against all activation rows ----
//
// A set of weights that read the same activations (q/k/v, gate/up) runs as one: x is
// prepared once per activation kind, and the output rows of all the weights, end to end,
// are cut into tasks of about equal weight bytes, so a layer's small matrices cost one
// parallel region instead of one each.

struct DotPart {
  const MatmulPart* part;
  size_t wstride;
  const uint8_t* xa;  // prepared activations (x itself for F32)
  size_t xstride;
};

// Prepares x for every kind of activation the parts need, once per kind, into t_xa.
void prepare_parts(const Kernels& k, const float* x, int rows, int K, const MatmulPart* parts, int n, DotPart* dp) {
  int owner[kMaxMatmulParts];  // the first part with the same kind of prepared row; -1: F32 (x as it is)
  size_t offset[kMaxMatmulParts];
  size_t bytes = 0;
  for (int j = 0; j < n; j++) {
    const int type = parts[j].type;
    dp[j] = {&parts[j], weight_row_bytes(type, K), reinterpret_cast<const uint8_t*>(x), 4 * static_cast<size_t>(K)};
    owner[j] = type == kF32 ? -1 : j;
    for (int i = 0; i < j && owner[j] == j; i++)
      if (owner[i] == i && weight_traits(parts[i].type)->act == weight_traits(type)->act) owner[j] = i;
    if (owner[j] != j) continue;
    dp[j].xstride = prepared_row_bytes(type, K);
    offset[j] = bytes;
    bytes += dp[j].xstride * rows;
  }
  if (bytes == 0) return;
  uint8_t* buf = t_xa.get(bytes);
  for (int j = 0; j < n; j++) {
    if (owner[j] < 0) continue;
    if (owner[j] == j) {
      uint8_t* dst = buf + offset[j];
      const int type = parts[j].type;
      const size_t xs = dp[j].xstride;
      auto prep = [&](int r, int) { k.prepare(type, x + static_cast<size_t>(r) * K, K, dst + xs * r); };
      if (rows >= 8) pool().parallel_for(rows, prep);
      else
        for (int r = 0; r < rows; r++) prep(r, 0);
    }
    dp[j].xa = buf + offset[owner[j]];
    dp[j].xstride = dp[owner[j]].xstride;
  }
}

// A place in the parts' output rows taken end to end: row `row` of part `part`.
struct RowAt {
  int part;
  int row;
};

// Where the first `bytes` weight bytes of the end-to-end rows end, rounded up to 16 rows
// (a cache line of out) within a part.
RowAt row_at_bytes(const DotPart* dp, int n, size_t bytes) {
  for (int j = 0; j < n; j++) {
    const int N = dp[j].part->out_features;
    const size_t part_bytes = dp[j].wstride * static_cast<size_t>(N);
    if (bytes < part_bytes) {
      const int row = std::min(N, ceil_div(static_cast<int>(bytes / dp[j].wstride), 16) * 16);
      return row == N ? RowAt{j + 1, 0} : RowAt{j, row};
    }
    bytes -= part_bytes;
  }
  return {n, 0};
}

void matmul_dot_set(const Kernels& k, const float* x, int rows, int K, const MatmulPart* parts, int n) {
  DotPart dp[kMaxMatmulParts];
  prepare_parts(k, x, rows, K, parts, n, dp);
  // About 2 tasks per thread (each task start costs a memory ramp, and a small model's
  // matrices are only a few hundred KB: 8 a thread made its 211 one-row matmuls 25% slower),
  // but never under ~16 KB of weights.
  size_t total = 0;
  for (int j = 0; j < n; j++) total += dp[j].wstride * static_cast<size_t>(parts[j].out_features);
  const int threads = pool().size();
  const int tasks = static_cast<int>(std::max<size_t>(1, std::min<size_t>(2 * threads, total / 16384)));
  pool().parallel_for(tasks, [&](int t, int) {
    const RowAt begin = row_at_bytes(dp, n, total * t / tasks);
    const RowAt end = row_at_bytes(dp, n, total * (t + 1) / tasks);
    bool warmed = false;
    for (int j = begin.part; j < n && (j < end.part || (j == end.part && end.row > 0)); j++) {
      const DotPart& d = dp[j];
      const int N = d.part->out_features;
      const int o0 = j == begin.part ? begin.row : 0, o1 = j == end.part ? end.row : N;
      if (o0 >= o1) continue;
      if (!warmed) {
        // The kernels prefetch LOOM_PREFETCH_AHEAD bytes ahead of where they read; the task's
        // first that many would otherwise arrive one miss at a time while the hardware
        // prefetcher warms up (a cost paid per task, large for a small model's many matrices).
        const uint8_t* first = d.part->w + d.wstride * static_cast<size_t>(o0);
        const size_t warm = std::min<size_t>(LOOM_PREFETCH_AHEAD, d.wstride * static_cast<size_t>(o1 - o0));
        for (size_t off = 0; off < warm; off += 64) __builtin_prefetch(first + off);
        warmed = true;
      }
      k.dot(d.part->type, d.xa, d.xstride, rows, d.part->w, d.wstride, K, o0, o1, d.part->out, N);
    }
  });
}

#ifdef LOOM_X86
// ---- many rows (AVX-512): pack x once in 16-row tiles, then tile rows × outputs ----
//
// As for the dot kernels, a set of weights that read the same activations runs as one: x is
// packed once per activation kind, and every part's (row chunk, output panel) pairs are the
// tasks of one parallel region, so q/k/v (or gate/up) pay one packing and one barrier.

struct GemmPart {
  const uint8_t* packed;  // the part's activation kind, every 16-row tile
  size_t tile_bytes;
  int chunk_tiles;  // tiles per row chunk
  int panels;       // output panels
  int first_task;   // its tasks are [first_task, first_task + row chunks × panels)
};

void matmul_gemm_set(const float* x, int rows, int K, const MatmulPart* parts, int n) {
  const int T = x86::kGemmTile;
  const int tiles = ceil_div(rows, T);
  GemmPart gp[kMaxMatmulParts];
  int owner[kMaxMatmulParts];  // the first part with the same activation kind
  size_t offset[kMaxMatmulParts];
  size_t bytes = 0;
  for (int j = 0; j < n; j++) {
    owner[j] = j;
    for (int i = 0; i < j && owner[j] == j; i++)
      if (owner[i] == i && weight_traits(parts[i].type)->act == weight_traits(parts[j].type)->act) owner[j] = i;
    gp[j].tile_bytes = x86::avx512_gemm_tile_bytes(parts[j].type, K);
    if (owner[j] != j) continue;
    offset[j] = bytes;
    bytes += gp[j].tile_bytes * tiles;
  }
  uint8_t* buf = t_xa.get(bytes);
  int kinds[kMaxMatmulParts], n_kinds = 0;
  for (int j = 0; j < n; j++)
    if (owner[j] == j) kinds[n_kinds++] = j;
  pool().parallel_for(tiles * n_kinds, [&](int t, int) {
    const int j = kinds[t / tiles], tile = t % tiles;
    x86::avx512_gemm_pack(parts[j].type, x, rows, K, tile, buf + offset[j] + gp[j].tile_bytes * tile);
  });
  // Row chunks of ~768 KB of packed activations (they stay in L2 while a panel of weights
  // sweeps them); output panels of 48 rows (a multiple of every micro-kernel width).
  const int panel = x86::kGemmPanel;
  int tasks = 0;
  for (int j = 0; j < n; j++) {
    gp[j].packed = buf + offset[owner[j]];
    gp[j].chunk_tiles = std::max<int>(4, static_cast<int>((768u << 10) / gp[j].tile_bytes)) & ~3;
    gp[j].panels = ceil_div(parts[j].out_features, panel);
    gp[j].first_task = tasks;
    tasks += ceil_div(tiles, gp[j].chunk_tiles) * gp[j].panels;
  }
  // task t → its part, row chunk and panel
  struct Task {
    int part, chunk, panel;
  };
  const auto task_at = [&](int t) {
    int j = 0;
    while (j + 1 < n && gp[j + 1].first_task <= t) j++;
    return Task{j, (t - gp[j].first_task) / gp[j].panels, (t - gp[j].first_task) % gp[j].panels};
  };
  const int threads = pool().size();
  pool().parallel_for(tasks, [&](int t, int) {
    const Task at = task_at(t);
    const MatmulPart& p = parts[at.part];
    const size_t wstride = weight_row_bytes(p.type, K);
    const int r0 = at.chunk * gp[at.part].chunk_tiles * T, r1 = std::min(rows, r0 + gp[at.part].chunk_tiles * T);
    const int o0 = at.panel * panel, o1 = std::min(p.out_features, o0 + panel);
    // Tasks are claimed in order, so this thread's next is most likely `threads` further on:
    // its weights are fetched while this panel is computed.
    x86::PrefetchRange next;
    if (t + threads < tasks) {
      const Task nx = task_at(t + threads);
      const MatmulPart& q = parts[nx.part];
      const size_t qstride = weight_row_bytes(q.type, K);
      const int q0 = nx.panel * panel, q1 = std::min(q.out_features, q0 + panel);
      if (nx.part != at.part || nx.panel != at.panel) next = {q.w + qstride * q0, qstride * static_cast<size_t>(q1 - q0)};
    }
    x86::avx512_gemm(p.type, gp[at.part].packed, r0, r1, p.w, wstride, K, o0, o1, p.out, p.out_features, next);
  });
}
#endif

}  // namespace

int matmul_force_isa(int isa) {
  g_isa = isa < 0 ? -1 : std::min(isa, best_isa());
  return current_isa();
}

int matmul_best_isa() { return best_isa(); }

void matmul_set_gemm_min_rows(int rows) { g_gemm_min_rows = std::max(0, rows); }

bool uses_gemm(int type, int rows, int in_features) {
#ifdef LOOM_X86
  return kernels_for(current_isa()).gemm && rows >= gemm_min_rows(type) && x86::avx512_gemm_supports(type, in_features);
#else
  (void)type, (void)rows, (void)in_features;
  return false;
#endif
}

namespace {

const char* act_name(Act a) {
  switch (a) {
    case Act::kF32: return "f32";
    case Act::kF16: return "f16";
    case Act::kBF16: return "bf16";
    case Act::kQ8_0: return "q8_0";
    case Act::kQ8_K: return "q8_k";
  }
  return "?";
}

// The kernels avx512_dot, avx2_dot and scalar_dot call for a type: {one row, a few rows}.
struct DotNames {
  const char* one;
  const char* few;
};

DotNames avx512_names(int type) {
  switch (type) {
    case kF32: return {"avx512:dot_float_rows<f32>", "avx512:dot_float_rows<f32>"};
    case kF16: return {"avx512:dot_float_rows<f16>", "avx512:dot_float_rows<f16>"};
    case kBF16: return {"avx512:dot_bf16_rows", "avx512:dot_bf16_rows"};
    case kQ8_0: return {"avx512:dot_q_0_wrows512<Q8_0>", "avx512:dot_q_0_rows512<Q8_0>"};
    case kQ4_1: return {"avx512:dot_q_0_wrows512<Q4_1>", "avx512:dot_q_0_rows512<Q4_1>"};
    case kQ5_1: return {"avx512:dot_q_0_wrows512<Q5_1>", "avx512:dot_q_0_rows512<Q5_1>"};
    case kQ4_0: return {"avx512:dot_q_0_quad_wrows512<Q4_0>", "avx512:dot_q_0_quad_rows512<Q4_0>"};
    case kIQ4_NL: return {"avx512:dot_q_0_quad_wrows512<IQ4_NL>", "avx512:dot_q_0_quad_rows512<IQ4_NL>"};
    case kQ5_0: return {"avx512:dot_q_0_quad_wrows512<Q5_0>", "avx512:dot_q_0_quad_rows512<Q5_0>"};
    case kQ4_0_R16: return {"avx512:dot_r16<Q4_0_R16>", "avx512:dot_r16<Q4_0_R16>"};
    case kQ8_0_R16: return {"avx512:dot_r16<Q8_0_R16>", "avx512:dot_r16<Q8_0_R16>"};
    case kQ4_K: return {"avx512:dot_q4_k_wrows512<4>", "avx512:dot_q4_k_rows512<4>"};
    case kQ5_K: return {"avx512:dot_q4_k_wrows512<5>", "avx512:dot_q4_k_rows512<5>"};
    case kQ6_K: return {"avx512:dot_q6_k_wrows512", "avx512:dot_q6_k_rows512"};
    case kQ3_K: return {"avx512:dot_q3_k_512", "avx512:dot_q3_k_512"};
    case kQ2_K: return {"avx512:dot_q2_k_512", "avx512:dot_q2_k_512"};
    case kIQ4_XS: return {"avx512:dot_iq4_xs_wrows512", "avx512:dot_iq4_xs_rows"};
    default: return {"", ""};
  }
}

const char* avx2_name(int type) {
  switch (type) {
    case kF32: return "avx2:dot_float_rows<f32>";
    case kF16: return "avx2:dot_float_rows<f16>";
    case kBF16: return "avx2:dot_bf16_rows";
    case kQ8_0: return "avx2:dot_q8_0_rows";
    case kQ4_0: return "avx2:dot_q4_0_rows";
    case kQ4_K: return "avx2:dot_q4_k_rows";
    case kQ6_K: return "avx2:dot_q6_k_rows";
    case kQ4_1: return "avx2:dot_q32_rows<Q4_1>";
    case kQ5_0: return "avx2:dot_q32_rows<Q5_0>";
    case kQ5_1: return "avx2:dot_q32_rows<Q5_1>";
    case kIQ4_NL: return "avx2:dot_q32_rows<IQ4_NL>";
    case kQ2_K: return "avx2:dot_q2_k_rows";
    case kQ3_K: return "avx2:dot_q3_k_rows";
    case kQ5_K: return "avx2:dot_q5_k_rows";
    case kIQ4_XS: return "avx2:dot_iq4_xs_rows";
    case kQ4_0_R16:
    case kQ8_0_R16: return "portable:dot_r16_portable";
    default: return "";
  }
}

const char* portable_name(int type) {
  switch (type) {
    case kF32: return "portable:dot_f32";
    case kF16: return "portable:dot_f16";
    case kBF16: return "portable:dot_bf16";
    case kQ8_0: return "portable:dot_q8_0";
    case kQ4_0: return "portable:dot_q4_0";
    case kQ4_K: return "portable:dot_q4_k";
    case kQ6_K: return "portable:dot_q6_k";
    case kQ4_0_R16:
    case kQ8_0_R16: return "portable:dot_r16_portable";
    default: return "portable:dot_dequantized";
  }
}

const char* gemm_family_name(int type) {
  switch (type) {
    case kF32:
    case kF16: return "f32";
    case kBF16: return "bf16";
    case kQ8_0:
    case kQ4_0:
    case kQ5_0:
    case kIQ4_NL: return "q8";
    case kQ4_K:
    case kQ5_K: return "q4k";
    case kQ6_K:
    case kQ3_K:
    case kIQ4_XS: return "q6k";
    default: return "";
  }
}

}  // namespace

bool kernel_info(int type, KernelInfo* info) {
  const WeightTraits* t = weight_traits(type);
  if (!t) return false;
  const int isa = current_isa();
  DotNames names{portable_name(type), portable_name(type)};
  if (isa == kAvx512) names = avx512_names(type);
  if (isa == kAvx2) names = {avx2_name(type), avx2_name(type)};
  const char* gemm = isa == kAvx512 ? gemm_family_name(type) : "";
  *info = {act_name(t->act), names.one, names.few, gemm, *gemm ? gemm_min_rows(type) : 0, r16_type_of(type)};
  return true;
}

void matmul_set(const float* x, int rows, int in_features, const MatmulPart* parts, int n_parts) {
  if (rows <= 0 || n_parts <= 0 || n_parts > kMaxMatmulParts) return;
  MatmulPart dot[kMaxMatmulParts], gemm[kMaxMatmulParts];
  int n_dot = 0, n_gemm = 0;
  for (int j = 0; j < n_parts; j++) {
    const MatmulPart& p = parts[j];
    if (p.out_features <= 0 || !is_supported_weight_type(p.type)) continue;
    if (uses_gemm(p.type, rows, in_features)) gemm[n_gemm++] = p;
    else dot[n_dot++] = p;
  }
#ifdef LOOM_X86
  if (n_gemm > 0) matmul_gemm_set(x, rows, in_features, gemm, n_gemm);
#endif
  if (n_dot > 0) matmul_dot_set(kernels_for(current_isa()), x, rows, in_features, dot, n_dot);
}

void matmul(float* out, const float* x, int rows, const uint8_t* w, int type, int in_features, int out_features) {
  const MatmulPart part{out, w, type, out_features};
  matmul_set(x, rows, in_features, &part, 1);
}

void embed_rows(float* out, const uint8_t* table, int type, int dim, int n_rows, const int32_t* ids, int n_ids) {
  const size_t stride = weight_row_bytes(type, dim);
  for (int t = 0; t < n_ids; t++) {
    const int32_t id = ids[t];
    float* dst = out + static_cast<size_t>(t) * dim;
    if (id < 0 || id >= n_rows) {
      std::fill(dst, dst + dim, 0.f);  // callers validate ids; never read outside the table
      continue;
    }
    if (r16_plain_type(type) >= 0) dequantize_r16_row(type, table, dim, id, dst);
    else dequantize_row(type, table + stride * static_cast<size_t>(id), dim, dst);
  }
}

}  // namespace loom
