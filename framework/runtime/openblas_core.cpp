#include "framework/runtime/openblas_core.h"

#include <cstdlib>

#include "framework/runtime/library_environment.h"

extern "C" char* openblas_get_corename(void);

namespace gattn {

CpuIdentity this_cpu() {
  CpuIdentity cpu;
#if defined(__x86_64__) || defined(__i386__)
  // GCC's CPU model and feature bits (as fma_peak.cpp uses them), filled in explicitly: from
  // .preinit_array this runs before libgcc's own initialiser. The AVX-512 bits are set only where
  // the OS saves the zmm state (XCR0).
  __builtin_cpu_init();
  cpu.intel = __builtin_cpu_is("intel");
  cpu.avx512_usable = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#endif
  return cpu;
}

const char* openblas_core_for(const CpuIdentity& cpu) { return cpu.intel && cpu.avx512_usable ? "SkylakeX" : nullptr; }

std::string openblas_core() {
  const char* name = openblas_get_corename();
  std::string out = name ? name : "unknown";
  const char* set = std::getenv("OPENBLAS_CORETYPE");
  if (!set) return out + " (OpenBLAS's detection)";
  if (set_by_gattn(kOpenblasCoreMarker)) return out + " (gattn's choice for this CPU)";
  return out + " (OPENBLAS_CORETYPE=" + set + ", environment)";
}

}  // namespace gattn
