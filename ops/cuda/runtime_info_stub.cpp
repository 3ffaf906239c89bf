// The CPU-only build's answers to ops/cuda/runtime_info.h.
#ifndef GATTN_WITH_CUDA
#include "ops/cuda/runtime_info.h"

namespace gattn::cuda {
bool compiled_in() { return false; }
std::string toolkit_version() { return "no"; }
std::string nccl_version() { return "no"; }
std::string cublas_version() { return "no"; }
}  // namespace gattn::cuda
#endif
