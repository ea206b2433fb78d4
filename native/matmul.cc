// matmul: activation preparation, work partitioning over loom::pool(), and embed_rows. The
// kernels are the weight type's row of weight-types.h for the instruction set in use
// (AVX-512, AVX2 or portable), looked up once per weight per call.
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
#include "matmul-internal.h"

#if (defined(__x86_64__) || defined(_M_X64)) && !defined(LOOM_NO_X86)  // LOOM_NO_X86: test the portable build
#define LOOM_X86 1
#endif

namespace loom {

bool is_supported_weight_type(int type) { return weight_traits(type) != nullptr; }

namespace {

// ---- kernel path selection ----

// The CPU's features, less what LOOM_NO_SIMD switches off (as for the other kernels)
int detect_isa() {
#ifdef LOOM_X86
  if (use_avx512()) return kIsaAvx512;
  if (use_avx2()) return kIsaAvx2;
#endif
  return kIsaPortable;
}

int best_isa() {
  static const int isa = detect_isa();
  return isa;
}

int g_isa = -1;             // forced path, -1 = best
int g_gemm_min_rows = 0;    // forced GEMM threshold, 0 = per type (gemm_min_rows)

// rows from which a weight's GEMM runs (per type: its GemmKernel's min_rows)
int gemm_min_rows(const GemmKernel& g) { return g_gemm_min_rows > 0 ? g_gemm_min_rows : g.min_rows; }

}  // namespace

int current_isa() { return g_isa < 0 ? best_isa() : g_isa; }

PrepareFn prepare_for(int isa) {
#ifdef LOOM_X86
  if (isa == kIsaAvx512) return x86::avx512_prepare_dot_row;
  if (isa == kIsaAvx2) return x86::avx2_prepare_row;
#else
  (void)isa;
#endif
  return prepare_row_scalar;
}

namespace {

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
  DotFn dot;  // its type's kernel on this instruction set
  size_t wstride;
  const uint8_t* xa;  // prepared activations (x itself for F32)
  size_t xstride;
};

// Prepares x for every kind of activation the parts need, once per kind, into t_xa.
void prepare_parts(int isa, const float* x, int rows, int K, const MatmulPart* parts, int n, DotPart* dp) {
  const PrepareFn prepare = prepare_for(isa);
  int owner[kMaxMatmulParts];  // the first part with the same kind of prepared row; -1: F32 (x as it is)
  size_t offset[kMaxMatmulParts];
  size_t bytes = 0;
  for (int j = 0; j < n; j++) {
    const int type = parts[j].type;
    const WeightTraits* t = weight_traits(type);
    dp[j] = {&parts[j], t->dot[isa].fn, weight_row_bytes(type, K), reinterpret_cast<const uint8_t*>(x),
             4 * static_cast<size_t>(K)};
    owner[j] = t->act == Act::kF32 ? -1 : j;
    for (int i = 0; i < j && owner[j] == j; i++)
      if (owner[i] == i && weight_traits(parts[i].type)->act == t->act) owner[j] = i;
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
      // 8 rows a task: a row takes well under a microsecond, and a task per row spent as
      // long on claiming tasks (an atomic the threads share) as on the rows
      constexpr int kPrepRows = 8;
      auto prep = [&](int t, int) {
        for (int r = t * kPrepRows; r < std::min(rows, (t + 1) * kPrepRows); r++) prepare(type, x + static_cast<size_t>(r) * K, K, dst + xs * r);
      };
      pool().parallel_for(ceil_div(rows, kPrepRows), prep);
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

void matmul_dot_set(int isa, const float* x, int rows, int K, const MatmulPart* parts, int n) {
  DotPart dp[kMaxMatmulParts];
  prepare_parts(isa, x, rows, K, parts, n, dp);
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
      d.dot(d.xa, d.xstride, rows, d.part->w, d.wstride, K, o0, o1, d.part->out, N);
    }
  });
}

#ifdef LOOM_X86
// ---- many rows (a GEMM): pack x once in 16-row tiles, then tile rows × outputs ----
//
// As for the dot kernels, a set of weights that read the same activations runs as one: x is
// packed once per activation kind, and every part's (row chunk, output panel) pairs are the
// tasks of one parallel region, so q/k/v (or gate/up) pay one packing and one barrier.

struct GemmPart {
  GemmFn gemm;            // its type's GEMM
  const uint8_t* packed;  // the part's activation kind, every 16-row tile
  size_t tile_bytes;
  int chunk_tiles;  // tiles per row chunk
  int panels;       // output panels
  int first_task;   // its tasks are [first_task, first_task + row chunks × panels)
};

void matmul_gemm_set(int isa, const float* x, int rows, int K, const MatmulPart* parts, int n) {
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
    gp[j].gemm = weight_traits(parts[j].type)->gemm[isa].fn;
    gp[j].tile_bytes = gemm_tile_bytes(isa, parts[j].type, K);
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
    gemm_pack_tile(isa, parts[j].type, x, rows, K, tile, buf + offset[j] + gp[j].tile_bytes * tile);
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
    GemmPrefetch next;
    if (t + threads < tasks) {
      const Task nx = task_at(t + threads);
      const MatmulPart& q = parts[nx.part];
      const size_t qstride = weight_row_bytes(q.type, K);
      const int q0 = nx.panel * panel, q1 = std::min(q.out_features, q0 + panel);
      if (nx.part != at.part || nx.panel != at.panel) next = {q.w + qstride * q0, qstride * static_cast<size_t>(q1 - q0)};
    }
    gp[at.part].gemm(gp[at.part].packed, r0, r1, p.w, wstride, K, o0, o1, p.out, p.out_features, next);
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

bool uses_gemm(const WeightTraits& t, int isa, int rows, int in_features) {
  const GemmKernel& g = t.gemm[isa];
  return g.fn && rows >= gemm_min_rows(g) && in_features % g.k_multiple == 0;
}

size_t gemm_tile_bytes(int isa, int type, int K) {
#ifdef LOOM_X86
  if (isa == kIsaAvx512) return x86::avx512_gemm_tile_bytes(type, K);
  if (isa == kIsaAvx2) return x86::avx2_gemm_tile_bytes(type, K);
#endif
  (void)isa, (void)type, (void)K;
  return 0;
}

void gemm_pack_tile(int isa, int type, const float* x, int rows, int K, int tile, uint8_t* dst) {
#ifdef LOOM_X86
  if (isa == kIsaAvx512) return x86::avx512_gemm_pack(type, x, rows, K, tile, dst);
  if (isa == kIsaAvx2) return x86::avx2_gemm_pack(type, x, rows, K, tile, dst);
#endif
  (void)isa, (void)type, (void)x, (void)rows, (void)K, (void)tile, (void)dst;
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

}  // namespace

bool kernel_info(int type, KernelInfo* info) {
  const WeightTraits* t = weight_traits(type);
  if (!t) return false;
  const int isa = current_isa();
  const DotKernel& d = t->dot[isa];
  const GemmKernel& g = t->gemm[isa];
  *info = {act_name(t->act), d.one_row, d.few_rows, g.fn ? g.family : "", g.fn ? gemm_min_rows(g) : 0, t->layout};
  return true;
}

void matmul_set(const float* x, int rows, int in_features, const MatmulPart* parts, int n_parts) {
  if (rows <= 0 || n_parts <= 0 || n_parts > kMaxMatmulParts) return;
  const int isa = current_isa();
  MatmulPart dot[kMaxMatmulParts], gemm[kMaxMatmulParts];
  int n_dot = 0, n_gemm = 0;
  for (int j = 0; j < n_parts; j++) {
    const MatmulPart& p = parts[j];
    const WeightTraits* t = weight_traits(p.type);
    if (p.out_features <= 0 || !t) continue;
    if (uses_gemm(*t, isa, rows, in_features)) gemm[n_gemm++] = p;
    else dot[n_dot++] = p;
  }
#ifdef LOOM_X86
  if (n_gemm > 0) matmul_gemm_set(isa, x, rows, in_features, gemm, n_gemm);
#endif
  if (n_dot > 0) matmul_dot_set(isa, x, rows, in_features, dot, n_dot);
}

void matmul(float* out, const float* x, int rows, const uint8_t* w, int type, int in_features, int out_features) {
  const MatmulPart part{out, w, type, out_features};
  matmul_set(x, rows, in_features, &part, 1);
}

void embed_rows(float* out, const uint8_t* table, int type, int dim, int n_rows, const int32_t* ids, int n_ids) {
  const WeightTraits* traits = weight_traits(type);
  if (!traits) return;
  const size_t stride = weight_row_bytes(type, dim);
  for (int t = 0; t < n_ids; t++) {
    const int32_t id = ids[t];
    float* dst = out + static_cast<size_t>(t) * dim;
    if (id < 0 || id >= n_rows) {
      std::fill(dst, dst + dim, 0.f);  // callers validate ids; never read outside the table
      continue;
    }
    if (traits->plain >= 0) dequantize_r16_row(type, table, dim, id, dst);
    else dequantize_row(type, table + stride * static_cast<size_t>(id), dim, dst);
  }
}

}  // namespace loom
