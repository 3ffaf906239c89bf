// Host entries of the CUDA reductions (ops/cuda/reduce.cu), the twins of ops/cpu/reduce.h: the sum
// of a [outer, R, inner] block view (the building block of sum, mean and sum_to) and the max over
// the last axis. f32 device pointers; CUDA builds only.
#pragma once

struct CUstream_st;

namespace gattn::cuda {

// out[o·inner + i] = (Σ_{r<R} x[(o·R + r)·inner + i]) / divisor, accumulated in double in a fixed
// order that depends on the shape only (bit-identical run to run). R = 0 gives 0 / divisor.
void sum_blocks_f32(const float* x, float* out, long long outer, long long R, long long inner, double divisor,
                    CUstream_st* stream);
// out[r] = max_c x[r·cols + c], NaN when the row holds a NaN; cols ≥ 1.
void amax_rows_f32(const float* x, float* out, long long rows, long long cols, CUstream_st* stream);

// y[o, i, c] = Σ_{l ≤ i} x[o, l, c] (reverse: Σ_{l ≥ i}) for an [outer, n, inner] view: one thread
// per line with a double running sum, the CPU kernel's order, so the results match it exactly.
void cumsum_lines_f32(const float* x, float* y, long long outer, long long n, long long inner, bool reverse,
                      CUstream_st* stream);

// The gate statistics' moments of n values: out = {Σg, Σg², #(g < 0.1), #(g > 0.9)}, reduced on the
// device so only a few partials cross to the host (synchronises the stream).
void gate_moments_f32(const float* g, long long n, double out[4], CUstream_st* stream);

}  // namespace gattn::cuda
