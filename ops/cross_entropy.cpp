// cross_entropy (autograd-aware), fused: mean over non-ignored rows of lse(x_r) − x_r,t[r], from the
// row log-sum-exp alone; kernels in ops/cpu/cross_entropy.h. Backward with the scalar gradient g and
// count = number of non-ignored rows:
//   d loss / d x_rj = (softmax(x_r)_j − [j = t_r]) · g / count, 0 on ignored rows (and everywhere
//   when count = 0, where the loss is the constant 0).
// softmax(x_r) = exp(x_r − lse_r) is rebuilt from the saved lse, so no probabilities are stored.
#include "ops/nn_functional.h"

#include "ops/common.h"
#include "ops/cpu/cross_entropy.h"

namespace gattn::ops {

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index) {
  check_floating(logits, "cross_entropy");
  if (!targets.defined()) throw ValueError("cross_entropy: undefined targets");
  if (targets.dtype() != DType::i32) throw DTypeError("cross_entropy: targets must be i32, got " + targets.str());
  check_cpu(targets, "cross_entropy");
  if (logits.dim() == 0) throw ShapeError("cross_entropy: logits need a class axis, got the scalar " + logits.str());
  const Shape row_shape(logits.shape().begin(), logits.shape().end() - 1);
  if (targets.shape() != row_shape)
    throw ShapeError("cross_entropy: logits " + shape_str(logits.shape()) + " need targets of shape " +
                     shape_str(row_shape) + ", got " + shape_str(targets.shape()));
  const std::int64_t V = logits.size(-1);
  const std::int64_t rows = shape_numel(row_shape);
  const std::int32_t* t = targets.data<std::int32_t>();
  if (std::int64_t bad = cpu::cross_entropy_first_bad_target(t, rows, V, ignore_index); bad >= 0)
    throw ValueError("cross_entropy: target " + std::to_string(t[bad]) + " (at row " + std::to_string(bad) +
                     ") is out of range for V = " + std::to_string(V) + " and is not ignore_index " +
                     std::to_string(ignore_index));

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
