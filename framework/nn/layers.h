// The basic layers: Linear (y = x Wᵀ + b, W stored [out, in]), Embedding, and the two norms behind
// one interface, LayerNorm and RmsNorm. Initialisation follows GPT-2: weights normal(0, std) from a
// Philox generator, biases zero, norm weights one (zero for an offset RmsNorm, applied as 1 + w).
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

// A normalisation over the last axis: what a block's sublayers and the final stream are put through.
class Norm : public Module {
 public:
  virtual Tensor forward(const Tensor& x) const = 0;
};

// (x − mean)/√(var + eps)·weight + bias.
class LayerNorm : public Norm {
 public:
  explicit LayerNorm(std::int64_t dim, double eps = 1e-5, DType dtype = DType::f32);
  Tensor forward(const Tensor& x) const override;
  Tensor weight, bias;
  double eps;
};

// x/√(mean(x²) + eps)·weight, or ·(1 + weight) with `offset` (the weight then starts at 0); no bias.
class RmsNorm : public Norm {
 public:
  explicit RmsNorm(std::int64_t dim, double eps = 1e-6, bool offset = false, DType dtype = DType::f32);
  Tensor forward(const Tensor& x) const override;
  Tensor weight;
  double eps;
  bool offset;
};

}  // namespace gattn::nn
