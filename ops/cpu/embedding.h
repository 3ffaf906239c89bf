// CPU kernels for the embedding lookup: a row gather from a [V, C] table and its deterministic
// scatter-add backward. Pure functions over raw buffers: no Tensor, no autograd, no allocation.
#pragma once
#include <cstdint>

#include "ops/cpu/parallel.h"

namespace gattn::cpu {

// Position of the first index outside [0, V), or −1 when all are valid. Run before the gather so a
// bad index is reported instead of read out of bounds.
inline std::int64_t embedding_first_bad_index(const std::int32_t* idx, std::int64_t n, std::int64_t V) {
  for (std::int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || idx[i] >= V) return i;
  return -1;
}

// out[i, :] = weight[idx[i], :] for the n indices (all already checked to lie in [0, V)).
template <class T>
void embedding_forward(const T* weight, const std::int32_t* idx, T* out, std::int64_t n, std::int64_t C) {
#pragma omp parallel for schedule(static) if (worth_parallel(n * C))
  for (std::int64_t i = 0; i < n; ++i) {
    const T* src = weight + static_cast<std::int64_t>(idx[i]) * C;
    T* dst = out + i * C;
    for (std::int64_t j = 0; j < C; ++j) dst[j] = src[j];
  }
}

// Columns per work item of the backward: 16 floats = one 64-byte cache line, so threads working
// on neighbouring blocks rarely share a line.
constexpr std::int64_t kEmbeddingColumnBlock = 16;

// dweight[v, :] = Σ_{i : idx[i] = v} g[i, :], with dweight ([V, C]) zeroed by the caller.
// Threads split the C columns, never the indices: every thread walks all n indices in order and
// adds only its own columns, so repeated indices never race and each element's sum runs in index
// order — the same bits for any thread count.
template <class T>
void embedding_backward(const T* g, const std::int32_t* idx, T* dweight, std::int64_t n, std::int64_t C) {
  const std::int64_t blocks = (C + kEmbeddingColumnBlock - 1) / kEmbeddingColumnBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(n * C))
  for (std::int64_t bl = 0; bl < blocks; ++bl) {
    const std::int64_t c0 = bl * kEmbeddingColumnBlock;
    const std::int64_t c1 = c0 + kEmbeddingColumnBlock < C ? c0 + kEmbeddingColumnBlock : C;
    for (std::int64_t i = 0; i < n; ++i) {
      const T* src = g + i * C;
      T* dst = dweight + static_cast<std::int64_t>(idx[i]) * C;
      for (std::int64_t j = c0; j < c1; ++j) dst[j] += src[j];
    }
  }
}

}  // namespace gattn::cpu
