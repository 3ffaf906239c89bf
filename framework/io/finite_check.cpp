// Finite-value checks over whole tensors, on the CPU or on the device.
#include "framework/io/finite_check.h"

#include <cmath>
#include <cstdint>

#include "framework/autograd/grad_mode.h"
#include "framework/io/errors.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace gattn {

namespace {

template <class T>
bool all_finite_values(const T* d, std::int64_t n) {
  bool finite = true;
  for (std::int64_t i = 0; i < n; ++i) finite &= static_cast<bool>(std::isfinite(d[i]));  // no early exit: vectorises
  return finite;
}

// bf16 is the top half of an f32: all exponent bits set means Inf or NaN.
bool all_finite_bf16(const std::uint16_t* d, std::int64_t n) {
  bool finite = true;
  for (std::int64_t i = 0; i < n; ++i) finite &= (d[i] & 0x7F80u) != 0x7F80u;
  return finite;
}

}  // namespace

bool all_finite(const Tensor& t) {
  if (!is_floating(t.dtype()) || t.numel() == 0) return true;
  if (t.device() != Device::cpu) {
    // Σ 0·t is NaN exactly when some element is NaN or ±Inf (0·Inf = NaN).
    NoGradGuard no_grad;
    return std::isfinite(ops::sum(ops::mul_scalar(t, 0.0)).item());
  }
  switch (t.dtype()) {  // tensors are contiguous
    case DType::f32: return all_finite_values(t.data<float>(), t.numel());
    case DType::f64: return all_finite_values(t.data<double>(), t.numel());
    case DType::bf16: return all_finite_bf16(static_cast<const std::uint16_t*>(t.raw_data()), t.numel());
    default: return true;
  }
}

std::string first_non_finite(const std::vector<std::pair<std::string, Tensor>>& tensors) {
  for (const auto& [name, t] : tensors)
    if (!all_finite(t)) return name;
  return "";
}

void check_finite_tensors(const SafetensorsFile& file) {
  const std::string name = first_non_finite(file.tensors);
  if (!name.empty())
    throw CheckpointError("checkpoint file '" + file.path + "': tensor '" + printable_name(name) +
                          "' holds NaN or Inf values; a checkpoint must hold finite weights and moments");
}

}  // namespace gattn
