// GATTN_TEST_FAULT: parsing and the three failures.
#include "recipes/train/fault_injection.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace gattn::recipes {

void maybe_inject_fault(int rank, std::int64_t done) {
  static const char* spec = std::getenv("GATTN_TEST_FAULT");
  if (spec == nullptr) return;
  int fault_rank = -1;
  long long fault_step = -1;
  char kind[16] = {0};
  if (std::sscanf(spec, "%d:%lld:%15s", &fault_rank, &fault_step, kind) != 3) {
    std::fprintf(stderr, "gattn: ignoring malformed GATTN_TEST_FAULT '%s' (want RANK:STEP:exit|kill|hang)\n", spec);
    spec = nullptr;
    return;
  }
  if (fault_rank != rank || fault_step != done) return;
  const std::string k = kind;
  std::fprintf(stderr, "gattn: rank %d: injected fault '%s' at step %lld (GATTN_TEST_FAULT)\n", rank, kind, fault_step);
  std::fflush(stderr);
  if (k == "kill") std::raise(SIGKILL);
  if (k == "hang")
    for (;;) ::pause();
  std::_Exit(3);
}

}  // namespace gattn::recipes
