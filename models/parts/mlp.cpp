// Mlp: GPT-2's GELU MLP, Llama's SwiGLU or the sigmoid GLU, each op fused where the device can (the
// GELU in the GEMM's epilogue on CUDA, the gated product in one pass each way).
#include "models/parts/mlp.h"

#include "models/attention.h"
#include "ops/glu.h"
#include "ops/matmul.h"

namespace gattn::models {

Mlp::Mlp(const ModelConfig& config, Generator& init, const std::string& site) {
  const std::int64_t C = config.n_embd, F = config.mlp_width();
  nn::LinearOptions in_opt;
  in_opt.dtype = config.dtype;
  in_opt.bias = config.bias;
  nn::LinearOptions proj_opt = in_opt;
  proj_opt.init_std = residual_init_std(config, site);  // GPT-2 residual scaling
  // The initialisation draws in registration order: fc, proj for gelu (GPT-2's stream unchanged).
  if (config.gated_mlp()) {
    if (config.mlp == kMlpGlu) gate_activation = glu::Activation::sigmoid;
    gate = register_module("gate", std::make_shared<nn::Linear>(C, F, init, in_opt));
    up = register_module("up", std::make_shared<nn::Linear>(C, F, init, in_opt));
  } else {
    fc = register_module("fc", std::make_shared<nn::Linear>(C, F, init, in_opt));
  }
  proj = register_module("proj", std::make_shared<nn::Linear>(F, C, init, proj_opt));
}

Tensor Mlp::forward(const Tensor& h) const {
  if (gate) return proj->forward(ops::glu(gate->forward(h), up->forward(h), gate_activation));
  // fc and GELU in one op: on the GPU one cuBLASLt GEMM with bias and GELU in its epilogue.
  return proj->forward(ops::linear_gelu(h, fc->weight, fc->bias));
}

}  // namespace gattn::models
