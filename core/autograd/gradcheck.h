// gradcheck: compares the autograd gradients of a function with central differences, in f64.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"

namespace gattn::autograd {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-5;  // |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-4;
  std::uint64_t seed = 1234;  // for the random projection of the output
};

struct GradcheckResult {
  bool ok = true;
  std::string report;  // the worst element per input, and every failure (first few)
  explicit operator bool() const { return ok; }
};

// f maps the inputs to any tensor y. The check uses the scalar L = Σ w ⊙ y with a fixed random w,
// so it verifies wᵀJ for every input, element by element. Floating inputs are converted to f64 and
// checked; non-floating inputs (indices, masks) are passed through unchanged. Inputs listed in
// `no_grad_inputs` (by index) are converted but not differentiated.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {}, const std::vector<int>& no_grad_inputs = {});

}  // namespace gattn::autograd

namespace gattn {
using autograd::gradcheck;
using autograd::GradcheckOptions;
}  // namespace gattn
