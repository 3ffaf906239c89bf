// Helpers shared by the test suites: seeded random tensors and element-wise comparisons.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "framework/autograd/gradcheck.h"
#include "framework/tensor/random.h"
#include "framework/tensor/tensor.h"

namespace gattn::test {

// Uniform values in [low, high) from a fixed seed: the same tensor on every run.
inline Tensor rand(const Shape& shape, std::uint64_t seed, double low = -1.0, double high = 1.0, DType dtype = DType::f64) {
  Tensor t = Tensor::empty(shape, dtype);
  Generator g(seed);
  g.uniform_(t, low, high);
  return t;
}

inline Tensor randn(const Shape& shape, std::uint64_t seed, double std = 1.0, DType dtype = DType::f64) {
  Tensor t = Tensor::empty(shape, dtype);
  Generator g(seed);
  g.normal_(t, 0.0, std);
  return t;
}

// Expects equal shapes and |a - b| <= atol + rtol |b| everywhere; reports the first mismatch.
inline ::testing::AssertionResult all_close(const Tensor& a, const Tensor& b, double atol = 1e-6, double rtol = 1e-5) {
  if (a.shape() != b.shape())
    return ::testing::AssertionFailure() << "shapes differ: " << shape_str(a.shape()) << " vs " << shape_str(b.shape());
  std::vector<double> va = a.to_vector(), vb = b.to_vector();
  for (std::size_t i = 0; i < va.size(); ++i) {
    double tol = atol + rtol * std::abs(vb[i]);
    if (!(std::abs(va[i] - vb[i]) <= tol))
      return ::testing::AssertionFailure() << "element " << i << ": " << va[i] << " vs " << vb[i] << " (tol " << tol << ")";
  }
  return ::testing::AssertionSuccess();
}

// gradcheck as a gtest assertion with the report attached.
inline ::testing::AssertionResult grads_ok(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                           const std::vector<Tensor>& inputs, const GradcheckOptions& opt = {},
                                           const std::vector<int>& no_grad_inputs = {}) {
  auto r = gradcheck(f, inputs, opt, no_grad_inputs);
  if (r.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.report;
}

}  // namespace gattn::test
