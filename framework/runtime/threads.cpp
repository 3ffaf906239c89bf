// Thread control: OpenMP and OpenBLAS (Debian's OpenMP build of it) are set together.
#include "framework/runtime/threads.h"

#include <omp.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

extern "C" void openblas_set_num_threads(int);

namespace gattn {

void set_num_threads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

int num_procs() { return omp_get_num_procs(); }

ThreadCount resolve_thread_count(std::int64_t requested) {
  const int cores = std::max(1, num_procs());
  if (requested <= 0) return {cores, false};
  if (requested > cores) return {cores, true};
  return {static_cast<int>(requested), false};
}

std::string probe_thread_start(int n) {
  std::mutex mutex;
  std::condition_variable released;
  bool go = false;
  std::vector<std::thread> workers;
  std::string why;
  for (int i = 1; i < n; ++i) {
    try {
      workers.emplace_back([&] {
        std::unique_lock<std::mutex> lock(mutex);
        released.wait(lock, [&] { return go; });
      });
    } catch (const std::system_error& e) {
      why = "only " + std::to_string(workers.size() + 1) + " of " + std::to_string(n) +
            " threads could be started: " + e.code().message();
      break;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    go = true;
  }
  released.notify_all();
  for (std::thread& t : workers) t.join();
  return why;
}

}  // namespace gattn
