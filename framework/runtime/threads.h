// CPU thread count for both our OpenMP loops and OpenBLAS (one OpenMP pool serves both).
#pragma once
#include <cstdint>
#include <string>

namespace gattn {

// n <= 0 means all cores.
void set_num_threads(int n);
int num_threads();
// The cores this process may run on (its affinity mask): what train.threads 0 shares out.
int num_procs();

// A requested thread count (0 = all cores) resolved against the cores: more threads than cores only
// make OpenMP's spinning workers fight over them (a 64-thread run on 2 cores crawls), so it is
// clamped, and `clamped` is set so the caller can say so.
struct ThreadCount {
  int threads = 1;
  bool clamped = false;
};
ThreadCount resolve_thread_count(std::int64_t requested);

// Starts n − 1 threads that all exist at once, with the default stack size as OpenMP's pool does,
// then joins them: "" when every one started, else why not ("only 3 of 8 threads could be started:
// Resource temporarily unavailable"). OpenMP itself aborts the process when it cannot start its
// pool; this lets the caller refuse the setting with a message first.
std::string probe_thread_start(int n);

}  // namespace gattn
