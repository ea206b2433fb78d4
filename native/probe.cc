// Machine probes (see probe.h). The vector loops live in native/x86/probe_*.cc; this file
// times them on the pool and holds the portable fallbacks.
#include "probe.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cpu.h"
#include "huge-pages.h"
#include "threadpool.h"
#include "x86/matmul_x86.h"

namespace loom {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best time of passes of f(): one warm pass, then passes until `budget` seconds are spent
// (at least `min_passes`).
template <class F>
double best_pass(double budget, int min_passes, const F& f) {
  f();
  double best = 1e300, spent = 0;
  for (int pass = 0; pass < min_passes || spent < budget; pass++) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double t = seconds_since(t0);
    best = std::min(best, t);
    spent += t;
    if (pass > 10000) break;
  }
  return best;
}

// 12 scalar chains: the portable stand-in (no vector FMA known to this build).
float fma_chains_scalar(int64_t iters) {
  volatile float mv = 0.999999f, cv = 1e-6f;
  const float m = mv, c = cv;
  float a[12];
  for (int k = 0; k < 12; k++) a[k] = 1.0f + 0.1f * static_cast<float>(k);
  for (int64_t i = 0; i < iters; i++)
    for (int k = 0; k < 12; k++) a[k] = a[k] * m + c;
  float s = 0;
  for (float v : a) s += v;
  return s;
}

uint64_t read_sum_scalar(const uint64_t* p, int64_t n, int64_t ahead) {
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  const char* c = reinterpret_cast<const char*>(p) + ahead;
  for (; i + 4 <= n; i += 4) {
    if (ahead > 0 && (i & 7) == 0) __builtin_prefetch(c + 8 * i);
    s0 += p[i];
    s1 += p[i + 1];
    s2 += p[i + 2];
    s3 += p[i + 3];
  }
  for (; i < n; i++) s0 += p[i];
  return s0 + s1 + s2 + s3;
}

using FmaLoop = float (*)(int64_t);
using ReadLoop = uint64_t (*)(const uint64_t*, int64_t, int64_t);
constexpr int64_t kReadAhead = LOOM_PREFETCH_AHEAD;  // bytes, as the matmul kernels

bool has512() {
#if defined(__x86_64__) && !defined(LOOM_NO_X86)
  return cpu_features().avx512f;
#else
  return false;
#endif
}

bool has256() {
#if defined(__x86_64__) && !defined(LOOM_NO_X86)
  return cpu_features().avx2 && cpu_features().fma;
#else
  return false;
#endif
}

FmaLoop fma_loop(int bits) {
#if defined(__x86_64__) && !defined(LOOM_NO_X86)
  if (bits == 512 && has512()) return x86::fma_chains_avx512;
  if (bits == 256 && has256()) return x86::fma_chains_avx2;
#endif
  return bits == 32 ? fma_chains_scalar : nullptr;
}

ReadLoop read_loop() {
#if defined(__x86_64__) && !defined(LOOM_NO_X86)
  if (has512()) return x86::read_sum_avx512;
  if (has256()) return x86::read_sum_avx2;
#endif
  return read_sum_scalar;
}

volatile float g_fma_sink;
volatile uint64_t g_read_sink;

}  // namespace

int probe_fma_widest_bits() { return has512() ? 512 : has256() ? 256 : 32; }

namespace {

// Runs loop(iters) on every pool thread, iters calibrated to short passes (about seconds/32,
// at least 5 ms, so that on a busy machine some of them run undisturbed); returns
// iterations a second over all threads in the best pass.
template <class Loop>
double best_rate(double seconds, Loop loop, float* sink_out) {
  ThreadPool& p = pool();
  const int threads = p.size();
  std::vector<float> sink(static_cast<size_t>(threads) * 16);
  int64_t iters = 1 << 16;
  const auto run = [&] {
    p.parallel_for(threads, [&](int task, int) { sink[static_cast<size_t>(task) * 16] = loop(iters); });
  };
  const double target = std::max(0.005, seconds / 32);
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const double t = seconds_since(t0);
    if (t >= target / 4 || iters > (int64_t{1} << 40)) {
      iters = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iters) * target / std::max(t, 1e-9)));
      break;
    }
    iters *= 4;
  }
  const double t = best_pass(seconds, 3, run);
  float s = 0;
  for (int k = 0; k < threads; k++) s += sink[static_cast<size_t>(k) * 16];
  *sink_out = s;
  return static_cast<double>(iters) * threads / t;
}

}  // namespace

double probe_fma_peak(double seconds, int bits) {
  if (bits == 0) bits = probe_fma_widest_bits();
  const FmaLoop loop = fma_loop(bits);
  if (!loop) return -1;
  float sink;
  const double rate = best_rate(seconds, loop, &sink);
  g_fma_sink = sink;
  return 2.0 * (bits / 32) * 12 * rate / 1e9;  // 12 chains of bits/32 lanes, 2 flops each
}

int probe_int8_kind() {
#if defined(__x86_64__) && !defined(LOOM_NO_X86)
  if (has512() && cpu_features().avx512vnni) return 512;
  if (has256()) return 256;
#endif
  return 32;
}

namespace {

// kInt8Chains scalar chains of 4 byte products each: the portable stand-in.
float int8_chains_scalar(int64_t iters) {
  volatile int8_t uv = 3;
  int32_t acc[kInt8Chains] = {};
  for (int64_t i = 0; i < iters; i++) {
    const int32_t u = uv;
    for (int k = 0; k < kInt8Chains; k++) acc[k] += u * (k - 6) + u * (k - 5) + u * (k - 4) + u * (k - 3);
  }
  int32_t s = 0;
  for (int32_t v : acc) s += v;
  return static_cast<float>(s);
}

}  // namespace

double probe_int8_peak(double seconds) {
  const int kind = probe_int8_kind();
  float sink = 0;
  double rate;
#if defined(__x86_64__) && !defined(LOOM_NO_X86)
  if (kind != 32) rate = best_rate(seconds, kind == 512 ? x86::int8_chains_avx512 : x86::int8_chains_avx2, &sink);
  else
#endif
    rate = best_rate(seconds, int8_chains_scalar, &sink);
  g_fma_sink = sink;
  return 2.0 * (kind / 8) * kInt8Chains * rate / 1e9;  // chains of kind/8 byte products, 2 ops each
}

double probe_read_bandwidth(int64_t bytes, double seconds) {
  const int64_t n = std::max<int64_t>(bytes / 8, 1024) & ~int64_t{63};
  // on huge pages, as loom's weights and KV cache (the best read this machine gives them)
  void* mem = alloc_large(static_cast<size_t>(n) * 8);
  if (!mem) return -1;
  uint64_t* buf = static_cast<uint64_t*>(mem);
  ThreadPool& p = pool();
  const int threads = p.size();
  const ReadLoop loop = read_loop();
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);
  const auto share = [&](int task, int64_t& lo, int64_t& hi) {
    lo = (n * task / threads) & ~int64_t{7};
    hi = task + 1 == threads ? n : (n * (task + 1) / threads) & ~int64_t{7};
  };
  // first touch by the thread that reads it
  p.parallel_for(threads, [&](int task, int) {
    int64_t lo, hi;
    share(task, lo, hi);
    for (int64_t i = lo; i < hi; i++) buf[i] = static_cast<uint64_t>(i);
  });
  int pass = 0;
  const double t = best_pass(seconds, 4, [&] {
    const int64_t ahead = pass++ % 2 ? kReadAhead : 0;
    p.parallel_for(threads, [&](int task, int) {
      int64_t lo, hi;
      share(task, lo, hi);
      sums[static_cast<size_t>(task) * 8] = loop(buf + lo, hi - lo, ahead);
    });
  });
  uint64_t s = 0;
  for (int k = 0; k < threads; k++) s += sums[static_cast<size_t>(k) * 8];
  g_read_sink = s;
  free_large(mem, static_cast<size_t>(n) * 8);
  return static_cast<double>(n) * 8 / t / 1e9;
}

}  // namespace loom
