// The OpenBLAS core gattn names for CPUs Debian's OpenBLAS does not recognise
// (framework/runtime/openblas_core.h).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "framework/runtime/openblas_core.h"

namespace gattn {
namespace {

TEST(OpenblasCore, SkylakeXForIntelWithAvx512Only) {
  EXPECT_STREQ(openblas_core_for({.intel = true, .avx512_usable = true}), "SkylakeX");
  EXPECT_EQ(openblas_core_for({.intel = true, .avx512_usable = false}), nullptr);  // AVX2 Intel: OpenBLAS's table
  EXPECT_EQ(openblas_core_for({.intel = false, .avx512_usable = true}), nullptr);  // Zen 4: detected correctly
  EXPECT_EQ(openblas_core_for({.intel = false, .avx512_usable = false}), nullptr);
}

// CPUID agrees with what the kernel reports in /proc/cpuinfo (vendor and the four AVX-512 flags).
TEST(OpenblasCore, ThisCpuMatchesProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  if (!in) GTEST_SKIP() << "no /proc/cpuinfo";
  std::string line, vendor, flags;
  while (std::getline(in, line) && (vendor.empty() || flags.empty())) {
    if (line.rfind("vendor_id", 0) == 0) vendor = line.substr(line.find(':') + 2);
    if (line.rfind("flags", 0) == 0) flags = line.substr(line.find(':') + 1) + " ";
  }
  if (vendor.empty() || flags.empty()) GTEST_SKIP() << "no vendor_id/flags lines (not x86)";
  auto has = [&](const char* f) { return flags.find(std::string(" ") + f + " ") != std::string::npos; };
  const CpuIdentity cpu = this_cpu();
  EXPECT_EQ(cpu.intel, vendor == "GenuineIntel");
  EXPECT_EQ(cpu.avx512_usable, has("avx512f") && has("avx512dq") && has("avx512bw") && has("avx512vl"));
}

}  // namespace
}  // namespace gattn
