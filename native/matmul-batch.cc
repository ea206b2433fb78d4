// matmul_batch: many independent matmul_sets in two parallel regions. A mixture of experts
// runs, per step, one small product per active expert (a few tokens each when many sequences
// decode); a matmul_set per expert pays a preparation, a partition and a barrier each, and
// with 2-rows products those dominate. Here every job's activations are prepared (or, for the
// AVX-512 GEMM, packed) in one region, then every job's (weight, output rows) units are the
// tasks of one region. Each unit calls the kernel matmul_set would call for its job (the same
// type row, the same row count: dot or GEMM by the job's rows), with output rows cut at
// multiples of 16 as matmul_set cuts them, so every output is bit for bit matmul_set's.
// No -m flags here (see matmul.cc).
#include <algorithm>
#include <vector>

#include "matmul-internal.h"
#include "matmul.h"
#include "quant.h"
#include "threadpool.h"
#include "x86/matmul_x86.h"

#if (defined(__x86_64__) || defined(_M_X64)) && !defined(LOOM_NO_X86)  // LOOM_NO_X86: test the portable build
#define LOOM_X86 1
#endif

namespace loom {

namespace {

// One weight of one job, and where its prepared activations are.
struct Plan {
  const MatmulJob* job;
  const MatmulPart* part;
  const WeightTraits* traits;
  bool gemm;
  size_t wstride;
  int owner;        // the plan whose prepared rows this one reads (itself, another of its job, or -1: x as it is)
  size_t offset;    // bytes into the prepared buffer (owners only)
  size_t xstride;   // dot: bytes between prepared rows; GEMM: bytes of a packed 16-row tile
  const uint8_t* xa;
  int chunk_tiles;  // GEMM: 16-row tiles a row chunk
  int panels;       // GEMM: output panels
};

// A task: outputs [o0, o1) of plan `plan` against its job's rows [r0, r1) (all of them for a dot unit).
struct Unit {
  int plan;
  int o0, o1;
  int r0, r1;
};

// A preparation step: row (dot) or tile (GEMM) `index` of an owner plan.
struct Prep {
  int plan;
  int index;
};

thread_local Scratch t_prepared;
thread_local std::vector<Plan> t_plans;
thread_local std::vector<Unit> t_units;
thread_local std::vector<Prep> t_preps;

#ifdef LOOM_X86
constexpr int kTile = x86::kGemmTile;
constexpr int kPanel = x86::kGemmPanel;
#else
constexpr int kTile = 16;
constexpr int kPanel = 48;
#endif

// The plans of every job's weights; activations shared within a job by weights of the same
// path (dot or GEMM) and activation kind, as matmul_set shares them. Returns the prepared bytes.
size_t plan_jobs(int isa, const MatmulJob* jobs, int n_jobs, std::vector<Plan>& plans) {
  plans.clear();
  size_t bytes = 0;
  for (int j = 0; j < n_jobs; j++) {
    const MatmulJob& job = jobs[j];
    if (job.rows <= 0) continue;
    const size_t first = plans.size();
    for (int p = 0; p < std::min(job.n_parts, kMaxMatmulParts); p++) {
      const MatmulPart& part = job.parts[p];
      const WeightTraits* t = weight_traits(part.type);
      if (part.out_features <= 0 || !t) continue;
      Plan plan{&job, &part, t, uses_gemm(*t, isa, job.rows, job.in_features), weight_row_bytes(part.type, job.in_features),
                static_cast<int>(plans.size()), 0, 0, nullptr, 0, 0};
      if (!plan.gemm && t->act == Act::kF32) {
        plan.owner = -1;
        plan.xa = reinterpret_cast<const uint8_t*>(job.x);
        plan.xstride = 4 * static_cast<size_t>(job.in_features);
      } else {
        for (size_t i = first; i < plans.size(); i++)
          if (plans[i].owner == static_cast<int>(i) && plans[i].gemm == plan.gemm && plans[i].traits->act == t->act)
            plan.owner = static_cast<int>(i);
        if (plan.owner == static_cast<int>(plans.size())) {
          plan.offset = bytes;
          if (plan.gemm) {
            plan.xstride = gemm_tile_bytes(isa, part.type, job.in_features);
            bytes += plan.xstride * ceil_div_int(job.rows, kTile);
          } else {
            plan.xstride = prepared_row_bytes(part.type, job.in_features);
            bytes += plan.xstride * job.rows;
          }
          bytes = (bytes + 63) & ~size_t{63};
        }
      }
      plans.push_back(plan);
    }
  }
  return bytes;
}

}  // namespace

void matmul_batch(const MatmulJob* jobs, int n_jobs) {
  const int isa = current_isa();
  std::vector<Plan>& plans = t_plans;
  const size_t bytes = plan_jobs(isa, jobs, n_jobs, plans);
  if (plans.empty()) return;
  uint8_t* buf = bytes ? t_prepared.get(bytes) : nullptr;
  const int n_plans = static_cast<int>(plans.size());

  // ---- prepare (or pack) each job's activations once per kind ----
  std::vector<Prep>& preps = t_preps;
  preps.clear();
  for (int i = 0; i < n_plans; i++) {
    Plan& p = plans[i];
    if (p.owner == i) {
      const int n = p.gemm ? ceil_div_int(p.job->rows, kTile) : p.job->rows;
      for (int r = 0; r < n; r++) preps.push_back({i, r});
    }
  }
  for (Plan& p : plans)
    if (p.owner >= 0) {
      const Plan& o = plans[p.owner];
      p.xa = buf + o.offset;
      p.xstride = o.xstride;
    }
  const PrepareFn prepare = prepare_for(isa);
  const auto prep = [&](int i, int) {
    const Prep& s = preps[i];
    const Plan& p = plans[s.plan];
    const MatmulJob& job = *p.job;
    uint8_t* dst = buf + p.offset + p.xstride * s.index;
    if (p.gemm) gemm_pack_tile(isa, p.part->type, job.x, job.rows, job.in_features, s.index, dst);
    else prepare(p.part->type, job.x + static_cast<size_t>(s.index) * job.in_features, job.in_features, dst);
  };
  const int n_preps = static_cast<int>(preps.size());
  if (n_preps >= 8) pool().parallel_for(n_preps, prep);
  else
    for (int i = 0; i < n_preps; i++) prep(i, 0);

  // ---- units: dot weights in ranges of output rows (multiples of 16) of about equal bytes,
  // GEMM weights in (row chunk, 48-output panel) pairs as matmul_set's GEMM cuts them ----
  const int threads = pool().size();
  size_t dot_bytes = 0;
  for (const Plan& p : plans)
    if (!p.gemm) dot_bytes += p.wstride * static_cast<size_t>(p.part->out_features);
  // ~4 units a thread over all the dot weights, never under 16 KB; claimed in order, so the
  // many small experts of a step balance over the threads
  const size_t target = std::max<size_t>(16384, dot_bytes / (4 * static_cast<size_t>(threads)));
  std::vector<Unit>& units = t_units;
  units.clear();
  for (int i = 0; i < n_plans; i++) {
    Plan& p = plans[i];
    const int N = p.part->out_features, rows = p.job->rows;
    if (p.gemm) {
      const int tiles = ceil_div_int(rows, kTile);
      p.chunk_tiles = std::max<int>(4, static_cast<int>((768u << 10) / p.xstride)) & ~3;
      p.panels = ceil_div_int(N, kPanel);
      for (int c = 0; c * p.chunk_tiles < tiles; c++)
        for (int q = 0; q < p.panels; q++)
          units.push_back({i, q * kPanel, std::min(N, (q + 1) * kPanel), c * p.chunk_tiles * kTile,
                           std::min(rows, (c + 1) * p.chunk_tiles * kTile)});
    } else {
      const size_t part_bytes = p.wstride * static_cast<size_t>(N);
      const int pieces = static_cast<int>(std::min<size_t>((part_bytes + target - 1) / target, static_cast<size_t>(ceil_div_int(N, 16))));
      const int step = ceil_div_int(ceil_div_int(N, std::max(1, pieces)), 16) * 16;
      for (int o0 = 0; o0 < N; o0 += step) units.push_back({i, o0, std::min(N, o0 + step), 0, rows});
    }
  }

  const int n_units = static_cast<int>(units.size());
  pool().parallel_for(n_units, [&](int u, int) {
    const Unit& at = units[u];
    const Plan& p = plans[at.plan];
    const MatmulPart& part = *p.part;
    const int K = p.job->in_features;
    if (p.gemm) {
      // this thread's next unit is most likely `threads` on: fetch its weights meanwhile
      GemmPrefetch next;
      if (u + threads < n_units) {
        const Unit& nx = units[u + threads];
        const Plan& q = plans[nx.plan];
        if (nx.plan != at.plan || nx.o0 != at.o0) next = {q.part->w + q.wstride * nx.o0, q.wstride * static_cast<size_t>(nx.o1 - nx.o0)};
      }
      p.traits->gemm[isa].fn(p.xa, at.r0, at.r1, part.w, p.wstride, K, at.o0, at.o1, part.out, part.out_features, next);
    } else {
      // warm the first lines the kernel's own prefetch runs ahead of (see matmul_dot_set)
      const uint8_t* first = part.w + p.wstride * static_cast<size_t>(at.o0);
      const size_t warm = std::min<size_t>(8192, p.wstride * static_cast<size_t>(at.o1 - at.o0));
      for (size_t off = 0; off < warm; off += 64) __builtin_prefetch(first + off);
      p.traits->dot[isa].fn(p.xa, p.xstride, p.job->rows, part.w, p.wstride, K, at.o0, at.o1, part.out, part.out_features);
    }
  });
}

}  // namespace loom
