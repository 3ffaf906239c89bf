// What the ops' .cpp files need to call the CUDA kernels: the compute stream and the conversion of
// a broadcast plan to the kernels' fixed-size index struct. CUDA builds only (GATTN_WITH_CUDA).
#pragma once
#include <string>

#include "core/cuda/stream.h"
#include "core/tensor/error.h"
#include "ops/broadcast.h"
#include "ops/cuda/elementwise.h"

namespace gattn::cuda {

inline CUstream_st* stream() { return compute_stream().handle(); }

// Throws ShapeError naming `op` when the merged plan has more dims than the kernels index.
inline StridedIndex to_strided_index(const ops::BroadcastPlan& p, const char* op) {
  StridedIndex s;
  if (p.shape.size() > static_cast<std::size_t>(kMaxDims)) {
    std::string msg = op;
    msg += ": the CUDA kernels index at most ";
    msg += std::to_string(kMaxDims);
    msg += " broadcast dimensions after merging, got ";
    msg += std::to_string(p.shape.size());
    throw ShapeError(msg);
  }
  s.rank = static_cast<int>(p.shape.size());
  for (int d = 0; d < s.rank; ++d) {
    const auto du = static_cast<std::size_t>(d);
    s.shape[d] = p.shape[du];
    s.sa[d] = p.sa[du];
    s.sb[d] = p.sb[du];
  }
  return s;
}

}  // namespace gattn::cuda
