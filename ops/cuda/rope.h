// Host entries of the CUDA rotary position embedding (ops/cuda/rope.cu), the twin of ops/cpu/rope.h:
// y = x with the first rd elements of each row t of the `outer` [rows, d] blocks rotated pairwise
// (x[k], x[k+rd/2]) by the angle p_t·base^(−2k/rd) (inverse: its negative), angles and products in
// double, and elements rd … d−1 copied. positions is i32 [rows] on the device; x == y is fine; rd is
// even, 0 < rd ≤ d. CUDA builds only.
#pragma once
#include <cstdint>

struct CUstream_st;

namespace gattn::cuda {

void rope_rows_f32(const float* x, float* y, const std::int32_t* positions, long long outer, long long rows,
                   long long d, long long rd, double base, bool inverse, CUstream_st* stream);
void rope_rows_f64(const double* x, double* y, const std::int32_t* positions, long long outer, long long rows,
                   long long d, long long rd, double base, bool inverse, CUstream_st* stream);

}  // namespace gattn::cuda
