// Internal interface between native/matmul.cc and the x86 kernels (x86/avx2/, built with
// -mavx2 -mfma -mf16c; x86/avx512/, built with AVX-512 F/BW/VL/DQ/VNNI/BF16), and what those
// share. matmul.cc calls them only after checking the CPU features at run time; their dot
// kernels and GEMMs reach matmul through the weight types' rows (weight-types.h).
//
// Shapes: x [rows, K] f32; W [N, K] rows of `type`, `wstride` bytes apart; out [rows, N].
// "Prepared" activation rows use the layout of native/quant.h (prepared_row_bytes).
#pragma once
#include <cstddef>
#include <cstdint>

#include "../weight-types.h"

// Fully unroll a loop of constant trip count (register-blocked kernels keep their
// accumulator arrays in registers only when every index is a constant).
#define LOOM_UNROLL _Pragma("GCC unroll 16")

// Dot kernels that read one weight stream (a few activation rows, or one row on AVX2 and the
// types without a four-row kernel) stream weights from memory. The hardware prefetchers
// alone keep too few lines in flight for a loop that also computes (the weights arrive at
// ~60-75% of the bandwidth a plain read reaches), so these kernels also prefetch this far
// ahead, one request per 64-byte line. (The AVX-512 four-row kernels read 4 streams a core
// and do not: see one_row_in_stretches.) Past the end of a chunk it fetches a little of the next one:
// harmless (a prefetch never faults) and a fraction of a percent of the bytes.
#define LOOM_PREFETCH_AHEAD 8192
#define LOOM_PREFETCH(p) _mm_prefetch(reinterpret_cast<const char*>(p) + LOOM_PREFETCH_AHEAD, _MM_HINT_T0)

// Batched kernels write output rows this long (an LM head's: 64 KB and more apart) with
// streaming stores where they are 64-byte aligned: a pass writes 64 or 128 bytes into each
// of its rows and moves on, and plain stores read every such line in first (64 rows × 49152
// logits: 12.6 MB read for nothing). One thread, SmolLM2's Q8_0 LM head at 64 rows (R16):
// 16–19 → 12–13 ms.
constexpr int kStreamRowFloats = 16384;
// Whether rows of N floats from `out` are streamed: wide enough, and every row 64-byte aligned.
inline bool streams_rows(const void* out, int N) {
  return N >= kStreamRowFloats && N % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 64 == 0;
}

namespace loom {
namespace x86 {

// ---- AVX2 + FMA + F16C ----

// One prepared row of x[0..K) into dst; bit-exact with prepare_row_scalar. (The dot kernels
// are in the weight types' rows, weight-types.h.)
void avx2_prepare_row(int type, const float* x, int K, uint8_t* dst);

// ---- AVX-512 (F, BW, VL, DQ, VNNI, BF16) ----

void avx512_prepare_row(int type, const float* x, int K, uint8_t* dst);
// The dot kernels' prepared rows (bit-exact with avx2_prepare_row): Q8_0 blocks in AVX-512
// (avx512/prepare.cc), the other activation kinds as avx2_prepare_row.
void avx512_prepare_dot_row(int type, const float* x, int K, uint8_t* dst);

// Many-row matmul. x is first packed in tiles of 16 rows (kGemmTile) by the instruction set's
// gemm_pack (rows past the end are zero), then the type's GEMM (its row's GemmKernel for that
// instruction set) computes rows [r0, r1) (r0 a multiple of 16) by outputs [o0, o1), best in
// panels of kGemmPanel outputs: each weight word is broadcast to 16 rows at once and reused
// from L1 across the row tiles. AVX2 has GEMMs for the float types only (x86/avx2/gemm.cc), whose
// tiles hold f32 values as AVX-512's F32/F16 tiles do (BF16's too, unlike AVX-512's pairs).
constexpr int kGemmTile = 16;
constexpr int kGemmPanel = 48;
size_t avx512_gemm_tile_bytes(int type, int K);  // bytes of one packed 16-row tile
void avx512_gemm_pack(int type, const float* x, int rows, int K, int tile, uint8_t* dst_tile);
size_t avx2_gemm_tile_bytes(int type, int K);  // 0 for a type without an AVX2 GEMM
void avx2_gemm_pack(int type, const float* x, int rows, int K, int tile, uint8_t* dst_tile);

}  // namespace x86

// Kernel path selection, for tests and benchmarks. 0 = scalar, 1 = AVX2, 2 = AVX-512.
// matmul_force_isa(-1) returns to the best path this CPU supports; a request above what the
// CPU supports is lowered. Returns the path now in use. (Defined in native/matmul.cc.)
int matmul_force_isa(int isa);
int matmul_best_isa();
// Rows at or above which a type with a GEMM uses it (tests vary it; 0 = the per-type default).
void matmul_set_gemm_min_rows(int rows);

}  // namespace loom
