// Graceful stops for `gattn train`: the first SIGINT or SIGTERM only sets a flag, so the trainer
// finishes the step it is in, writes a checkpoint and exits 0 with the command that resumes; a
// second one exits at once (128 + the signal's number, as shells report it), which corrupts
// nothing because every checkpoint and metrics rewrite is atomic.
#pragma once
#include <csignal>
#include <string>

namespace gattn::recipes {

class StopSignals {
 public:
  // Installs the handlers; a signal the process inherited as ignored (a background job's SIGINT)
  // stays ignored. The destructor restores what was there.
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The number of the first signal received, or 0.
  static int received();
};

// "SIGINT", "SIGTERM", else "signal N".
std::string signal_name(int signo);

}  // namespace gattn::recipes
