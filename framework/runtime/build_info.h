// What this binary was built with, as `key: value` lines for `gattn --version`.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace gattn {

// version, build type, blas, cuda, cublas, nccl, mpi, openmp threads.
std::vector<std::pair<std::string, std::string>> build_info();

}  // namespace gattn
