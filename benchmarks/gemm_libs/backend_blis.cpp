// BLIS (Debian's OpenMP build) through its typed API: general strides express row-major directly
// (row stride = ld, column stride = 1), so no CBLAS layer sits in between.
#include <blis.h>

#include "backend.h"

namespace gemm_bench {

const char* backend_name() { return "blis"; }
std::string backend_version() { return std::string("BLIS ") + bli_info_get_version_str(); }
void backend_set_threads(int n) { bli_thread_set_num_threads(n); }
void backend_sgemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                   float* C, int ldc) {
  float one = 1.0f, zero = 0.0f;
  // BLIS 0.9 takes non-const pointers for inputs it only reads.
  bli_sgemm(trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, M, N, K, &one,
            const_cast<float*>(A), lda, 1, const_cast<float*>(B), ldb, 1, &zero, C, ldc, 1);
}
std::string backend_path() { return ""; }

}  // namespace gemm_bench
