// The fused multi-tensor AdamW kernel against framework/optim's CPU AdamW: two parameter groups
// with their own lr and weight decay, one frozen for the first step (left out of the kernel's list,
// so its step count starts later), odd tensor sizes across several chunks. Skips without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cuda_test_util.h"
#include "framework/optim/adamw.h"
#ifdef GATTN_WITH_CUDA
#include "core/cuda/stream.h"
#include "ops/cuda/adamw.h"
#endif

namespace gattn {
namespace {

TEST(CudaAdamW, MultiTensorKernelMatchesCpuAdamWWithGroupsAndFreeze) {
  GATTN_REQUIRE_DEVICE();
#ifdef GATTN_WITH_CUDA
  const std::vector<std::pair<std::string, Shape>> shapes = {
      {"a.w", {33, 7}}, {"a.b", {1}}, {"b.w", {4097, 3}}, {"b.v", {1000}}};
  optim::AdamWOptions o;
  o.schedule.kind = "constant";
  o.weight_decay = 0.0;
  optim::ParamGroupOptions ga, gb;
  ga.name = "ga";
  ga.match = {"a.*"};
  ga.lr = 1e-2;
  ga.weight_decay = 0.1;
  gb.name = "gb";
  gb.match = {"b.*"};
  gb.lr = 3e-3;
  gb.weight_decay = 0.0;
  gb.freeze_steps = 1;
  o.groups = {ga, gb};

  optim::AdamW::NamedParameters cpu_params;
  std::vector<Tensor> gpu_p, gpu_m, gpu_v;
  std::uint64_t seed = 200;
  for (const auto& [name, shape] : shapes) {
    const Tensor p = test::frand(shape, ++seed);
    cpu_params.emplace_back(name, p.clone());
    gpu_p.push_back(p.to(Device::cuda));
    gpu_m.push_back(Tensor::zeros(shape, DType::f32, Device::cuda));
    gpu_v.push_back(Tensor::zeros(shape, DType::f32, Device::cuda));
  }
  optim::AdamW cpu_opt(cpu_params, o);

  const adamw::Hyper<float> hyper = adamw::hyper_as<float>(adamw::Settings{o.beta1, o.beta2, o.eps});
  std::vector<std::int64_t> t(shapes.size(), 0);
  for (std::int64_t step = 0; step < 3; ++step) {
    std::vector<Tensor> grads;
    std::vector<cuda::AdamWTensor> list;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const Tensor g = test::frand(shapes[i].second, 300 + static_cast<std::uint64_t>(step * 10 + i));
      cpu_params[i].second.set_grad(g.clone());
      grads.push_back(g.to(Device::cuda));
      const bool in_a = i < 2;
      if (!in_a && step < gb.freeze_steps) continue;  // frozen: not in this step's list
      const double lr = in_a ? *ga.lr : *gb.lr, wd = in_a ? *ga.weight_decay : *gb.weight_decay;
      const double ti = static_cast<double>(++t[i]);
      list.push_back({static_cast<float*>(gpu_p[i].raw_data()), static_cast<const float*>(grads.back().raw_data()),
                      static_cast<float*>(gpu_m[i].raw_data()), static_cast<float*>(gpu_v[i].raw_data()),
                      gpu_p[i].numel(),
                      adamw::coeffs_as<float>(adamw::ParamCoeffs{1.0 - lr * wd, lr / (1.0 - std::pow(o.beta1, ti)),
                                                                 1.0 / std::sqrt(1.0 - std::pow(o.beta2, ti))})});
    }
    cpu_opt.step(step);
    cuda::adamw_multi_tensor_f32(list, hyper, cuda::compute_stream().handle());
    for (std::size_t i = 0; i < shapes.size(); ++i)
      // Same f32 operations in the same order, each rounded once on both sides (the kernel's
      // __f*_rn, the CPU file built with -ffp-contract=off): equal bit for bit.
      EXPECT_TRUE(test::all_close(gpu_p[i], cpu_opt.named_parameters()[i].second, 0.0, 0.0))
          << shapes[i].first << " after step " << step;
  }
#endif
}

// The AdamW class itself with CUDA parameters: clipping, groups, freeze and the non-finite-grad
// probe behave as with CPU parameters.
TEST(CudaAdamW, OptimizerOnCudaParametersTracksTheCpuOptimizer) {
  GATTN_REQUIRE_DEVICE();
  optim::AdamWOptions o;
  o.lr = 1e-2;
  o.schedule.kind = "constant";
  o.weight_decay = 0.1;
  o.grad_clip = 0.5;  // the random grads' norm is far above: clipping runs every step
  optim::ParamGroupOptions frozen;
  frozen.name = "late";
  frozen.match = {"late.*"};
  frozen.lr_scale = 0.5;
  frozen.weight_decay = 0.0;
  frozen.freeze_steps = 2;
  o.groups = {frozen};
  const std::vector<std::pair<std::string, Shape>> shapes = {{"w", {65, 33}}, {"b", {7}}, {"late.w", {4097}}};
  optim::AdamW::NamedParameters cpu_params, gpu_params;
  std::uint64_t seed = 400;
  for (const auto& [name, shape] : shapes) {
    const Tensor p = test::frand(shape, ++seed);
    cpu_params.emplace_back(name, p.clone());
    gpu_params.emplace_back(name, p.to(Device::cuda));
  }
  optim::AdamW cpu_opt(cpu_params, o), gpu_opt(gpu_params, o);
  for (std::int64_t step = 0; step < 4; ++step) {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const Tensor g = test::frand(shapes[i].second, 500 + static_cast<std::uint64_t>(step * 10 + i));
      cpu_params[i].second.set_grad(g.clone());
      gpu_params[i].second.set_grad(g.to(Device::cuda));
    }
    const double cpu_norm = cpu_opt.clip_grad_norm(), gpu_norm = gpu_opt.clip_grad_norm();
    EXPECT_NEAR(gpu_norm, cpu_norm, 1e-5 * cpu_norm) << "step " << step;
    cpu_opt.step(step);
    gpu_opt.step(step);
    for (std::size_t i = 0; i < shapes.size(); ++i)
      EXPECT_TRUE(test::all_close(gpu_params[i].second, cpu_params[i].second, 1e-6, 1e-5))
          << shapes[i].first << " after step " << step;
  }
  EXPECT_EQ(gpu_opt.state("late.w").t, 2);  // frozen for steps 0 and 1
  EXPECT_EQ(gpu_opt.first_non_finite_grad(), "");
  Tensor bad = test::frand({7}, 600);
  bad.data<float>()[3] = std::numeric_limits<float>::infinity();
  gpu_params[1].second.set_grad(bad.to(Device::cuda));
  EXPECT_EQ(gpu_opt.first_non_finite_grad(), "b");
}

}  // namespace
}  // namespace gattn
