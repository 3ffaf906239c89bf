// Finite-value checks of a checkpoint's tensors (ops::all_finite per tensor, on any device).
#include "framework/io/finite_check.h"

#include "framework/io/errors.h"
#include "ops/reduce.h"

namespace gattn {

std::string first_non_finite(const std::vector<std::pair<std::string, Tensor>>& tensors) {
  for (const auto& [name, t] : tensors)
    if (!ops::all_finite(t)) return name;
  return "";
}

void check_finite_tensors(const SafetensorsFile& file) {
  const std::string name = first_non_finite(file.tensors);
  if (!name.empty())
    throw CheckpointError("checkpoint file '" + file.path + "': tensor '" + printable_name(name) +
                          "' holds NaN or Inf values; a checkpoint must hold finite weights and moments");
}

}  // namespace gattn
