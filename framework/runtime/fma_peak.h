// Measured FMA peak of this machine (not a datasheet number): the denominator of "% of peak" in
// `gattn train --profile-ops` and the GEMM library benchmarks (benchmarks/gemm_libs/, which compile
// this file on its own: it depends on nothing else of gattn's, only OpenMP).
#pragma once
#include <string>

namespace gattn {

struct FmaPeak {
  double gflops = 0;  // single-precision FLOP/s (an FMA counts 2) summed over the threads, in 1e9
  std::string isa;    // the vector width that reached it: "avx512" or "avx2" ("" where not measured)
};

// Runs a register-only FMA loop on `threads` OpenMP threads for about `seconds` per try, best of 3
// tries per ISA (AVX2 and, where the CPU has it, AVX-512), and returns the faster ISA's rate. On a
// CPU that is not x86-64 nothing is measured: gflops 0, isa "".
FmaPeak measure_fma_peak(int threads, double seconds = 0.1);

}  // namespace gattn
