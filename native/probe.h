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
uint64_t read_sum_avx2(const uint64_t* p, int64_t n, int64_t ahead);
}  // namespace x86
#endif

}  // namespace loom
