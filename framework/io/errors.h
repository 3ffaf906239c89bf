// Typed errors of the io layer: the CLI maps a CheckpointError to exit code 3, an OutputPathError to
// 2 (the CLI's exit codes).
#pragma once
#include "core/tensor/error.h"

namespace gattn {

// A checkpoint or safetensors file that cannot be read or written: missing, unreadable, truncated,
// malformed, or not matching the module it is loaded into. Messages name the file and the tensor.
class CheckpointError : public Error {
 public:
  using Error::Error;
};

// An output path a command refuses to write before it writes anything (exit 2, like a usage error):
// something that is not a regular file (a symlink, FIFO, device, directory), a file that belongs
// to a run, or a run directory that holds something else. Messages name the path and why.
class OutputPathError : public Error {
 public:
  using Error::Error;
};

}  // namespace gattn
