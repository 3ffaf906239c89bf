// The regularisers steer training (docs/gates.md): on the same seed and data, a positive gate-entropy
// weight ends with lower gate entropy than weight 0 (gates pushed towards 0/1), and a positive
// attention-entropy weight with lower attention entropy.
#include <gtest/gtest.h>

#include "core/autograd/grad_mode.h"
#include "framework/optim/adamw.h"
#include "models/gpt.h"
#include "ops/elementwise.h"
#include "test_util.h"

namespace gattn {

namespace {

models::ModelConfig tiny_output_model() {
  models::ModelConfig c;
  c.vocab_size = 16;
  c.block_size = 16;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.gate.kind = "output";
  return c;
}

struct Measured {
  double gate_entropy = 0, attn_entropy = 0;
};

// Trains 60 steps with the given weights and returns the regularisers' values on a fixed batch.
Measured train_with(double w_gate, double w_attn) {
  models::GPT model(tiny_output_model(), 5);
  optim::AdamWOptions opt;
  opt.lr = 1e-2;
  opt.weight_decay = 0;
  opt.schedule.kind = "constant";
  opt.schedule.max_steps = 60;
  optim::AdamW adamw(model.named_parameters(), opt);
  Generator data(11);
  for (std::int64_t step = 0; step < 60; ++step) {
    Tensor idx = Tensor::empty({4, 16}, DType::i32);
    data.randint_(idx, 16);
    Tensor targets = Tensor::empty({4, 16}, DType::i32);
    data.randint_(targets, 16);
    models::ForwardOptions fo;
    fo.regularizers = {"gate_entropy", "attn_entropy"};
    models::ForwardResult r = model.forward(idx, targets, fo);
    Tensor total = r.loss + r.regularizer("gate_entropy") * w_gate + r.regularizer("attn_entropy") * w_attn;
    total.backward();
    adamw.clip_grad_norm();
    adamw.step(step);
    adamw.zero_grad();
  }
  NoGradGuard no_grad;
  model.eval();
  Tensor idx = Tensor::empty({4, 16}, DType::i32);
  Generator fixed(99);
  fixed.randint_(idx, 16);
  models::ForwardOptions fo;
  fo.regularizers = {"gate_entropy", "attn_entropy"};
  models::ForwardResult r = model.forward(idx, Tensor(), fo);
  return {r.regularizer("gate_entropy").item(), r.regularizer("attn_entropy").item()};
}

}  // namespace

TEST(Regularization, PositiveGateEntropyWeightLowersGateEntropy) {
  Measured plain = train_with(0.0, 0.0), pushed = train_with(1.0, 0.0);
  EXPECT_LT(pushed.gate_entropy, plain.gate_entropy - 0.05)
      << "gate entropy with weight 1: " << pushed.gate_entropy << ", with weight 0: " << plain.gate_entropy;
}

TEST(Regularization, PositiveAttentionEntropyWeightLowersAttentionEntropy) {
  Measured plain = train_with(0.0, 0.0), pushed = train_with(0.0, 1.0);
  EXPECT_LT(pushed.attn_entropy, plain.attn_entropy - 0.05)
      << "attention entropy with weight 1: " << pushed.attn_entropy << ", with weight 0: " << plain.attn_entropy;
}

}  // namespace gattn
