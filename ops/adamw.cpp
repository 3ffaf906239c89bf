// Device dispatch of the optimizer's multi-tensor kernels: the CPU tensors of a call go to one
// parallel region (ops/cpu/adamw.h), the CUDA tensors to one multi-tensor launch (ops/cuda/adamw.h).
#include "ops/adamw.h"

#include "core/autograd/grad_mode.h"
#include "ops/common.h"
#include "ops/cpu/adamw.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/unary.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/adamw.h"
#include "ops/cuda/host_util.h"
#endif

namespace gattn::ops {

namespace {

void check_update(const AdamWParam& u) {
  const char* op = "adamw_update_";
  check_floating_any_device(u.param, op);
  for (const Tensor* t : {&u.grad, &u.exp_avg, &u.exp_avg_sq}) {
    check_same_dtype(u.param, *t, op);
    if (t->shape() != u.param.shape())
      throw ShapeError(std::string(op) + ": a moment or gradient of shape " + shape_str(t->shape()) +
                       " for a parameter of shape " + shape_str(u.param.shape()));
  }
  common_device(op, {u.param, u.grad, u.exp_avg, u.exp_avg_sq});
}

template <class T>
cpu::AdamWHostParam<T> host_param(const AdamWParam& u) {
  return {u.param.kernel_data<T>(),      u.grad.kernel_data<T>(), u.exp_avg.kernel_data<T>(),
          u.exp_avg_sq.kernel_data<T>(), u.param.numel(),         adamw::coeffs_as<T>(u.coeffs)};
}

}  // namespace

void adamw_update_(const std::vector<AdamWParam>& params, const adamw::Settings& settings) {
  std::vector<cpu::AdamWHostParam<float>> host_f32;
  std::vector<cpu::AdamWHostParam<double>> host_f64;
#ifdef GATTN_WITH_CUDA
  std::vector<cuda::AdamWTensor> device_params;
#endif
  for (const AdamWParam& u : params) {
    check_update(u);
    if (u.param.device() == Device::cuda) {
#ifdef GATTN_WITH_CUDA
      device_params.push_back({u.param.kernel_data<float>(), u.grad.kernel_data<float>(),
                               u.exp_avg.kernel_data<float>(), u.exp_avg_sq.kernel_data<float>(), u.param.numel(),
                               adamw::coeffs_as<float>(u.coeffs)});
#endif
      continue;
    }
    if (u.param.dtype() == DType::f32)
      host_f32.push_back(host_param<float>(u));
    else
      host_f64.push_back(host_param<double>(u));
  }
  cpu::adamw_update_all(host_f32, adamw::hyper_as<float>(settings));
  cpu::adamw_update_all(host_f64, adamw::hyper_as<double>(settings));
#ifdef GATTN_WITH_CUDA
  if (!device_params.empty())
    cuda::adamw_multi_tensor_f32(device_params, adamw::hyper_as<float>(settings), cuda::stream());
#endif
}

double sum_of_squares(const std::vector<Tensor>& tensors) {
  NoGradGuard no_grad;
  Tensor device_sum;  // Σ x² over the CUDA tensors, kept on the device and read once (one sync)
  std::vector<cpu::SquaresHostTensor<float>> host_f32;
  std::vector<cpu::SquaresHostTensor<double>> host_f64;
  std::vector<std::int64_t> first_block;  // per host tensor: its first partial, in list order
  std::int64_t blocks = 0;
  for (const Tensor& x : tensors) {
    check_floating_any_device(x, "sum_of_squares");
    if (x.device() == Device::cuda) {
      // The reduction kernels sum in a shape-fixed order: the same bits every run.
      Tensor s = sum(square(x));
      device_sum = device_sum.defined() ? add(device_sum, s) : s;
      continue;
    }
    first_block.push_back(blocks);
    blocks += cpu::optimizer_blocks(x.numel());
  }
  std::vector<double> partials(static_cast<std::size_t>(blocks), 0.0);
  std::size_t host = 0;
  for (const Tensor& x : tensors) {
    if (x.device() == Device::cuda) continue;
    double* out = partials.data() + first_block[host++];
    if (x.dtype() == DType::f32)
      host_f32.push_back({x.data<float>(), x.numel(), out});
    else
      host_f64.push_back({x.data<double>(), x.numel(), out});
  }
  cpu::block_sums_of_squares(host_f32);
  cpu::block_sums_of_squares(host_f64);
  double total = 0.0;
  for (double p : partials) total += p;
  if (device_sum.defined()) total += device_sum.item();
  return total;
}

}  // namespace gattn::ops
