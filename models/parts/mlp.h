// The MLP part of a block (prefix `mlp.`), picked by model.mlp:
//   gelu   (GPT-2):  proj(GELU_tanh(fc(h)))            mlp.fc [F, C], mlp.proj [C, F]
//   swiglu (Llama):  proj(silu(gate(h)) ⊙ up(h))       mlp.gate, mlp.up [F, C], mlp.proj [C, F]
//   glu (sigmoid):   proj(σ(gate(h)) ⊙ up(h))          as swiglu
// with F = model.mlp_width() and biases when model.bias. mlp.proj starts at GPT-2's residual scale.
#pragma once
#include <memory>
#include <string>

#include "core/tensor/random.h"
#include "framework/nn/layers.h"
#include "framework/nn/module.h"
#include "models/config.h"
#include "ops/glu_element.h"

namespace gattn::models {

class Mlp : public nn::Module {
 public:
  // `site` fixes the residual scale of mlp.proj (the encoder's blocks count the encoder's depth).
  Mlp(const ModelConfig& config, Generator& init, const std::string& site);
  // h [B, T, C] -> [B, T, C]
  Tensor forward(const Tensor& h) const;
  glu::Activation gate_activation = glu::Activation::silu;  // swiglu's silu or glu's σ
  std::shared_ptr<nn::Linear> fc;                           // gelu
  std::shared_ptr<nn::Linear> gate, up;                     // swiglu, glu
  std::shared_ptr<nn::Linear> proj;
};

}  // namespace gattn::models
