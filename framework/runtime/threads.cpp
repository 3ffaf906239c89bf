// Thread control: OpenMP and OpenBLAS (Debian's OpenMP build of it) are set together.
#include "framework/runtime/threads.h"

#include <omp.h>

extern "C" void openblas_set_num_threads(int);

namespace gattn {

void set_num_threads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

int num_procs() { return omp_get_num_procs(); }

}  // namespace gattn
