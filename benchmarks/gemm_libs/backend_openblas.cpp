// OpenBLAS (Debian's OpenMP build, the library gattn links today) through CBLAS.
#include <cblas.h>
#include <omp.h>

#include "backend.h"

namespace gemm_bench {

const char* backend_name() { return "openblas"; }
std::string backend_version() { return openblas_get_config(); }
void backend_set_threads(int n) {
  // The OpenMP build sizes its parallel regions from both; set both so neither lags.
  openblas_set_num_threads(n);
  omp_set_num_threads(n);
}
void backend_sgemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                   float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A,
              lda, B, ldb, 0.0f, C, ldc);
}
std::string backend_path() { return ""; }

}  // namespace gemm_bench
