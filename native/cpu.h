// CPU features the kernels dispatch on, detected once at load.
#pragma once

namespace loom {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool bmi2 = false;  // pdep (the AVX-512 Q5_0 kernel); every AVX-512 CPU has it
  bool neon = false;
};

const CpuFeatures& cpu_features();

// The instruction set levels the x86 libraries are compiled for (native/x86/*_avx2.cc,
// native/x86/*_avx512.cc). Always false off x86-64 and when LOOM_NO_SIMD is set.
bool use_avx2();    // AVX2 + FMA + F16C
bool use_avx512();  // use_avx2() + AVX-512 F/BW/VL/DQ/VNNI/BF16

}  // namespace loom
