// embedding (autograd-aware): a row gather from weight [V, C] by i32 indices; kernels in
// ops/cpu/embedding.h. Backward: dweight[v] = Σ_{i : idx[i] = v} g[i] (rows never picked get 0),
// summed in index order for a deterministic result; the indices get no gradient.
#include "ops/nn_functional.h"

#include "ops/common.h"
#include "ops/cpu/embedding.h"

namespace gattn::ops {

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  check_floating(weight, "embedding");
  if (!indices.defined()) throw ValueError("embedding: undefined indices");
  if (indices.dtype() != DType::i32) throw DTypeError("embedding: indices must be i32, got " + indices.str());
  check_cpu(indices, "embedding");
  if (weight.dim() != 2) throw ShapeError("embedding: weight must be [V, C], got " + shape_str(weight.shape()));
  const std::int64_t V = weight.size(0), C = weight.size(1);
  const std::int64_t n = indices.numel();
  const std::int32_t* idx = indices.data<std::int32_t>();
  if (std::int64_t bad = cpu::embedding_first_bad_index(idx, n, V); bad >= 0)
    throw ValueError("embedding: index " + std::to_string(idx[bad]) + " (at flat position " + std::to_string(bad) +
                     ") is out of range for V = " + std::to_string(V));

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
