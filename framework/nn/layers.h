// The basic layers: Linear (y = x Wᵀ + b, W stored [out, in]), Embedding and LayerNorm.
// Initialisation follows GPT-2: weights normal(0, std) from a Philox generator, biases zero,
// LayerNorm weight one.
#pragma once
#include "core/tensor/random.h"
#include "framework/nn/module.h"

namespace gattn::nn {

struct LinearOptions {
  bool bias = true;
  double init_std = 0.02;
  DType dtype = DType::f32;
};

class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, Generator& gen, const LinearOptions& options = {});
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;  // bias undefined when options.bias is false
};

class Embedding : public Module {
 public:
  Embedding(std::int64_t num_embeddings, std::int64_t dim, Generator& gen, double init_std = 0.02,
            DType dtype = DType::f32);
  Tensor forward(const Tensor& indices) const;
  Tensor weight;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::int64_t dim, double eps = 1e-5, DType dtype = DType::f32);
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;
  double eps;
};

}  // namespace gattn::nn
