// The benchmark programs start as gattn does: libgomp's wait policy and, on CPUs Debian's OpenBLAS
// does not know, the OpenBLAS core are set by executing the program again from its .preinit_array,
// before any library's initialiser has run (framework/runtime/library_environment.h). Without it a
// benchmark of the attention on such a CPU measured OpenBLAS's generic SSE3 kernels, not the ones
// training runs (docs/benchmarks.md, "OpenBLAS on CPUs it does not know"). Linked into every
// benchmark program that links gattn's libraries; the GEMM-library comparison (gemm_libs/) links
// none of them and leaves each library to its own defaults.
#include "framework/runtime/library_environment.h"

extern "C" void gattn_benchmark_library_environment(int, char** argv, char** envp) {
  gattn::apply_library_environment_defaults(argv, envp);
}
__attribute__((section(".preinit_array"),
               used)) static void (*const library_environment_first)(int, char**,
                                                                     char**) = &gattn_benchmark_library_environment;
