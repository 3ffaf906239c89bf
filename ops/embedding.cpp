// embedding (autograd-aware): a row gather from weight [V, C] by i32 indices; kernels in
// ops/cpu/embedding.h. Backward: dweight[v] = Σ_{i : idx[i] = v} g[i] (rows never picked get 0),
// summed in index order for a deterministic result; the indices get no gradient.
#include "ops/cpu/embedding.h"

#include "ops/common.h"
#include "ops/nn_functional.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/embedding.h"
#include "ops/cuda/host_util.h"
#include "ops/cuda/index_check.h"
#endif

namespace gattn::ops {

namespace {

std::string bad_index_message(std::int64_t value, std::int64_t pos, std::int64_t V) {
  std::string msg = "embedding: index ";
  msg += std::to_string(value);
  msg += " (at flat position ";
  msg += std::to_string(pos);
  msg += ") is out of range for V = ";
  msg += std::to_string(V);
  return msg;
}

#ifdef GATTN_WITH_CUDA
Tensor embedding_cuda(const Tensor& weight, const Tensor& indices, std::int64_t V, std::int64_t C) {
  const std::int64_t n = indices.numel();
  const auto* idx = static_cast<const int*>(indices.raw_data());
  if (std::int64_t bad = cuda::first_bad_index_i32(idx, n, V, 0, false, cuda::stream()); bad >= 0)
    throw ValueError(bad_index_message(static_cast<std::int64_t>(indices.at(bad)), bad, V));
  Shape out_shape = indices.shape();
  out_shape.push_back(C);
  Tensor out = Tensor::empty(out_shape, weight.dtype(), Device::cuda);
  cuda::embedding_forward_f32(static_cast<const float*>(weight.raw_data()), idx, static_cast<float*>(out.raw_data()), n,
                              C, cuda::stream());
  return autograd::record(
      "embedding", out, {weight}, [idx_t = indices.detach(), V, C](const Tensor& g_in, const std::vector<bool>&) {
        Tensor g = g_in.to(DType::f32);
        Tensor dw = Tensor::empty({V, C}, DType::f32, Device::cuda);  // every row is written
        cuda::embedding_backward_f32(static_cast<const float*>(g.raw_data()), static_cast<const int*>(idx_t.raw_data()),
                                     static_cast<float*>(dw.raw_data()), idx_t.numel(), V, C, cuda::stream());
        return std::vector<Tensor>{dw};
      });
}
#endif

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  check_floating_any_device(weight, "embedding");
  if (!indices.defined()) throw ValueError("embedding: undefined indices");
  if (indices.dtype() != DType::i32) throw DTypeError("embedding: indices must be i32, got " + indices.str());
  const Device device = common_device("embedding", {weight, indices});
  if (weight.dim() != 2) throw ShapeError("embedding: weight must be [V, C], got " + shape_str(weight.shape()));
  const std::int64_t V = weight.size(0), C = weight.size(1);
#ifdef GATTN_WITH_CUDA
  if (device == Device::cuda) return embedding_cuda(weight, indices, V, C);
#else
  (void)device;
#endif
  const std::int64_t n = indices.numel();
  const std::int32_t* idx = indices.data<std::int32_t>();
  if (std::int64_t bad = cpu::embedding_first_bad_index(idx, n, V); bad >= 0)
    throw ValueError(bad_index_message(idx[bad], bad, V));

  Shape out_shape = indices.shape();
  out_shape.push_back(C);
  Tensor out = Tensor::empty(out_shape, weight.dtype());
  dispatch_float(weight.dtype(), "embedding",
                 [&]<class T>() { cpu::embedding_forward(weight.data<T>(), idx, out.data<T>(), n, C); });

  return autograd::record(
      "embedding", out, {weight},
      [idx_t = indices.detach(), V, C, dtype = weight.dtype()](const Tensor& g_in, const std::vector<bool>&) {
        Tensor g = g_in.to(dtype);
        Tensor dw = Tensor::zeros({V, C}, dtype);
        dispatch_float(dtype, "embedding backward", [&]<class T>() {
          cpu::embedding_backward(g.data<T>(), idx_t.data<std::int32_t>(), dw.data<T>(), idx_t.numel(), C);
        });
        return std::vector<Tensor>{dw};
      });
}

}  // namespace gattn::ops
