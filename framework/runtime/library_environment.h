// The environment gattn gives its libraries before they start: libgomp's wait policy and, on CPUs
// Debian's OpenBLAS does not recognise, the OpenBLAS core (framework/runtime/openblas_core.h).
//
// How long an idle OpenMP worker spins before it sleeps decides two things at once: on idle cores,
// spinning saves the wake-up latency of the hundreds of small parallel regions of a step; on cores
// that other processes share, a spinning worker burns the time slice the thread it waits for
// needs, and training collapses (libgomp's own default spin ran 4–5× slower beside one busy
// process; docs/benchmarks.md has the measurement that chose the default).
//
// libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT, and OpenBLAS OPENBLAS_CORETYPE, once, in their
// initialisers. Setting a variable from the executable's .preinit_array (before any library
// initialiser) is not enough: glibc's own initialiser then resets the environment to the one the
// process started with. So gattn adds the variables and executes itself again, from
// .preinit_array (gattn's main() file), before anything else has run. A value the user set is
// always kept, and each marker below, set to anything, keeps the library's own default.
#pragma once
#include <string>

namespace gattn {

// Set by gattn beside the variable it added ("gattn"); set by the user, it asks for the library's
// own default.
inline constexpr const char* kOpenmpPolicyMarker = "GATTN_OPENMP_POLICY_SET";
inline constexpr const char* kOpenblasCoreMarker = "GATTN_OPENBLAS_CORE_SET";

// Whether `marker` says gattn itself added its variable (for --version's "who chose it").
bool set_by_gattn(const char* marker);

// Re-executes /proc/self/exe with `argv` and `envp` plus what is missing of
//  - GOMP_SPINCOUNT at gattn's default, when neither OMP_WAIT_POLICY, GOMP_SPINCOUNT nor the
//    OpenMP marker is set;
//  - OPENBLAS_CORETYPE, when neither it nor the OpenBLAS marker is set and this CPU needs one
//    (openblas_core_for(this_cpu()));
// each with its marker. Child processes inherit the settings. Returns when nothing had to be done,
// or when the re-execution failed (then the libraries keep their own defaults). Takes the
// environment as the .preinit_array function receives it: libc's getenv/setenv do not work yet at
// that point (its `environ` is set by its own initialiser).
void apply_library_environment_defaults(char** argv, char** envp);

// The wait policy this process runs with, for --version: "GOMP_SPINCOUNT=1000 (gattn's default)",
// "OMP_WAIT_POLICY=PASSIVE (environment)" or "libgomp's default".
std::string openmp_wait_policy();

}  // namespace gattn
