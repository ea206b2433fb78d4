#include "cpu.h"

#include <cstdlib>
#include <cstring>

namespace loom {

namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  // libgcc also checks that the OS saves the AVX / AVX-512 register state (XGETBV).
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = __builtin_cpu_supports("f16c");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
  f.bmi2 = __builtin_cpu_supports("bmi2");
#elif defined(__aarch64__)
  f.neon = true;  // Advanced SIMD is mandatory on AArch64
#endif
  return f;
}

// LOOM_NO_SIMD=1 forces the portable kernels (LOOM_NO_SIMD=avx512 drops only AVX-512).
const char* no_simd() {
  const char* v = std::getenv("LOOM_NO_SIMD");
  return v && *v && v[0] != '0' ? v : nullptr;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

bool use_avx2() {
  static const bool ok = [] {
    const CpuFeatures& f = cpu_features();
    const char* off = no_simd();
    return f.avx2 && f.fma && f.f16c && !(off && std::strcmp(off, "avx512") != 0);
  }();
  return ok;
}

bool use_avx512() {
  static const bool ok = [] {
    const CpuFeatures& f = cpu_features();
    return use_avx2() && !no_simd() && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni && f.avx512bf16 && f.bmi2;
  }();
  return ok;
}

}  // namespace loom
