// gattn's default OpenMP wait policy, set before libgomp starts.
//
// How long an idle OpenMP worker spins before it sleeps decides two things at once: on idle cores,
// spinning saves the wake-up latency of the hundreds of small parallel regions of a step; on cores
// that other processes share, a spinning worker burns the time slice the thread it waits for
// needs, and training collapses (libgomp's own default spin ran 4–5× slower beside one busy
// process; docs/benchmarks.md has the measurement that chose the default).
//
// libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, in its initialiser. Setting a variable
// from the executable's .preinit_array (before any library initialiser) is not enough: glibc's own
// initialiser then resets the environment to the one the process started with. So gattn sets the
// variable and executes itself again, from .preinit_array (gattn's main() file), before anything
// else has run. A policy the user set (either variable) is always kept.
#pragma once
#include <string>

namespace gattn {

// When neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set (and GATTN_OPENMP_POLICY_SET is not, which
// also asks for libgomp's own default) in `envp`: re-executes /proc/self/exe with `argv` and `envp`
// plus GOMP_SPINCOUNT at the default and the marker. Child processes inherit the setting. Returns
// when nothing had to be done, or when the re-execution failed (then libgomp keeps its own default).
// Takes the environment as the .preinit_array function receives it: libc's getenv/setenv do not
// work yet at that point (its `environ` is set by its own initialiser).
void apply_default_openmp_wait_policy(char** argv, char** envp);

// The wait policy this process runs with, for --version: "GOMP_SPINCOUNT=1000 (gattn's default)",
// "OMP_WAIT_POLICY=PASSIVE (environment)" or "libgomp's default".
std::string openmp_wait_policy();

}  // namespace gattn
