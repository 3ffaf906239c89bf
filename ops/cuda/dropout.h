// Host entry of the CUDA dropout kernel (ops/cuda/dropout.cu), the twin of ops/cpu/dropout.h: the
// same Philox words and integer threshold, so the mask matches the CPU's bit for bit. f32 device
// pointers; CUDA builds only.
#pragma once
#include <cstdint>

struct CUstream_st;

namespace gattn::cuda {

// out[i] = in[i] · scale where element i is kept, 0 where (word(offset + i) >> 8) < threshold.
void dropout_apply_f32(const float* in, float* out, long long n, std::uint64_t seed, std::uint64_t philox_stream,
                       std::uint64_t offset, std::uint32_t threshold, float scale, CUstream_st* stream);

}  // namespace gattn::cuda
