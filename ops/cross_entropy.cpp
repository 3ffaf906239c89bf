// cross_entropy (autograd-aware), fused: mean over non-ignored rows of lse(x_r) − x_r,t[r], from the
// row log-sum-exp alone; kernels in ops/cpu/cross_entropy.h. Backward with the scalar gradient g and
// count = number of non-ignored rows:
//   d loss / d x_rj = (softmax(x_r)_j − [j = t_r]) · g / count, 0 on ignored rows (and everywhere
//   when count = 0, where the loss is the constant 0).
// softmax(x_r) = exp(x_r − lse_r) is rebuilt from the saved lse, so no probabilities are stored.
#include "ops/cpu/cross_entropy.h"

#include "ops/common.h"
#include "ops/nn_functional.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/cross_entropy.h"
#include "ops/cuda/host_util.h"
#include "ops/cuda/index_check.h"
#endif

namespace gattn::ops {

namespace {

std::string bad_target_message(std::int64_t value, std::int64_t row, std::int64_t V, std::int32_t ignore_index) {
  std::string msg = "cross_entropy: target ";
  msg += std::to_string(value);
  msg += " (at row ";
  msg += std::to_string(row);
  msg += ") is out of range for V = ";
  msg += std::to_string(V);
  msg += " and is not ignore_index ";
  msg += std::to_string(ignore_index);
  return msg;
}

#ifdef GATTN_WITH_CUDA
// The CUDA path: the same op with the loss, its row count and the lse all kept on the device.
Tensor cross_entropy_cuda(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index, std::int64_t rows,
                          std::int64_t V) {
  const auto* t = static_cast<const int*>(targets.raw_data());
  if (std::int64_t bad = cuda::first_bad_index_i32(t, rows, V, ignore_index, true, cuda::stream()); bad >= 0)
    throw ValueError(bad_target_message(static_cast<std::int64_t>(targets.at(bad)), bad, V, ignore_index));
  Tensor lse = Tensor::empty({rows}, DType::f32, Device::cuda);
  Tensor out = Tensor::empty({}, DType::f32, Device::cuda);
  Tensor count = Tensor::empty({1}, DType::i32, Device::cuda);
  cuda::cross_entropy_forward_f32(static_cast<const float*>(logits.raw_data()), t, static_cast<float*>(lse.raw_data()),
                                  static_cast<float*>(out.raw_data()), static_cast<int*>(count.raw_data()), rows, V,
                                  ignore_index, cuda::stream());
  return autograd::record("cross_entropy", out, {logits},
                          [x = logits.detach(), t_saved = targets.detach(), lse, count, rows, V, ignore_index](
                              const Tensor& g_in, const std::vector<bool>&) {
                            Tensor g = g_in.to(DType::f32).to(Device::cuda);
                            Tensor dx = Tensor::empty(x.shape(), x.dtype(), Device::cuda);
                            cuda::cross_entropy_backward_f32(
                                static_cast<const float*>(x.raw_data()), static_cast<const int*>(t_saved.raw_data()),
                                static_cast<const float*>(lse.raw_data()), static_cast<const float*>(g.raw_data()),
                                static_cast<const int*>(count.raw_data()), static_cast<float*>(dx.raw_data()), rows, V,
                                ignore_index, cuda::stream());
                            return std::vector<Tensor>{dx};
                          });
}
#endif

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index) {
  check_floating_any_device(logits, "cross_entropy");
  if (!targets.defined()) throw ValueError("cross_entropy: undefined targets");
  if (targets.dtype() != DType::i32) throw DTypeError("cross_entropy: targets must be i32, got " + targets.str());
  const Device device = common_device("cross_entropy", {logits, targets});
  if (logits.dim() == 0) throw ShapeError("cross_entropy: logits need a class axis, got the scalar " + logits.str());
  const Shape row_shape(logits.shape().begin(), logits.shape().end() - 1);
  if (targets.shape() != row_shape)
    throw ShapeError("cross_entropy: logits " + shape_str(logits.shape()) + " need targets of shape " +
                     shape_str(row_shape) + ", got " + shape_str(targets.shape()));
  const std::int64_t V = logits.size(-1);
  const std::int64_t rows = shape_numel(row_shape);
#ifdef GATTN_WITH_CUDA
  if (device == Device::cuda) return cross_entropy_cuda(logits, targets, ignore_index, rows, V);
#else
  (void)device;
#endif
  const std::int32_t* t = targets.data<std::int32_t>();
  if (std::int64_t bad = cpu::cross_entropy_first_bad_target(t, rows, V, ignore_index); bad >= 0)
    throw ValueError(bad_target_message(t[bad], bad, V, ignore_index));

  const DType dt = logits.dtype();
  Tensor lse = Tensor::empty({rows}, dt);
  Tensor row_loss = Tensor::empty({rows}, dt);
  std::int64_t count = 0;
  double loss = 0;
  dispatch_float(dt, "cross_entropy", [&]<class T>() {
    cpu::cross_entropy_forward(logits.data<T>(), t, lse.data<T>(), row_loss.data<T>(), rows, V, ignore_index);
    loss = cpu::cross_entropy_mean(row_loss.data<T>(), t, rows, ignore_index, &count);
  });
  Tensor out = Tensor::scalar(loss, dt);

  return autograd::record("cross_entropy", out, {logits},
                          [x = logits.detach(), t_saved = targets.detach(), lse, count, rows, V, ignore_index](
                              const Tensor& g, const std::vector<bool>&) {
                            Tensor dx = Tensor::empty(x.shape(), x.dtype());
                            const double scale = count ? g.item() / static_cast<double>(count) : 0.0;
                            dispatch_float(x.dtype(), "cross_entropy backward", [&]<class T>() {
                              cpu::cross_entropy_backward(x.data<T>(), t_saved.data<std::int32_t>(), lse.data<T>(),
                                                          static_cast<T>(scale), dx.data<T>(), rows, V, ignore_index);
                            });
                            return std::vector<Tensor>{dx};
                          });
}

}  // namespace gattn::ops
