// Measured FMA peak of this machine (not a datasheet number): the denominator of "% of peak".
#pragma once
#include <string>

namespace gemm_bench {

struct Peak {
  double gflops = 0;  // single-precision FLOP/s (an FMA counts 2) summed over the threads, in 1e9
  std::string isa;    // the vector width that reached it: "avx512" or "avx2"
};

// Runs a register-only FMA loop on `threads` OpenMP threads for about `seconds` per try, best of 3
// tries per ISA (AVX2 and, where the CPU has it, AVX-512), and returns the faster ISA's rate.
Peak measure_peak(int threads, double seconds = 0.1);

}  // namespace gemm_bench
