// Build information for `gattn --version`.
#include "framework/runtime/build_info.h"

#include <omp.h>

#include <string>
#ifdef GATTN_WITH_MPI
#include <mpi.h>
#endif

#include "core/cuda/device.h"
#include "framework/runtime/library_environment.h"
#include "framework/runtime/openblas_core.h"
#include "ops/cpu/gemm.h"
#include "ops/cuda/runtime_info.h"

extern "C" char* openblas_get_config(void);

namespace gattn {

namespace {

// The MPI library's own name and version ("Open MPI v4.1.4"), or "no" in a build without MPI.
// MPI_Get_library_version may be called before MPI_Init.
std::string mpi_version() {
#ifdef GATTN_WITH_MPI
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "yes";
  std::string v(text, static_cast<std::size_t>(length));
  const std::size_t end = v.find_first_of(",\n");
  return end == std::string::npos ? v : v.substr(0, end);
#else
  return "no";
#endif
}

}  // namespace

std::vector<std::pair<std::string, std::string>> build_info() {
  std::vector<std::pair<std::string, std::string>> info;
  info.emplace_back("version", GATTN_VERSION);
  info.emplace_back("build type", GATTN_BUILD_TYPE);
  info.emplace_back("blas", openblas_get_config());
  info.emplace_back("blas core", openblas_core());
  info.emplace_back("gemm f32", cpu::f32_gemm_library());
  info.emplace_back("openmp threads", std::to_string(omp_get_max_threads()));
  info.emplace_back("openmp wait", openmp_wait_policy());
  info.emplace_back("cuda", cuda::toolkit_version());
  info.emplace_back("cublas", cuda::cublas_version());
  info.emplace_back("nccl", cuda::nccl_version());
  info.emplace_back("cuda devices", std::to_string(cuda::device_count()));
  info.emplace_back("mpi", mpi_version());
  return info;
}

}  // namespace gattn
