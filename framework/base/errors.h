// Typed errors of the data layer: the CLI maps a DataError to exit code 3 (docs/cli.md).
#pragma once
#include "core/tensor/error.h"

namespace gattn {

// Training or evaluation data that cannot be used: a missing, unreadable or empty file, a shard
// with a bad header, a split shorter than one window, a synthetic task that does not fit the block.
// Messages name the file (or the task) and the numbers that do not fit.
class DataError : public Error {
 public:
  using Error::Error;
};

}  // namespace gattn
