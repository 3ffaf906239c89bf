// The typed error of the config layer: the CLI maps a ConfigError to exit code 2 (docs/cli.md).
#pragma once
#include "core/tensor/error.h"

namespace gattn {

// A config that cannot be used: a missing or unparsable file, an unknown key, a wrong type or an
// out-of-range value, a malformed override. Messages name the file and line (or the override) and
// the dotted key.
class ConfigError : public Error {
 public:
  using Error::Error;
};

}  // namespace gattn
