// Graceful stops for `gattn train`: the first SIGINT or SIGTERM only sets a flag, so the trainer
// finishes the step it is in, writes a checkpoint and exits 0 with the command that resumes; a
// second one exits at once (128 + the signal's number, as shells report it), which corrupts
// nothing because every checkpoint and metrics rewrite is atomic.
#pragma once
#include <csignal>
#include <string>

namespace gattn::recipes {

// Installed before main() runs (recipes/main.cpp, from .preinit_array): until a command takes over
// stopping (train's StopSignals, ablate's forwarding), a SIGINT or SIGTERM ends the process at once
// with one line on stderr and exit status 128 + the signal's number, never a bare death by the
// signal. Start-up writes nothing that a stop could leave half-written: every file gattn writes is
// renamed into place. A signal the process inherited as ignored stays ignored.
void install_exit_on_signal();

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
