// The whole GPT on the GPU against the CPU, for every gate kind: the same weights (moved with
// Module::to_) and batch give the same loss, regularisers and parameter gradients (rotary positions
// too), and 20 AdamW steps on both devices keep the losses together. Attention runs through the composed CUDA path
// (ops/attention/composed_attention.h) until the fused kernels exist. Skips without a device.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "framework/optim/adamw.h"
#include "models/gpt.h"
#include "ops/elementwise.h"
#include "unit/model_test_util.h"

namespace gattn {
namespace {

using test::ExactF32;

models::ModelConfig small_config(std::string kind) {
  models::ModelConfig c = test::tiny_config(kind, DType::f32);
  c.vocab_size = 11;
  c.block_size = 13;  // odd T
  c.n_embd = 16;
  c.gate.options["windows"] = {0, 4};
  c.gate.options["top_k"] = 2;
  return c;
}

// Two models with identical weights, the second on the GPU; gates moved off their neutral start.
struct ModelPair {
  std::unique_ptr<models::GPT> cpu, gpu;
  explicit ModelPair(const models::ModelConfig& config) {
    cpu = std::make_unique<models::GPT>(config, 5);
    gpu = std::make_unique<models::GPT>(config, 5);
    test::perturb_gate_parameters(*cpu, 9);
    test::perturb_gate_parameters(*gpu, 9);
    gpu->to_(Device::cuda);
  }
};

::testing::AssertionResult close(double gpu, double cpu, double rtol, const std::string& what) {
  if (std::abs(gpu - cpu) <= rtol * std::abs(cpu) + 1e-6) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": GPU " << gpu << " vs CPU " << cpu;
}

// After a backward on both models: every parameter's gradient is on the GPU and close to the CPU's.
void expect_same_gradients(const ModelPair& m) {
  auto gpu_params = m.gpu->named_parameters();
  std::size_t i = 0;
  for (auto& [name, p] : m.cpu->named_parameters()) {
    const Tensor& q = gpu_params[i++].second;
    ASSERT_TRUE(q.grad().defined()) << name;
    EXPECT_EQ(q.grad().device(), Device::cuda) << name;
    EXPECT_TRUE(test::all_close(q.grad(), p.grad(), 2e-5, 1e-3)) << name;
  }
}

TEST(CudaGpt, LossRegularisersAndGradientsMatchTheCpuForEveryGateKind) {
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  for (std::string kind : test::all_gate_kinds()) {
    SCOPED_TRACE(std::string(kind));
    ModelPair m(small_config(kind));
    const Tensor x = test::tokens(3, 13, 11, 1), y = test::tokens(3, 13, 11, 2);
    models::ForwardOptions fo;
    fo.regularizers = {"gate_entropy", "attn_entropy", "router_balance"};
    models::ForwardResult rc = m.cpu->forward(x, y, fo);
    models::ForwardResult rg = m.gpu->forward(x.to(Device::cuda), y.to(Device::cuda), fo);
    EXPECT_EQ(rg.loss.device(), Device::cuda);
    EXPECT_TRUE(close(rg.loss.item(), rc.loss.item(), 1e-5, "loss"));
    Tensor total_c = rc.loss, total_g = rg.loss;
    if (rc.regularizer("gate_entropy").defined()) {
      EXPECT_TRUE(
          close(rg.regularizer("gate_entropy").item(), rc.regularizer("gate_entropy").item(), 1e-4, "gate entropy"));
      total_c = total_c + rc.regularizer("gate_entropy") * 0.1;
      total_g = total_g + rg.regularizer("gate_entropy") * 0.1;
    }
    if (rc.regularizer("attn_entropy").defined()) {
      EXPECT_TRUE(close(rg.regularizer("attn_entropy").item(), rc.regularizer("attn_entropy").item(), 1e-4,
                        "attention entropy"));
      total_c = total_c + rc.regularizer("attn_entropy") * 0.1;
      total_g = total_g + rg.regularizer("attn_entropy") * 0.1;
    }
    total_c.backward();
    total_g.backward();
    expect_same_gradients(m);
  }
}

TEST(CudaGpt, RopeMatchesTheCpu) {
  // model.position rope: q, k rotated by the CUDA kernel (angles in double, as on the CPU), no wpe.
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  for (std::string kind : {"none", "pair", "context"}) {
    SCOPED_TRACE(kind);
    models::ModelConfig c = small_config(kind);
    c.position = models::kPositionRope;
    ModelPair m(c);
    const Tensor x = test::tokens(3, 13, 11, 1), y = test::tokens(3, 13, 11, 2);
    Tensor lc = m.cpu->forward(x, y).loss, lg = m.gpu->forward(x.to(Device::cuda), y.to(Device::cuda)).loss;
    EXPECT_TRUE(close(lg.item(), lc.item(), 1e-5, "loss"));
    lc.backward();
    lg.backward();
    expect_same_gradients(m);
  }
}

TEST(CudaGpt, LayerStatisticsMatchTheCpu) {
  // collect_stats on the GPU: the residual stream's max |x| is reduced on the device (row maxima of
  // x and −x) and the gate moments too; both agree with the host's computation on the CPU model.
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  ModelPair m(small_config("output"));
  const Tensor x = test::tokens(3, 13, 11, 1), y = test::tokens(3, 13, 11, 2);
  models::ForwardOptions fo;
  fo.collect_stats = true;
  const models::ForwardResult rc = m.cpu->forward(x, y, fo);
  const models::ForwardResult rg = m.gpu->forward(x.to(Device::cuda), y.to(Device::cuda), fo);
  ASSERT_EQ(rg.stats.size(), rc.stats.size());
  for (std::size_t l = 0; l < rc.stats.size(); ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    EXPECT_GT(rc.stats[l].act_max, 0.0);
    EXPECT_TRUE(close(rg.stats[l].act_max, rc.stats[l].act_max, 1e-5, "act_max"));
    EXPECT_TRUE(close(rg.stats[l].gate.mean(), rc.stats[l].gate.mean(), 1e-5, "gate mean"));
  }
}

// A hard gate is 1[G > θ]: where G lies within rounding of θ the two devices may disagree (the
// GPU's expf differs from glibc's by up to 2 ulp, and its products sum in another order), and one
// flipped gate moves the loss by far more than the tolerance. So a test of hard gates must keep
// every G clear of θ. Moving θ by kThresholdMargin either way flips every G within that distance on
// the CPU; when neither move changes a bit of the CPU loss, no G is that close, and the margin is
// some hundred times the devices' difference in G (~1e-7).
constexpr double kThresholdMargin = 1e-5;

// The CPU loss of ModelPair's model for config `c` with its hard threshold moved by `shift`.
double cpu_loss_with_threshold_shift(models::ModelConfig c, double shift, const Tensor& x, const Tensor& y,
                                     const models::ForwardOptions& fo) {
  c.gate.options["hard_threshold"] = c.gate.option("hard_threshold").get<double>() + shift;
  c.validate();
  models::GPT m(c, 5);
  test::perturb_gate_parameters(m, 9);
  m.train();
  m.set_step(2);
  return m.forward(x, y, fo).loss.item();
}

::testing::AssertionResult gates_clear_of_threshold(const models::ModelConfig& c, const Tensor& x, const Tensor& y,
                                                    const models::ForwardOptions& fo) {
  const double at = cpu_loss_with_threshold_shift(c, 0.0, x, y, fo);
  for (double shift : {-kThresholdMargin, kThresholdMargin}) {
    const double moved = cpu_loss_with_threshold_shift(c, shift, x, y, fo);
    if (moved != at)
      return ::testing::AssertionFailure()
             << "a gate value lies within " << kThresholdMargin << " of the hard threshold (moving it by " << shift
             << " changes the loss " << at << " to " << moved << "): choose other inputs";
  }
  return ::testing::AssertionSuccess();
}

TEST(CudaGpt, GateOptionsMatchTheCpuInTraining) {
  // The shared gate options on both devices in training mode (dropout draws the same Philox mask
  // on both), at a step inside the schedules: loss, gate_l1 and every parameter gradient. The hard
  // gates' inputs are checked to stay clear of the threshold (see gates_clear_of_threshold).
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  const std::vector<std::pair<std::string, nlohmann::json>> cases = {
      {"score",
       {{"groups", 2},
        {"hard", true},
        {"input_norm", true},
        {"ramp_steps", 4},
        {"temperature_steps", 6},
        {"temperature_final", 0.5}}},
      {"score", {{"form", "multiplicative"}, {"source", "query_key"}, {"dropout", 0.3}}},
      {"forget", {{"heads", {1}}, {"hard", true}, {"hard_threshold", 0.3}}},
      {"output", {{"activation", "softplus"}, {"granularity", "headwise"}, {"dropout", 0.3}}},
      {"input", {{"activation", "tanh_magnitude"}, {"input_norm", true}}},
      {"context", {{"granularity", "headwise"}, {"heads", {0}}, {"dropout", 0.2}}},
      {"pair", {{"shared_projection", true}, {"input_norm", true}, {"ramp_start", 1}, {"ramp_steps", 3}}},
      {"pair", {{"hard", true}, {"hard_threshold", 0.45}, {"groups", 2}}},
      {"pair", {{"activation", "softplus"}, {"dropout", 0.3}, {"heads", {1}}}},
  };
  for (const auto& [kind, options] : cases) {
    SCOPED_TRACE(kind + " " + options.dump());
    models::ModelConfig c = small_config(kind);
    for (auto it = options.begin(); it != options.end(); ++it) {
      if (it.key() == "activation")
        c.gate.activation = it.value().get<std::string>();
      else
        c.gate.options[it.key()] = it.value();
    }
    c.validate();
    ModelPair m(c);
    m.cpu->train();
    m.gpu->train();
    m.cpu->set_step(2);
    m.gpu->set_step(2);
    const Tensor x = test::tokens(3, 13, 11, 1), y = test::tokens(3, 13, 11, 2);
    models::ForwardOptions fo;
    fo.regularizers = {"gate_l1"};
    if (c.gate.option("hard").get<bool>()) {
      ASSERT_TRUE(gates_clear_of_threshold(c, x, y, fo));
    }
    models::ForwardResult rc = m.cpu->forward(x, y, fo);
    models::ForwardResult rg = m.gpu->forward(x.to(Device::cuda), y.to(Device::cuda), fo);
    EXPECT_TRUE(close(rg.loss.item(), rc.loss.item(), 1e-5, "loss"));
    Tensor total_c = rc.loss, total_g = rg.loss;
    if (rc.regularizer("gate_l1").defined()) {
      EXPECT_TRUE(close(rg.regularizer("gate_l1").item(), rc.regularizer("gate_l1").item(), 1e-5, "gate_l1"));
      total_c = total_c + rc.regularizer("gate_l1") * 0.1;
      total_g = total_g + rg.regularizer("gate_l1") * 0.1;
    }
    total_c.backward();
    total_g.backward();
    expect_same_gradients(m);
  }
}

TEST(CudaGpt, TwentyAdamWStepsTrackTheCpu) {
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  for (std::string kind : {"output", "forget", "pair"}) {
    SCOPED_TRACE(std::string(kind));
    ModelPair m(small_config(kind));
    optim::AdamWOptions o;
    o.lr = 3e-3;
    o.schedule.kind = "constant";
    optim::AdamW opt_c(m.cpu->named_parameters(), o), opt_g(m.gpu->named_parameters(), o);
    for (std::int64_t step = 0; step < 20; ++step) {
      const Tensor x = test::tokens(4, 13, 11, 100 + 2 * static_cast<std::uint64_t>(step));
      const Tensor y = test::tokens(4, 13, 11, 101 + 2 * static_cast<std::uint64_t>(step));
      const Tensor lc = m.cpu->forward(x, y).loss, lg = m.gpu->forward(x.to(Device::cuda), y.to(Device::cuda)).loss;
      EXPECT_TRUE(close(lg.item(), lc.item(), 1e-4, "loss at step " + std::to_string(step)));
      lc.backward();
      lg.backward();
      EXPECT_TRUE(close(opt_g.clip_grad_norm(), opt_c.clip_grad_norm(), 1e-4, "grad norm"));
      opt_c.step(step);
      opt_g.step(step);
      opt_c.zero_grad();
      opt_g.zero_grad();
    }
  }
}

TEST(CudaGpt, ModuleMovesToTheGpuAndBack) {
  GATTN_REQUIRE_DEVICE();
  models::GPT a(small_config("score"), 3), b(small_config("score"), 3);
  b.to_(Device::cuda);
  for (auto& [name, p] : b.named_parameters()) EXPECT_EQ(p.device(), Device::cuda) << name;
  b.to_(Device::cpu);
  auto pa = a.named_parameters();
  std::size_t i = 0;
  for (auto& [name, p] : b.named_parameters()) EXPECT_TRUE(test::same_bits(p, pa[i++].second)) << name;
}

}  // namespace
}  // namespace gattn
