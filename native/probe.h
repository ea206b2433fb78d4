// Machine probes for `loom bench kernels`: this CPU's f32 FMA peak and memory read
// bandwidth, measured on the kernels' own thread pool (every pool thread takes part), so the
// kernel figures of the same run can be stated as a share of them.
#pragma once
#include <cstdint>

namespace loom {

// f32 FMA throughput in GFLOP/s (2 flops per lane per FMA): 12 independent register-only
// FMA chains per thread. bits = 512, 256 or 0 (the widest this CPU runs: 512 with AVX-512,
// 256 with AVX2+FMA, else a portable scalar loop reported as width 32). Best of repeated
// passes over about `seconds`. Returns a negative number when `bits` is not available.
double probe_fma_peak(double seconds, int bits);

// The vector width probe_fma_peak(…, 0) uses: 512, 256 or 32.
int probe_fma_widest_bits();

// Integer multiply-add throughput in GOP/s (2 ops per u8·s8 product added into int32), the
// cheapest exact form this CPU has for the integer kernels: AVX-512 VNNI's dpbusd (64
// products an instruction), else AVX2's maddubs + madd + add (32 products in 3 instructions;
// loom's Q8_0 kernel adds a sign per 32 for its s8·s8 products). kInt8Chains independent
// register-only chains per thread; best of repeated passes over about `seconds`; a portable
// scalar loop without either (4 products a chain and round). probe_int8_kind: 512 (VNNI), 256
// (AVX2) or 32 (scalar).
constexpr int kInt8Chains = 12;
double probe_int8_peak(double seconds);
int probe_int8_kind();

// Read bandwidth in GB/s (1e9 bytes/s): every pool thread sums its contiguous share of a
// buffer of `bytes` (choose it well past the last-level cache). Best of repeated passes
// over about `seconds` (at least three passes after one warm pass), the passes alternating
// between a plain read and one that also prefetches ahead in software (as the one-row
// matmul kernels do): on some machines only the latter reaches the memory's bandwidth.
double probe_read_bandwidth(int64_t bytes, double seconds);

#if defined(__x86_64__) && !defined(LOOM_NO_X86)
namespace x86 {
// native/x86/probe_avx512.cc and probe_avx2.cc: `iters` rounds of 12 FMA chains (returns a
// value that depends on every chain, so no round is optimized away) and a summing read
// (prefetching `ahead` bytes ahead when ahead > 0).
float fma_chains_avx512(int64_t iters);
uint64_t read_sum_avx512(const uint64_t* p, int64_t n, int64_t ahead);
float fma_chains_avx2(int64_t iters);
// `iters` rounds of kInt8Chains integer product chains (dpbusd; maddubs + madd + add)
float int8_chains_avx512(int64_t iters);
float int8_chains_avx2(int64_t iters);
uint64_t read_sum_avx2(const uint64_t* p, int64_t n, int64_t ahead);
}  // namespace x86
#endif

}  // namespace loom
