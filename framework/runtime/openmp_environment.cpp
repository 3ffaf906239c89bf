#include "framework/runtime/openmp_environment.h"

#include <unistd.h>

#include <cstdlib>

namespace gattn {

namespace {
constexpr const char* kMarker = "GATTN_OPENMP_POLICY_SET";
}

void apply_default_openmp_wait_policy(char** argv, char** envp) {
  // Runs before libc's and every library's initialisers: no getenv, setenv or malloc, only a scan
  // of envp and execve with a copy of it in static storage.
  static char spin[] = "GOMP_SPINCOUNT=1000";  // the default: docs/benchmarks.md, "OpenMP wait policy"
  static char marker[] = "GATTN_OPENMP_POLICY_SET=gattn";
  constexpr int kMaxEntries = 4096;
  static char* env[kMaxEntries + 3];
  if (!argv || !envp) return;
  auto is_variable = [](const char* entry, const char* name) {  // entry is "name=..."
    while (*name)
      if (*entry++ != *name++) return false;
    return *entry == '=';
  };
  int n = 0;
  for (; envp[n]; ++n) {
    for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", kMarker})
      if (is_variable(envp[n], name)) return;
    if (n == kMaxEntries) return;  // an environment this large keeps libgomp's default
    env[n] = envp[n];
  }
  env[n] = spin;
  env[n + 1] = marker;
  env[n + 2] = nullptr;
  execve("/proc/self/exe", argv, env);
  // Still here: no /proc, or exec refused. Run on with libgomp's own default.
}

std::string openmp_wait_policy() {
  std::string out;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"})
    if (const char* v = std::getenv(name)) {
      if (!out.empty()) out += ", ";
      out.append(name).append("=").append(v);
    }
  if (out.empty()) return "libgomp's default";
  const char* marker = std::getenv(kMarker);
  const bool ours = marker && std::string(marker) == "gattn";
  return out + (ours ? " (gattn's default)" : " (environment)");
}

}  // namespace gattn
