// Typed errors thrown by the tensor core and the ops: callers (the CLI) map them to exit codes.
#pragma once
#include <stdexcept>
#include <string>

namespace gattn {

// Base of every error gattn throws on purpose. Messages name the op and the offending values.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// Shapes that an op cannot combine (message names the op and both shapes).
class ShapeError : public Error {
 public:
  using Error::Error;
};
// A dtype an op does not accept, or two operands whose dtypes differ.
class DTypeError : public Error {
 public:
  using Error::Error;
};
// A tensor on a device the op cannot run on (e.g. a CUDA op in a CPU-only build).
class DeviceError : public Error {
 public:
  using Error::Error;
};
// An argument out of its valid range (axis, probability, index).
class ValueError : public Error {
 public:
  using Error::Error;
};
// Misuse of the autograd engine (backward twice through a freed graph, non-scalar root, ...).
class AutogradError : public Error {
 public:
  using Error::Error;
};

// A numerical failure the run could not recover from (NaN/Inf losses or gradients beyond
// train.max_bad_steps): exit code 4 in the CLI.
class NumericalError : public Error {
 public:
  using Error::Error;
};

}  // namespace gattn
