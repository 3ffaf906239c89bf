#include "framework/runtime/openblas_core.h"

#include <cstdlib>
#include <cstring>

#include "framework/runtime/library_environment.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

extern "C" char* openblas_get_corename(void);

namespace gattn {

CpuIdentity this_cpu() {
  CpuIdentity cpu;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return cpu;
  const unsigned max_leaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  cpu.intel = std::strcmp(vendor, "GenuineIntel") == 0;
  if (max_leaf < 7 || !__get_cpuid(1, &a, &b, &c, &d)) return cpu;
  const bool osxsave = (c >> 27) & 1u;
  if (!osxsave) return cpu;
  // XCR0 bits 1, 2 (SSE, AVX state) and 5–7 (opmask, upper zmm halves, zmm16–31): the OS saves them.
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool zmm_state = (xcr0_lo & 0xE6u) == 0xE6u;
  __cpuid_count(7, 0, a, b, c, d);
  const bool f = (b >> 16) & 1u, dq = (b >> 17) & 1u, bw = (b >> 30) & 1u, vl = (b >> 31) & 1u;
  cpu.avx512_usable = zmm_state && f && dq && bw && vl;
#endif
  return cpu;
}

const char* openblas_core_for(const CpuIdentity& cpu) { return cpu.intel && cpu.avx512_usable ? "SkylakeX" : nullptr; }

std::string openblas_core() {
  const char* name = openblas_get_corename();
  std::string out = name ? name : "unknown";
  const char* set = std::getenv("OPENBLAS_CORETYPE");
  if (!set) return out + " (OpenBLAS's detection)";
  const char* marker = std::getenv(kOpenblasCoreMarker);
  if (marker && std::strcmp(marker, "gattn") == 0) return out + " (gattn's choice for this CPU)";
  return out + " (OPENBLAS_CORETYPE=" + set + ", environment)";
}

}  // namespace gattn
