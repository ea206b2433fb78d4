// Standalone checks and timings of loom::matmul on every weight type and kernel path.
//   matmul_test check   — every type × path × awkward shape against a double-precision oracle
//                          (dequantized weights · rounded activations), plus bit-exact activation
//                          preparation (SIMD vs scalar)
//   matmul_test bench   — read bandwidth and FMA peak of this machine, then matmul at 1 row
//                          (GB/s of weights) and 512 rows (GFLOP/s) per type
//   matmul_test one TYPE ROWS K N [reps], ratio TYPE K N [rounds], ffn TYPE [layers],
//   model [TYPE] — single configurations (see each below)
// Built by native/test/Makefile with g++ directly (no node-gyp).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#if (defined(__x86_64__) || defined(_M_X64)) && !defined(LOOM_NO_X86)
#define LOOM_TEST_X86 1
#include <immintrin.h>
#endif

#include "../huge-pages.h"
#include "../matmul.h"
#include "../r16.h"
#include "../quant.h"
#include "../threadpool.h"
#include "../x86/matmul_x86.h"

using namespace loom;

namespace {

const int kTypes[] = {kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ5_0, kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kIQ4_XS, kMXFP4};
const char* type_name(int t) {
  switch (t) {
    case kF32: return "F32";
    case kF16: return "F16";
    case kBF16: return "BF16";
    case kQ8_0: return "Q8_0";
    case kQ4_0: return "Q4_0";
    case kQ4_0_R16: return "Q4R16";
    case kQ8_0_R16: return "Q8R16";
    case kQ5_0: return "Q5_0";
    case kQ2_K: return "Q2_K";
    case kQ3_K: return "Q3_K";
    case kQ4_K: return "Q4_K";
    case kQ5_K: return "Q5_K";
    case kQ6_K: return "Q6_K";
    case kIQ4_XS: return "IQ4_XS";
    case kMXFP4: return "MXFP4";
    default: return "?";
  }
}
const char* isa_name(int isa) { return isa == 2 ? "avx512" : isa == 1 ? "avx2" : "scalar"; }

std::mt19937 rng(1234);

float normal(float sd) { return std::normal_distribution<float>(0.f, sd)(rng); }
int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
void put_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

// Random but valid weight rows of `type`: [N, K].
std::vector<uint8_t> random_weights(int type, int K, int N) {
  const size_t stride = weight_row_bytes(type, K);
  std::vector<uint8_t> w(stride * N);
  for (int o = 0; o < N; o++) {
    uint8_t* row = w.data() + stride * o;
    switch (type) {
      case kF32:
        for (int i = 0; i < K; i++) {
          const float v = normal(0.05f);
          std::memcpy(row + 4 * i, &v, 4);
        }
        break;
      case kF16:
        for (int i = 0; i < K; i++) put_f16(row + 2 * i, normal(0.05f));
        break;
      case kBF16:
        for (int i = 0; i < K; i++) {
          const uint16_t b = f32_to_bf16(normal(0.05f));
          std::memcpy(row + 2 * i, &b, 2);
        }
        break;
      case kQ8_0:
        for (int b = 0; b < K / 32; b++) {
          uint8_t* p = row + 34 * b;
          put_f16(p, 0.001f * uniform(1, 100));
          for (int j = 0; j < 32; j++) p[2 + j] = static_cast<uint8_t>(uniform(-127, 127));
        }
        break;
      case kQ4_0:
        for (int b = 0; b < K / 32; b++) {
          uint8_t* p = row + 18 * b;
          put_f16(p, 0.001f * uniform(1, 100));
          for (int j = 0; j < 16; j++) p[2 + j] = static_cast<uint8_t>(uniform(0, 255));
        }
        break;
      case kQ5_0:  // d, 32 fifth bits, 16 nibble bytes
        for (int b = 0; b < K / 32; b++) {
          uint8_t* p = row + 22 * b;
          put_f16(p, 0.001f * uniform(1, 100));
          for (int j = 2; j < 22; j++) p[j] = static_cast<uint8_t>(uniform(0, 255));
        }
        break;
      case kQ4_K:
        for (int b = 0; b < K / 256; b++) {
          uint8_t* p = row + 144 * b;
          put_f16(p, 0.0005f * uniform(1, 100));
          put_f16(p + 2, 0.0005f * uniform(0, 100));
          for (int j = 4; j < 144; j++) p[j] = static_cast<uint8_t>(uniform(0, 255));
        }
        break;
      case kQ5_K:  // as Q4_K, then 32 bytes of fifth bits before the nibbles
        for (int b = 0; b < K / 256; b++) {
          uint8_t* p = row + 176 * b;
          put_f16(p, 0.0005f * uniform(1, 100));
          put_f16(p + 2, 0.0005f * uniform(0, 100));
          for (int j = 4; j < 176; j++) p[j] = static_cast<uint8_t>(uniform(0, 255));
        }
        break;
      case kQ2_K:  // scales and mins, 2-bit values, then f16 d and dmin
        for (int b = 0; b < K / 256; b++) {
          uint8_t* p = row + 84 * b;
          for (int j = 0; j < 80; j++) p[j] = static_cast<uint8_t>(uniform(0, 255));
          put_f16(p + 80, 0.0005f * uniform(1, 100));
          put_f16(p + 82, 0.0005f * uniform(0, 100));
        }
        break;
      case kQ3_K:  // high bits, 2-bit values, scales, then f16 d
        for (int b = 0; b < K / 256; b++) {
          uint8_t* p = row + 110 * b;
          for (int j = 0; j < 108; j++) p[j] = static_cast<uint8_t>(uniform(0, 255));
          put_f16(p + 108, 0.0005f * uniform(1, 100));
        }
        break;
      case kIQ4_XS:  // d, then scales and nibbles
        for (int b = 0; b < K / 256; b++) {
          uint8_t* p = row + 136 * b;
          put_f16(p, 0.0002f * uniform(1, 100));
          for (int j = 2; j < 136; j++) p[j] = static_cast<uint8_t>(uniform(0, 255));
        }
        break;
      case kMXFP4:  // E8M0 e (now and then a subnormal scale, e < 2), then nibbles
        for (int b = 0; b < K / 32; b++) {
          uint8_t* p = row + 17 * b;
          p[0] = static_cast<uint8_t>(b % 7 == 3 ? uniform(0, 2) : uniform(115, 125));
          for (int j = 1; j < 17; j++) p[j] = static_cast<uint8_t>(uniform(0, 255));
        }
        break;
      case kQ6_K:
        for (int b = 0; b < K / 256; b++) {
          uint8_t* p = row + 210 * b;
          for (int j = 0; j < 208; j++) p[j] = static_cast<uint8_t>(uniform(0, 255));
          put_f16(p + 208, 0.0002f * uniform(1, 100));
        }
        break;
    }
  }
  return w;
}

std::vector<float> random_activations(int rows, int K) {
  std::vector<float> x(static_cast<size_t>(rows) * K);
  for (auto& v : x) v = normal(1.f);
  // a few outliers and exact zeros, as real activations have
  for (size_t i = 0; i < x.size(); i += 97) x[i] *= 20.f;
  for (size_t i = 5; i < x.size(); i += 211) x[i] = 0.f;
  // a block of 32 that is exactly zero (amax = 0 paths)
  if (x.size() >= 64) std::fill(x.begin() + 32, x.begin() + 64, 0.f);
  // ties for round-half-even: values whose scaled magnitude lands on .5
  if (K >= 256) {
    x[0] = 127.f;
    x[1] = 0.5f;
    x[2] = -1.5f;
    x[3] = 2.5f;
  }
  return x;
}

// ---- oracle ----

// out[r, o] = Σ dequant(W)[o, i] · rounded(x)[r, i] in double, and Σ |…| for the error scale.
void oracle(int type, const std::vector<float>& x, int rows, const std::vector<uint8_t>& w, int K, int N,
            std::vector<double>& out, std::vector<double>& mag) {
  const size_t stride = weight_row_bytes(type, K);
  std::vector<float> xr(static_cast<size_t>(rows) * K), wr(K);
  std::vector<uint8_t> prep(prepared_row_bytes(type, K));
  for (int r = 0; r < rows; r++) {
    prepare_row_scalar(type, x.data() + static_cast<size_t>(r) * K, K, prep.data());
    prepared_row_values(type, prep.data(), K, xr.data() + static_cast<size_t>(r) * K);
  }
  out.assign(static_cast<size_t>(rows) * N, 0);
  mag.assign(static_cast<size_t>(rows) * N, 0);
  for (int o = 0; o < N; o++) {
    dequantize_row(type, w.data() + stride * o, K, wr.data());
    for (int r = 0; r < rows; r++) {
      double s = 0, m = 0;
      const float* xp = xr.data() + static_cast<size_t>(r) * K;
      for (int i = 0; i < K; i++) {
        s += static_cast<double>(wr[i]) * xp[i];
        m += std::fabs(static_cast<double>(wr[i]) * xp[i]);
      }
      out[static_cast<size_t>(r) * N + o] = s;
      mag[static_cast<size_t>(r) * N + o] = m;
    }
  }
}

int g_failures = 0;

// Max over outputs of |got − oracle| / (Σ|w·x| / sqrt(K)) — error relative to the typical size of
// an output (a random-signed sum of K terms), so it does not blow up on outputs near zero.
// interleaved: weights of a plain type (Q4_0, Q8_0), checked against the oracle of their plain
// form, computed in its layout interleaved by 16 rows (N a multiple of 16).
void check_case(int type, int isa, int rows, int K, int N, int gemm_min_rows, bool interleaved = false) {
  auto w = random_weights(type, K, N);
  const auto x = random_activations(rows, K);
  std::vector<double> ref, mag;
  oracle(type, x, rows, w, K, N, ref, mag);
  if (interleaved) {
    type = r16_type_of(type);
    interleave_r16(type, w.data(), K, N);
  }
  matmul_force_isa(isa);
  matmul_set_gemm_min_rows(gemm_min_rows);
  std::vector<float> out(static_cast<size_t>(rows) * N, NAN);
  matmul(out.data(), x.data(), rows, w.data(), type, K, N);
  // worst: per output, relative to its typical size; suite: max |diff| / max |oracle| (the
  // TS conformance suite's measure, bound 1e-5 for float weights and 2e-5 for quantized ones)
  double worst = 0, diff = 0, scale = 0;
  for (size_t i = 0; i < out.size(); i++) {
    const double typical = mag[i] / std::sqrt(static_cast<double>(K)) + 1e-30;
    const double d = std::isfinite(out[i]) ? std::fabs(out[i] - ref[i]) : INFINITY;
    worst = std::max(worst, d / typical);
    diff = std::max(diff, d);
    scale = std::max(scale, std::fabs(ref[i]));
  }
  const double suite = diff / scale;
  // (the suite's measure only over many outputs: one output may be a sum that cancels, and
  // then max |oracle| is far below a typical output's size)
  const bool ok = worst <= 1e-4 && (out.size() < 16 || suite <= 5e-6);
  if (!ok) g_failures++;
  std::printf("  %-5s %-6s rows=%-4d K=%-5d N=%-5d gemm>=%-4d err %.2e (suite measure %.2e) %s\n", type_name(type),
              isa_name(isa), rows, K, N, gemm_min_rows, worst, suite, ok ? "ok" : "FAIL");
}

// Every row of an interleaved tensor dequantizes to its plain row, bit for bit.
void check_r16_rows(int plain) {
  const int K = 96, N = 48, type = r16_type_of(plain);
  auto w = random_weights(plain, K, N);
  const std::vector<uint8_t> rows = w;
  interleave_r16(type, w.data(), K, N);
  std::vector<float> a(K), b(K);
  int bad = 0;
  for (int o = 0; o < N; o++) {
    dequantize_row(plain, rows.data() + weight_row_bytes(plain, K) * o, K, a.data());
    dequantize_r16_row(type, w.data(), K, o, b.data());
    bad += std::memcmp(a.data(), b.data(), 4 * K) != 0;
  }
  if (bad) g_failures++;
  std::printf("  %s rows: %d of %d differ from the %s rows %s\n", type_name(type), bad, N, type_name(plain), bad ? "FAIL" : "ok");
}

// SIMD activation preparation must equal the scalar one byte for byte.
void check_prepare(int isa) {
  for (int type : kTypes) {
    if (type == kF32) continue;
    for (int K : {256, 768, 4096}) {
      const auto x = random_activations(3, K);
      std::vector<float> xx = x;
      // extra edge values: f16 ties/subnormals/overflow, bf16 ties, NaN-free
      for (int i = 8; i < 40 && i < K; i++) xx[i] = std::ldexp(1.f + i / 64.f, -30 + i);
      xx[40] = 65520.f;
      xx[41] = 1.00048828125f;   // f16 tie
      xx[42] = 1.00390625f;      // bf16 tie
      xx[43] = -3e-8f;           // f16 subnormal
      // a block of scale 1 whose values are ties (±0.5, ±1.5, …: round half to even), and one of zeros
      if (K >= 128) {
        for (int i = 64; i < 96; i++) xx[i] = i == 64 ? 127.f : (i % 2 ? -1.f : 1.f) * (i - 64 + 0.5f);
        for (int i = 96; i < 128; i++) xx[i] = 0.f;
      }
      const size_t n = prepared_row_bytes(type, K);
      std::vector<uint8_t> a(n, 0);
      prepare_row_scalar(type, xx.data(), K, a.data());
      // AVX-512: the GEMM packing's preparation and the dot kernels' (avx512/prepare.cc)
      for (int path = 0; path < (isa == 2 ? 2 : 1); path++) {
        std::vector<uint8_t> b(n, 0);
#ifdef LOOM_TEST_X86
        if (isa == 2 && path == 0) x86::avx512_prepare_row(type, xx.data(), K, b.data());
        else if (isa == 2) x86::avx512_prepare_dot_row(type, xx.data(), K, b.data());
        else x86::avx2_prepare_row(type, xx.data(), K, b.data());
#else
        (void)isa;
        b = a;
#endif
        const bool ok = std::memcmp(a.data(), b.data(), n) == 0;
        if (!ok) {
          g_failures++;
          size_t i = 0;
          while (a[i] == b[i]) i++;
          std::printf("  prepare %-5s %-6s%s K=%d FAIL at byte %zu of %zu\n", type_name(type), isa_name(isa), path ? " (dot)" : "", K, i, n);
        }
      }
    }
  }
  std::printf("  prepare (%s) vs scalar: done\n", isa_name(isa));
}

void run_checks() {
  const int best = matmul_best_isa();
  for (int isa = 1; isa <= best; isa++) check_prepare(isa);
  for (int type : kTypes) {
    const int blk = weight_block_values(type) == 1 ? 32 : weight_block_values(type);
    std::vector<int> Ks = {blk == 256 ? 256 : 96, blk * (blk == 256 ? 3 : 24)};
    if (weight_block_values(type) == 1) Ks.push_back(37);  // float types: any K
    // Q8_0 / Q4_0: two whole groups of 16 blocks, then a pair and an odd block
    if (type == kQ8_0 || type == kQ4_0) Ks.insert(Ks.begin() + 1, 32 * 35);
    // Q4_0, Q5_0 (AVX-512, four blocks a step): a group of 16, of 8 and of 4, then three blocks
    if (type == kQ4_0 || type == kQ5_0 || type == kMXFP4) Ks.insert(Ks.begin() + 1, 32 * 31);
    // K-quants: a whole group of 4 blocks and a partial one
    if (blk == 256) Ks.insert(Ks.begin() + 1, 256 * 7);
    for (int isa = 0; isa <= best; isa++) {
      for (int K : Ks)
        for (int rows : {1, 3, 17, 64})
          for (int N : {1, 37, 100}) check_case(type, isa, rows, K, N, 0);
      check_case(type, isa, 512, Ks.back(), 1000, 0);
      if (isa >= 1) {  // the GEMM at small row counts, and the dot kernels at many rows (AVX2: F32, F16)
        check_case(type, isa, 1, Ks.back(), 37, 1);
        check_case(type, isa, 33, Ks.back(), 130, 1);
        check_case(type, isa, 40, Ks.back(), 50, 1000);
      }
    }
  }
  for (int plain : {kQ4_0, kQ8_0}) {
    for (int isa = 0; isa <= best; isa++)
      for (int K : {32, 96, 32 * 35})
        for (int rows : {1, 3, 8, 9, 17, 64})
          for (int N : {16, 48, 112}) check_case(plain, isa, rows, K, N, 0, true);
    for (int isa = 0; isa <= best; isa++) check_case(plain, isa, 512, 32 * 36, 1024, 0, true);
    check_r16_rows(plain);
  }
  matmul_force_isa(-1);
  matmul_set_gemm_min_rows(0);
}

// ---- timings ----

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best time of `reps` runs of fn (after a warm-up).
template <typename F>
double best_time(int reps, F fn) {
  fn();
  double best = 1e30;
  for (int i = 0; i < reps; i++) {
    const double t0 = now();
    fn();
    best = std::min(best, now() - t0);
  }
  return best;
}

#ifdef LOOM_TEST_X86
// Read bandwidth: every pool thread sums its share of a 512 MB buffer (AVX2 loads),
// prefetching `ahead` bytes ahead in software when ahead > 0 (one per 64-byte line).
__attribute__((target("avx2"))) uint64_t sum_range(const uint64_t* p, size_t n, size_t ahead = 0) {
  __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
  const char* c = reinterpret_cast<const char*>(p) + ahead;
  for (size_t i = 0; i + 16 <= n; i += 16) {
    if (ahead) {
      _mm_prefetch(c + 8 * i, _MM_HINT_T0);
      _mm_prefetch(c + 8 * i + 64, _MM_HINT_T0);
    }
    s0 = _mm256_add_epi64(s0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    s1 = _mm256_add_epi64(s1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
    s2 = _mm256_add_epi64(s2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
    s3 = _mm256_add_epi64(s3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
  }
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
  uint64_t l[4];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(l), s);
  return l[0] + l[1] + l[2] + l[3];
}

double measure_bandwidth() {
  const size_t n = (512u << 20) / 8;
  std::vector<uint64_t> buf(n, 1);
  const int threads = pool().size();
  std::vector<uint64_t> sums(threads * 8);
  const double t = best_time(5, [&] {
    pool().parallel_for(threads, [&](int task, int) {
      const size_t lo = n * task / threads, hi = n * (task + 1) / threads;
      sums[task * 8] = sum_range(buf.data() + lo, hi - lo);
    });
  });
  return n * 8 / t / 1e9;
}

// f32 FMA peak: 12 independent register-only FMA chains on every pool thread.
__attribute__((target("avx512f,fma"))) float fma_loop(long iters) {
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
  __m512 a0 = _mm512_set1_ps(1.0f), a1 = _mm512_set1_ps(1.1f), a2 = _mm512_set1_ps(1.2f), a3 = _mm512_set1_ps(1.3f);
  __m512 a4 = _mm512_set1_ps(1.4f), a5 = _mm512_set1_ps(1.5f), a6 = _mm512_set1_ps(1.6f), a7 = _mm512_set1_ps(1.7f);
  __m512 a8 = _mm512_set1_ps(1.8f), a9 = _mm512_set1_ps(1.9f), a10 = _mm512_set1_ps(2.0f), a11 = _mm512_set1_ps(2.1f);
  for (long i = 0; i < iters; i++) {
    a0 = _mm512_fmadd_ps(a0, m, c); a1 = _mm512_fmadd_ps(a1, m, c); a2 = _mm512_fmadd_ps(a2, m, c);
    a3 = _mm512_fmadd_ps(a3, m, c); a4 = _mm512_fmadd_ps(a4, m, c); a5 = _mm512_fmadd_ps(a5, m, c);
    a6 = _mm512_fmadd_ps(a6, m, c); a7 = _mm512_fmadd_ps(a7, m, c); a8 = _mm512_fmadd_ps(a8, m, c);
    a9 = _mm512_fmadd_ps(a9, m, c); a10 = _mm512_fmadd_ps(a10, m, c); a11 = _mm512_fmadd_ps(a11, m, c);
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                           _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0];
}

// The same with 256-bit vectors (AVX2 + FMA).
__attribute__((target("avx2,fma"))) float fma_loop256(long iters) {
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
  __m256 a0 = _mm256_set1_ps(1.0f), a1 = _mm256_set1_ps(1.1f), a2 = _mm256_set1_ps(1.2f), a3 = _mm256_set1_ps(1.3f);
  __m256 a4 = _mm256_set1_ps(1.4f), a5 = _mm256_set1_ps(1.5f), a6 = _mm256_set1_ps(1.6f), a7 = _mm256_set1_ps(1.7f);
  __m256 a8 = _mm256_set1_ps(1.8f), a9 = _mm256_set1_ps(1.9f), a10 = _mm256_set1_ps(2.0f), a11 = _mm256_set1_ps(2.1f);
  for (long i = 0; i < iters; i++) {
    a0 = _mm256_fmadd_ps(a0, m, c); a1 = _mm256_fmadd_ps(a1, m, c); a2 = _mm256_fmadd_ps(a2, m, c);
    a3 = _mm256_fmadd_ps(a3, m, c); a4 = _mm256_fmadd_ps(a4, m, c); a5 = _mm256_fmadd_ps(a5, m, c);
    a6 = _mm256_fmadd_ps(a6, m, c); a7 = _mm256_fmadd_ps(a7, m, c); a8 = _mm256_fmadd_ps(a8, m, c);
    a9 = _mm256_fmadd_ps(a9, m, c); a10 = _mm256_fmadd_ps(a10, m, c); a11 = _mm256_fmadd_ps(a11, m, c);
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                           _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}

double measure_fma_peak256() {
  const long iters = 20000000;
  const int threads = pool().size();
  std::vector<float> sink(threads);
  const double t = best_time(3, [&] { pool().parallel_for(threads, [&](int task, int) { sink[task] = fma_loop256(iters); }); });
  return 2.0 * 8 * 12 * iters * threads / t / 1e9;
}

double measure_fma_peak() {
  const long iters = 20000000;
  const int threads = pool().size();
  std::vector<float> sink(threads);
  const double t = best_time(3, [&] { pool().parallel_for(threads, [&](int task, int) { sink[task] = fma_loop(iters); }); });
  return 2.0 * 16 * 12 * iters * threads / t / 1e9;
}

#else
double measure_bandwidth() { return 0; }
double measure_fma_peak() { return 0; }
double measure_fma_peak256() { return 0; }
#endif

void run_bench() {
  const int threads = pool().size();
  const double bw = measure_bandwidth();
  const double peak256 = measure_fma_peak256();
  const double peak = matmul_best_isa() == 2 ? measure_fma_peak() : peak256;
  std::printf("threads %d  read bandwidth %.1f GB/s  f32 FMA peak %.1f GFLOP/s (512-bit), %.1f GFLOP/s (256-bit)\n",
              threads, bw, peak, peak256);
  for (int isa = matmul_best_isa(); isa >= 1; isa--) {
    matmul_force_isa(isa);
    std::printf("[%s]\n", isa_name(isa));
    for (int type : kTypes) {
      // 1 row: ~128 MB of weights (well past L3), so the weights stream from memory
      const int K = 2048;
      const int N1 = static_cast<int>((128u << 20) / weight_row_bytes(type, K));
      const auto w1 = random_weights(type, K, N1);
      const auto x1 = random_activations(1, K);
      std::vector<float> o1(N1);
      const double t1 = best_time(10, [&] { matmul(o1.data(), x1.data(), 1, w1.data(), type, K, N1); });
      const double gbs = w1.size() / t1 / 1e9;
      // 512 rows, a model-sized matrix: 1536 × 1536
      const int R = 512, K2 = 1536, N2 = 1536;
      const auto w2 = random_weights(type, K2, N2);
      const auto x2 = random_activations(R, K2);
      std::vector<float> o2(static_cast<size_t>(R) * N2);
      const double t2 = best_time(5, [&] { matmul(o2.data(), x2.data(), R, w2.data(), type, K2, N2); });
      const double gf = 2.0 * R * K2 * N2 / t2 / 1e9;
      std::printf("  %-5s 1 row: %6.1f GB/s (%3.0f%% of bw)   512 rows: %7.1f GFLOP/s (%3.0f%% of f32 FMA peak)\n",
                  type_name(type), gbs, 100 * gbs / bw, gf, peak > 0 ? 100 * gf / peak : 0.0);
    }
  }
  matmul_force_isa(-1);
}

// The weight type named `name` (as type_name gives it, any case), or -1
// type names compare in any case (q4_k, Q4_K; q8r16, Q8R16)
bool same_name(std::string a, std::string b) {
  const auto upper = [](std::string& t) {
    for (char& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  };
  upper(a);
  upper(b);
  return a == b;
}

int type_named(const std::string& name) {
  for (int t : kTypes)
    if (same_name(name, type_name(t))) return t;
  return -1;
}

// type_named, or a message naming the types and exit status 2 (an unknown name would
// otherwise time a matrix of no bytes)
int type_named_or_exit(const std::string& name, const char* also = "") {
  const int t = type_named(name);
  if (t >= 0) return t;
  std::fprintf(stderr, "unknown weight type %s; one of:", name.c_str());
  for (int k : kTypes) std::fprintf(stderr, " %s", type_name(k));
  std::fprintf(stderr, "%s\n", also);
  std::exit(2);
}

// One configuration: matmul_test one TYPE ROWS K N [reps] — best time, GB/s and GFLOP/s.
// TYPE Q4R16 / Q8R16: Q4_0 / Q8_0 weights in their layout interleaved by 16 rows.
void run_one(int argc, char** argv) {
  int type = -1, plain = -1;
  for (int t : {kQ4_0, kQ8_0})
    if (same_name(type_name(r16_type_of(t)), argv[2])) plain = t;
  if (plain < 0) type = type_named_or_exit(argv[2], " Q4R16 Q8R16");
  const int R = std::atoi(argv[3]), K = std::atoi(argv[4]), N = std::atoi(argv[5]);
  const int reps = argc > 6 ? std::atoi(argv[6]) : 20;
  auto w = random_weights(plain >= 0 ? plain : type, K, N);
  if (plain >= 0) {
    type = r16_type_of(plain);
    interleave_r16(type, w.data(), K, N);
  }
  const auto x = random_activations(R, K);
  // 64-byte aligned, as the engine's large scratch buffers are (wide outputs are then streamed)
  float* o = static_cast<float*>(std::aligned_alloc(64, (static_cast<size_t>(R) * N * 4 + 63) & ~size_t{63}));
  const double t = best_time(reps, [&] { matmul(o, x.data(), R, w.data(), type, K, N); });
  std::free(o);
  std::printf("%s rows=%d K=%d N=%d threads=%d: %.1f us  %.1f GB/s of weights  %.1f GFLOP/s\n", type_name(type), R, K,
              N, pool().size(), t * 1e6, w.size() / t / 1e9, 2.0 * R * K * N / t / 1e9);
}

#ifdef LOOM_TEST_X86
// A copy of some bytes on huge pages, as the engine's weights are (allocateLarge): on 4 KiB
// pages the page walks and the prefetchers' stops at page ends move one-row figures by up to
// 2x, so the harness times matrices and read probes where the engine has them.
struct HugeBytes {
  uint8_t* p;
  size_t n;
  // written through (an untouched anonymous page reads as the shared zero page, from cache)
  explicit HugeBytes(size_t bytes) : p(static_cast<uint8_t*>(alloc_large(bytes))), n(bytes) {
    if (!p) {
      std::fprintf(stderr, "out of memory: %zu bytes\n", bytes);
      std::exit(1);
    }
    std::memset(p, 1, n);
  }
  explicit HugeBytes(const std::vector<uint8_t>& v) : HugeBytes(v.size()) { std::memcpy(p, v.data(), n); }
  HugeBytes(const HugeBytes&) = delete;
  HugeBytes(HugeBytes&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr; }
  ~HugeBytes() { free_large(p, n); }
};

// GB/s of the best of 3 reads of buf on every pool thread (a share each), prefetching `ahead`
// bytes ahead when nonzero
double read_gbs(const HugeBytes& buf, size_t ahead) {
  const int threads = pool().size();
  const size_t n = buf.n / 8;
  const auto* words = reinterpret_cast<const uint64_t*>(buf.p);
  std::vector<uint64_t> sums(threads * 8);
  const double t = best_time(3, [&] {
    pool().parallel_for(threads, [&](int task, int) {
      const size_t lo = n * task / threads, hi = n * (task + 1) / threads;
      sums[task * 8] = sum_range(words + lo, hi - lo, ahead);
    });
  });
  return n * 8 / t / 1e9;
}

// matmul_test ratio TYPE K N [rounds]: one-row matmul against the read bandwidth of a buffer
// the size of its weights, measured in alternation (a busy machine moves both together).
void run_ratio(int argc, char** argv) {
  const int type = type_named_or_exit(argv[2]);
  const int K = std::atoi(argv[3]), N = std::atoi(argv[4]);
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 5;
  const HugeBytes w(random_weights(type, K, N)), buf(w.n);
  const auto x = random_activations(1, K);
  std::vector<float> o(N);
  std::vector<double> ratios;
  double best_bw = 0, best_mm = 0;
  for (int round = 0; round < rounds; round++) {
    const double plain = read_gbs(buf, 0), ahead = read_gbs(buf, 8192);
    const double tm = best_time(5, [&] { matmul(o.data(), x.data(), 1, w.p, type, K, N); });
    const double bw = std::max(plain, ahead), mm = w.n / tm / 1e9;
    std::printf("  read %.1f GB/s (plain %.1f, prefetched %.1f)  %s matmul %.1f GB/s  %.0f%%\n", bw, plain, ahead,
                type_name(type), mm, 100 * mm / bw);
    ratios.push_back(mm / bw);
    best_bw = std::max(best_bw, bw);
    best_mm = std::max(best_mm, mm);
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf("%s K=%d N=%d: best read %.1f GB/s, best matmul %.1f GB/s (%.0f%%), median ratio %.0f%%\n", type_name(type), K, N,
              best_bw, best_mm, 100 * best_mm / best_bw, 100 * ratios[ratios.size() / 2]);
}
#endif

// The matmuls of a SmolLM2-135M-shaped model (30 layers, hidden 576, 9 heads of 64 with 3
// KV heads, FFN 1536, vocab 49152) in one weight type: decode (1 row) and a 512-row prefill.
// Matmuls only (no attention, norms): an upper bound on tokens/s from the kernels.
void run_model(int type) {
  struct Mat { int K, N; std::vector<uint8_t> w; };
  std::vector<Mat> mats;
  for (int l = 0; l < 30; l++)
    for (auto kn : {std::make_pair(576, 576), std::make_pair(576, 192), std::make_pair(576, 192),
                    std::make_pair(576, 576), std::make_pair(576, 1536), std::make_pair(576, 1536),
                    std::make_pair(1536, 576)})
      mats.push_back({kn.first, kn.second, random_weights(type, kn.first, kn.second)});
  mats.push_back({576, 49152, random_weights(type, 576, 49152)});
  size_t bytes = 0;
  for (auto& m : mats) bytes += m.w.size();
  for (int R : {1, 4, 16, 512}) {
    const auto x = random_activations(R, 1536);
    std::vector<float> out(static_cast<size_t>(R) * 49152);
    const double t = best_time(R == 512 ? 3 : 20, [&] {
      for (size_t i = 0; i < mats.size(); i++) {
        const Mat& m = mats[i];
        // prefill computes logits for the last row only
        const int rows = (i + 1 == mats.size() && R == 512) ? 1 : R;
        matmul(out.data(), x.data(), rows, m.w.data(), type, m.K, m.N);
      }
    });
    std::printf("  %-5s model matmuls, %3d rows: %8.2f ms  %8.1f tok/s  (%.1f GB/s of %zu MB weights)\n", type_name(type), R,
                t * 1e3, R / t, bytes / t / 1e9, bytes >> 20);
  }
}

#ifdef LOOM_TEST_X86
// matmul_test ffn TYPE [layers]: the one-row FFN matmuls of a Qwen2.5-1.5B-shaped model
// (hidden 1536, FFN 8960; gate, up, down a layer), each its own call as in decode, against a
// read of one buffer of the same total size, in alternation: what a model's many mid-sized
// matrices reach next to one large one (`ratio`).
void run_ffn(int argc, char** argv) {
  const int type = type_named_or_exit(argv[2]);
  const int layers = argc > 3 ? std::atoi(argv[3]) : 28, H = 1536, F = 8960;
  struct Mat {
    int K, N;
    HugeBytes w;
  };
  std::vector<Mat> mats;
  size_t total = 0;
  for (int l = 0; l < layers; l++)
    for (auto kn : {std::make_pair(H, F), std::make_pair(H, F), std::make_pair(F, H)}) {
      mats.push_back({kn.first, kn.second, HugeBytes(random_weights(type, kn.first, kn.second))});
      total += mats.back().w.n;
    }
  const HugeBytes buf(total);
  const auto x = random_activations(1, F);
  std::vector<float> out(F);
  for (int round = 0; round < 4; round++) {
    const double bw = std::max(read_gbs(buf, 0), read_gbs(buf, 8192));
    const double tm = best_time(5, [&] {
      for (const Mat& m : mats) matmul(out.data(), x.data(), 1, m.w.p, type, m.K, m.N);
    });
    const double gbs = total / tm / 1e9;
    std::printf("  %s FFN x%d (%zu MB): read %.1f GB/s, matmuls %.2f ms %.1f GB/s (%.0f%%)\n", type_name(type), layers,
                total >> 20, bw, tm * 1e3, gbs, 100 * gbs / bw);
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "all";
  if (const char* th = std::getenv("LOOM_THREADS")) set_thread_count(std::atoi(th));
  if (const char* g = std::getenv("LOOM_GEMM_MIN_ROWS")) matmul_set_gemm_min_rows(std::atoi(g));
  if (mode == "model") {
    const char* only = argc > 2 ? argv[2] : nullptr;
    for (int type : {kQ8_0, kQ4_K, kF16})
      if (!only || std::string(only) == type_name(type)) run_model(type);
    return 0;
  }
#ifdef LOOM_TEST_X86
  if (mode == "ratio" && argc > 4) {
    run_ratio(argc, argv);
    return 0;
  }
  if (mode == "ffn" && argc > 2) {
    run_ffn(argc, argv);
    return 0;
  }
#endif
  if (mode == "one" && argc > 5) {
    run_one(argc, argv);
    return 0;
  }
  std::printf("kernel paths: best %s\n", isa_name(matmul_best_isa()));
  if (mode == "check" || mode == "all") {
    run_checks();
    std::printf(g_failures ? "%d FAILURES\n" : "all checks passed\n", g_failures);
  }
  if (mode == "bench" || mode == "all") run_bench();
  return g_failures ? 1 : 0;
}
