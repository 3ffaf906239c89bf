// Typed errors of the io layer: the CLI maps a CheckpointError to exit code 3 (SPEC §1).
#pragma once
#include "framework/tensor/error.h"

namespace gattn {

// A checkpoint or safetensors file that cannot be read or written: missing, unreadable, truncated,
// malformed, or not matching the module it is loaded into. Messages name the file and the tensor.
class CheckpointError : public Error {
 public:
  using Error::Error;
};

}  // namespace gattn
