// Build information for `gattn --version`.
#include "framework/runtime/build_info.h"

#include <omp.h>

#include "ops/cuda/runtime_info.h"

extern "C" char* openblas_get_config(void);

namespace gattn {

std::vector<std::pair<std::string, std::string>> build_info() {
  std::vector<std::pair<std::string, std::string>> info;
  info.emplace_back("version", GATTN_VERSION);
  info.emplace_back("build type", GATTN_BUILD_TYPE);
  info.emplace_back("blas", openblas_get_config());
  info.emplace_back("openmp threads", std::to_string(omp_get_max_threads()));
  info.emplace_back("cuda", cuda::toolkit_version());
  info.emplace_back("cublas", cuda::cublas_version());
  info.emplace_back("nccl", cuda::nccl_version());
  info.emplace_back("cuda devices", std::to_string(cuda::device_count()));
  // MPI is linked in by the distributed-training issue.
  info.emplace_back("mpi", "no");
  return info;
}

}  // namespace gattn
