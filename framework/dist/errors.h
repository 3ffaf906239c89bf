// The error of a multi-process run whose peers failed it: a collective that did not complete within
// dist.timeout_s (a rank died or stalled), or an MPI/NCCL call that failed. The CLI exits 3 with
// its one line: like a missing data file, it is the run's environment, not its config, that broke.
#pragma once
#include "core/tensor/error.h"

namespace gattn {

class DistError : public Error {
 public:
  using Error::Error;
};

}  // namespace gattn
