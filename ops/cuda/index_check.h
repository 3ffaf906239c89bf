// Validation of i32 index tensors on the device (embedding indices, cross-entropy targets) before a
// kernel reads with them: the position of the first bad index, found on the GPU and read back with
// one small synchronising copy so the op can throw a clear ValueError instead of reading out of
// bounds. CUDA builds only.
#pragma once

struct CUstream_st;

namespace gattn::cuda {

// The smallest i < n with idx[i] outside [0, limit) and idx[i] != allowed (pass has_allowed false
// when no value is exempt), or −1. Blocks the host until the answer is back.
long long first_bad_index_i32(const int* idx, long long n, long long limit, int allowed, bool has_allowed,
                              CUstream_st* stream);

}  // namespace gattn::cuda
