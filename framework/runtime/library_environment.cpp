#include "framework/runtime/library_environment.h"

#include <unistd.h>

#include <cstdlib>

#include "framework/runtime/openblas_core.h"

namespace gattn {

void apply_library_environment_defaults(char** argv, char** envp) {
  // Runs before libc's and every library's initialisers: no getenv, setenv or malloc, only a scan
  // of envp and execve with a copy of it in static storage.
  static char spin[] = "GOMP_SPINCOUNT=1000";  // the default: docs/benchmarks.md, "OpenMP wait policy"
  static char spin_marker[] = "GATTN_OPENMP_POLICY_SET=gattn";
  static char core[64] = "OPENBLAS_CORETYPE=";
  static char core_marker[] = "GATTN_OPENBLAS_CORE_SET=gattn";
  constexpr int kMaxEntries = 4096;
  static char* env[kMaxEntries + 5];
  if (!argv || !envp) return;
  auto is_variable = [](const char* entry, const char* name) {  // entry is "name=..."
    while (*name)
      if (*entry++ != *name++) return false;
    return *entry == '=';
  };
  bool want_spin = true, want_core = true;
  int n = 0;
  for (; envp[n]; ++n) {
    for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", kOpenmpPolicyMarker})
      if (is_variable(envp[n], name)) want_spin = false;
    for (const char* name : {"OPENBLAS_CORETYPE", kOpenblasCoreMarker})
      if (is_variable(envp[n], name)) want_core = false;
    if (n == kMaxEntries) return;  // an environment this large keeps the libraries' defaults
    env[n] = envp[n];
  }
  const char* core_name = want_core ? openblas_core_for(this_cpu()) : nullptr;
  if (!want_spin && !core_name) return;
  if (want_spin) {
    env[n++] = spin;
    env[n++] = spin_marker;
  }
  if (core_name) {
    char* at = core + sizeof("OPENBLAS_CORETYPE=") - 1;
    for (const char* c = core_name; *c && at < core + sizeof(core) - 1; ++c) *at++ = *c;
    *at = '\0';
    env[n++] = core;
    env[n++] = core_marker;
  }
  env[n] = nullptr;
  execve("/proc/self/exe", argv, env);
  // Still here: no /proc, or exec refused. Run on with the libraries' own defaults.
}

bool set_by_gattn(const char* marker) {
  const char* value = std::getenv(marker);
  return value && std::string(value) == "gattn";
}

std::string openmp_wait_policy() {
  std::string out;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"})
    if (const char* v = std::getenv(name)) {
      if (!out.empty()) out += ", ";
      out.append(name).append("=").append(v);
    }
  if (out.empty()) return "libgomp's default";
  return out + (set_by_gattn(kOpenmpPolicyMarker) ? " (gattn's default)" : " (environment)");
}

}  // namespace gattn
