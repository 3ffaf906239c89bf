// What the CUDA side of the build offers at run time; callable from plain C++ (no CUDA headers).
// Every function is safe on machines without a GPU or driver. (How many devices: core/cuda/device.h.)
#pragma once
#include <string>

namespace gattn::cuda {

bool compiled_in();             // true when the build compiled the CUDA sources
std::string toolkit_version();  // "13.0", or "no"
std::string nccl_version();     // "2.27.7", or "no"
std::string cublas_version();   // "13.1.0", or "no"

}  // namespace gattn::cuda
