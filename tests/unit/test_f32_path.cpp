// The f32 path (vectorised kernels, fast exp/tanh, BLAS sgemm) against the f64 path the gradchecks
// verify: the same model and batch give the same loss and gradients to f32 accuracy, for every
// parameter. Catches an f32-only kernel error that no f64 gradcheck can see.
#include <gtest/gtest.h>

#include <cmath>

#include "models/gpt.h"
#include "unit/model_test_util.h"

namespace gattn {
namespace {

class F32Path : public ::testing::TestWithParam<std::string> {};

TEST_P(F32Path, LossAndGradientsMatchTheF64Model) {
  models::ModelConfig c = test::tiny_config(GetParam(), DType::f64);
  c.vocab_size = 65;
  c.block_size = 48;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 64;
  c.gate.options["windows"] = {0, 8};
  models::GPT m64(c, 7);
  test::perturb_gate_parameters(m64, 3);
  c.dtype = DType::f32;
  models::GPT m32(c, 7);
  for (auto& [name, p] : m64.named_parameters()) m32.parameter(name).copy_from(p);
  Tensor idx = test::tokens(4, 48, 65, 1), targets = test::tokens(4, 48, 65, 2);
  models::ForwardResult r64 = m64.forward(idx, targets), r32 = m32.forward(idx, targets);
  r64.loss.backward();
  r32.loss.backward();
  EXPECT_NEAR(r32.loss.item(), r64.loss.item(), 1e-5 * std::abs(r64.loss.item()));
  for (auto& [name, p] : m64.named_parameters()) {
    std::vector<double> g64 = p.grad().to_vector(), g32 = m32.parameter(name).grad().to_vector();
    double scale = 0, err = 0;
    for (std::size_t i = 0; i < g64.size(); ++i) {
      scale = std::max(scale, std::abs(g64[i]));
      err = std::max(err, std::abs(g32[i] - g64[i]));
    }
    // f32 carries ~1e-7 relative per operation; 1e-4 of the tensor's largest gradient leaves room
    // for long reductions while a wrong term (a missed scale, a sign) is off by far more.
    EXPECT_LE(err, 1e-4 * scale + 1e-9) << name << ": max |g32 − g64| " << err << " of max |g| " << scale;
  }
}

INSTANTIATE_TEST_SUITE_P(Gates, F32Path, ::testing::ValuesIn(test::all_gate_kinds()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return std::string(std::string(info.param));
                         });

}  // namespace
}  // namespace gattn
