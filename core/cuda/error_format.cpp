// The text of a CudaError (see error.h); plain C++ so the CPU-only build and its tests have it too.
#include <cstring>

#include "core/cuda/error.h"

namespace gattn::cuda {

namespace {
// "/home/x/gattn/core/cuda/copy.cpp" -> "core/cuda/copy.cpp": the last top-level folder of
// the repository in the path starts the relative part; other paths stay whole.
std::string repository_path(const char* file) {
  if (!file) return "?";
  const char* best = nullptr;
  for (const char* top : {"/core/", "/framework/", "/ops/", "/models/", "/recipes/", "/tests/", "/benchmarks/"}) {
    for (const char* p = std::strstr(file, top); p; p = std::strstr(p + 1, top))
      if (!best || p > best) best = p;
  }
  return best ? std::string(best + 1) : std::string(file);
}
}  // namespace

std::string format_cuda_error(const std::string& library, const std::string& status_name,
                              const std::string& description, const std::string& call, const char* file, int line) {
  std::string msg = library;
  msg.append(" error ").append(status_name);
  if (!description.empty() && description != status_name) msg.append(" (").append(description).append(")");
  msg.append(" in ").append(call).append(" at ").append(repository_path(file)).append(":").append(std::to_string(line));
  return msg;
}

}  // namespace gattn::cuda
