// oneDNN's dnnl_sgemm: row-major, 'N'/'T' flags. Debian's build threads with OpenMP
// (DNNL_CPU_RUNTIME = OMP), so the OpenMP thread count is what it uses.
#include <dnnl.h>
#include <omp.h>

#include <stdexcept>

#include "backend.h"

namespace gemm_bench {

const char* backend_name() { return "dnnl"; }
std::string backend_version() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}
void backend_set_threads(int n) { omp_set_num_threads(n); }
void backend_sgemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                   float* C, int ldc) {
  const dnnl_status_t s =
      dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
  if (s != dnnl_success) throw std::runtime_error("dnnl_sgemm failed with status " + std::to_string(s));
}
std::string backend_path() { return ""; }

}  // namespace gemm_bench
