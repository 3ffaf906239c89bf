// Linear, Embedding, LayerNorm and RmsNorm: thin modules over the fused ops.
#include "framework/nn/layers.h"

#include "ops/matmul.h"
#include "ops/nn_functional.h"

namespace gattn::nn {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, Generator& gen, const LinearOptions& options) {
  if (in_features <= 0 || out_features <= 0)
    throw ValueError("Linear: sizes must be positive, got in=" + std::to_string(in_features) +
                     " out=" + std::to_string(out_features));
  Tensor w = Tensor::empty({out_features, in_features}, options.dtype);
  gen.normal_(w, 0.0, options.init_std);
  weight = register_parameter("weight", w);
  if (options.bias) bias = register_parameter("bias", Tensor::zeros({out_features}, options.dtype));
}

Tensor Linear::forward(const Tensor& x) const { return ops::linear(x, weight, bias); }

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t dim, Generator& gen, double init_std, DType dtype) {
  if (num_embeddings <= 0 || dim <= 0)
    throw ValueError("Embedding: sizes must be positive, got " + std::to_string(num_embeddings) + "x" +
                     std::to_string(dim));
  Tensor w = Tensor::empty({num_embeddings, dim}, dtype);
  gen.normal_(w, 0.0, init_std);
  weight = register_parameter("weight", w);
}

Tensor Embedding::forward(const Tensor& indices) const { return ops::embedding(weight, indices); }

LayerNorm::LayerNorm(std::int64_t dim, double eps_, DType dtype) : eps(eps_) {
  if (dim <= 0) throw ValueError("LayerNorm: size must be positive, got " + std::to_string(dim));
  weight = register_parameter("weight", Tensor::ones({dim}, dtype));
  bias = register_parameter("bias", Tensor::zeros({dim}, dtype));
}

Tensor LayerNorm::forward(const Tensor& x) const { return ops::layer_norm(x, weight, bias, eps); }

RmsNorm::RmsNorm(std::int64_t dim, double eps_, bool offset_, DType dtype) : eps(eps_), offset(offset_) {
  if (dim <= 0) throw ValueError("RmsNorm: size must be positive, got " + std::to_string(dim));
  weight = register_parameter("weight", offset ? Tensor::zeros({dim}, dtype) : Tensor::ones({dim}, dtype));
}

Tensor RmsNorm::forward(const Tensor& x) const { return ops::rms_norm(x, weight, eps, offset); }

}  // namespace gattn::nn
