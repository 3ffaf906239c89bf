// A training step in steady state asks the system for no memory: after the first steps, every
// activation, gradient and optimizer buffer of the cacheable size (the caching allocator's
// classes) comes back from the free lists. A step that allocates afresh pays page faults and
// zeroing for it (cpu_allocator.h), so a regression here is a throughput regression.
#include <gtest/gtest.h>

#include <string>

#include "core/tensor/cpu_allocator.h"
#include "framework/optim/adamw.h"
#include "models/gpt.h"
#include "unit/model_test_util.h"

namespace gattn {
namespace {

// The shakespeare_char model's shape at a smaller batch: 4 layers, 4 heads, 128 wide, block 64.
models::ModelConfig char_model(const std::string& kind) {
  models::ModelConfig c;
  c.vocab_size = 65;
  c.block_size = 64;
  c.n_layer = 4;
  c.n_head = 4;
  c.n_embd = 128;
  c.gate.kind = kind;
  c.dtype = DType::f32;
  return c;
}

class SteadyStateAllocation : public ::testing::TestWithParam<std::string> {};

TEST_P(SteadyStateAllocation, StepsAfterTheFirstAllocateNothingFromTheSystem) {
  models::GPT model(char_model(GetParam()), 0);
  model.train();
  optim::AdamWOptions o;
  o.lr = 1e-3;
  o.schedule.kind = "constant";
  optim::AdamW opt(model.named_parameters(), o);
  const Tensor x = test::tokens(4, 64, 65, 1), y = test::tokens(4, 64, 65, 2);
  auto step = [&](std::int64_t i) {
    models::ForwardOptions fo;
    fo.collect_stats = i % 2 == 0;  // log steps collect statistics; both kinds of step must be steady
    models::ForwardResult r = model.forward(x, y, fo);
    r.loss.backward();
    opt.clip_grad_norm();
    opt.step(i);
    opt.zero_grad();
  };
  for (std::int64_t i = 0; i < 3; ++i) step(i);
  const CpuAllocatorStats before = cpu_allocator_stats();
  for (std::int64_t i = 3; i < 7; ++i) step(i);
  const CpuAllocatorStats after = cpu_allocator_stats();
  EXPECT_EQ(after.misses, before.misses) << "steady-state steps went to the system for cacheable blocks";
  EXPECT_GT(after.hits, before.hits);  // the step does allocate: from the free lists
}

INSTANTIATE_TEST_SUITE_P(GateKinds, SteadyStateAllocation,
                         ::testing::Values("none", "output", "score", "forget", "pair"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace gattn
