// Which OpenBLAS kernels gattn asks for on CPUs that Debian's OpenBLAS does not recognise.
//
// Debian 12's OpenBLAS (0.3.21, a DYNAMIC_ARCH build) picks its kernels from the CPU's family and
// model number, read once in its initialiser. On an Intel CPU newer than its table (an Emerald
// Rapids Xeon, model 207, is one) it falls back to "Prescott", the SSE3 kernels: the fused
// attention's tile products, which run on OpenBLAS, then take 2.5× as long (docs/benchmarks.md,
// "OpenBLAS on CPUs it does not know"). Every Intel CPU with AVX-512 F/DQ/BW/VL runs OpenBLAS's
// SkylakeX kernels, which are the ones its newer targets (Cooperlake, Sapphire Rapids) use for f32
// and f64 too, so gattn names that core through OPENBLAS_CORETYPE, set before OpenBLAS starts
// (framework/runtime/library_environment.h). A value the user set is always kept; other CPUs
// (AMD's included, whose detection works) are left to OpenBLAS.
#pragma once
#include <string>

namespace gattn {

// What a CPU reports through CPUID, as far as the choice needs it.
struct CpuIdentity {
  bool intel = false;          // vendor "GenuineIntel"
  bool avx512_usable = false;  // AVX-512 F, DQ, BW and VL, and the OS saves the zmm state
};

// The identity of the CPU this runs on. Only CPUID and XGETBV (GCC's __builtin_cpu_*): safe before
// libc has started.
CpuIdentity this_cpu();

// The OpenBLAS core gattn names for `cpu` ("SkylakeX"), or nullptr to leave OpenBLAS's own detection.
const char* openblas_core_for(const CpuIdentity& cpu);

// The core OpenBLAS runs and who chose it, for --version: "SkylakeX (gattn's choice for this
// CPU)", "Haswell (OPENBLAS_CORETYPE=Haswell, environment)" or "Zen (OpenBLAS's detection)".
std::string openblas_core();

}  // namespace gattn
