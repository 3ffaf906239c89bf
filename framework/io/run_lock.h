// An exclusive lock on a run directory (flock on DIR/.lock), held for the life of the process that
// trains into it: a second `gattn train` into the same run.dir (a double launch, or --resume while
// the first run still goes) is refused instead of interleaving two runs' metrics and checkpoints.
// The kernel drops the lock when the process ends, however it ends.
#pragma once
#include <string>

namespace gattn {

class RunDirectoryLock {
 public:
  // Creates DIR/.lock if needed and locks it. Throws ValueError (exit 2) when another process holds
  // it, naming its pid, and CheckpointError (exit 3) when the file cannot be created.
  explicit RunDirectoryLock(const std::string& dir);
  ~RunDirectoryLock();
  RunDirectoryLock(const RunDirectoryLock&) = delete;
  RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace gattn
