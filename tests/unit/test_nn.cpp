// nn modules: dotted parameter names, the visitor, initialisation, and a tiny MLP that learns XOR
// and a small regression with plain gradient descent through the whole stack.
#include <gtest/gtest.h>

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "framework/nn/layers.h"
#include "framework/nn/module.h"
#include "ops/elementwise.h"
#include "ops/nn_functional.h"
#include "ops/reduce.h"
#include "ops/unary.h"
#include "test_util.h"

namespace gattn {

namespace {

struct Block : nn::Module {
  std::shared_ptr<nn::LayerNorm> ln1;
  std::shared_ptr<nn::Linear> fc;
  Block(Generator& g) {
    ln1 = register_module("ln1", std::make_shared<nn::LayerNorm>(4));
    fc = register_module("fc", std::make_shared<nn::Linear>(4, 8, g));
  }
};

struct Net : nn::Module {
  std::shared_ptr<nn::Embedding> wte;
  std::shared_ptr<nn::ModuleList<Block>> blocks;
  Net(Generator& g) {
    wte = register_module("wte", std::make_shared<nn::Embedding>(10, 4, g));
    blocks = register_module("blocks", std::make_shared<nn::ModuleList<Block>>());
    for (int i = 0; i < 2; ++i) blocks->push_back(std::make_shared<Block>(g));
  }
};

// A 2-layer MLP: Linear → tanh → Linear.
struct Mlp : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  Mlp(std::int64_t in, std::int64_t hidden, std::int64_t out, Generator& g) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(in, hidden, g, nn::LinearOptions{true, 0.5}));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(hidden, out, g, nn::LinearOptions{true, 0.5}));
  }
  Tensor forward(const Tensor& x) { return fc2->forward(ops::tanh(fc1->forward(x))); }
};

void sgd_step(nn::Module& m, double lr) {
  NoGradGuard no_grad;
  m.visit_parameters([&](const std::string&, Tensor& p) {
    if (p.grad().defined()) ops::axpy_(p, -lr, p.grad());
  });
  m.zero_grad();
}

}  // namespace

TEST(Module, DottedNamesInRegistrationOrder) {
  Generator g(0);
  Net net(g);
  std::vector<std::string> names;
  for (auto& [n, p] : net.named_parameters()) names.push_back(n);
  std::vector<std::string> expected = {"wte.weight",         "blocks.0.ln1.weight", "blocks.0.ln1.bias",
                                       "blocks.0.fc.weight", "blocks.0.fc.bias",    "blocks.1.ln1.weight",
                                       "blocks.1.ln1.bias",  "blocks.1.fc.weight",  "blocks.1.fc.bias"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(net.num_parameters(), 10 * 4 + 2 * (4 + 4 + 8 * 4 + 8));
  EXPECT_EQ(net.parameter("blocks.1.fc.weight").shape(), (Shape{8, 4}));
  EXPECT_THROW(net.parameter("blocks.2.fc.weight"), ValueError);
  for (auto& p : net.parameters()) EXPECT_TRUE(p.requires_grad());
}

TEST(Module, ParameterHandlesShareStorageWithTheRegistry) {
  Generator g(0);
  Net net(g);
  Tensor w = net.parameter("blocks.0.fc.weight");
  w.fill(3.0);
  EXPECT_EQ(net.blocks->operator[](0).fc->weight.at(0), 3.0);
}

TEST(Module, InitialisationFollowsGpt2) {
  Generator g(1);
  nn::Linear big(256, 512, g);
  auto w = big.weight.to_vector();
  double s2 = 0;
  for (double v : w) s2 += v * v;
  EXPECT_NEAR(std::sqrt(s2 / w.size()), 0.02, 0.001);
  for (double v : big.bias.to_vector()) EXPECT_EQ(v, 0.0);
  nn::LayerNorm ln(8);
  for (double v : ln.weight.to_vector()) EXPECT_EQ(v, 1.0);
  // Same seed, same weights.
  Generator g2(1);
  nn::Linear again(256, 512, g2);
  EXPECT_EQ(again.weight.to_vector(), w);
}

TEST(Module, TrainEvalPropagates) {
  Generator g(0);
  Net net(g);
  net.eval();
  EXPECT_FALSE(net.blocks->operator[](1).is_training());
  net.train();
  EXPECT_TRUE(net.blocks->operator[](1).fc->is_training());
}

TEST(Module, BadSizesAndNamesAreErrors) {
  Generator g(0);
  EXPECT_THROW(nn::Linear(0, 3, g), ValueError);
  EXPECT_THROW(nn::Embedding(5, -1, g), ValueError);
  struct Dup : nn::Module {
    Dup() {
      register_parameter("w", Tensor::zeros({1}));
      register_parameter("w", Tensor::zeros({1}));
    }
  };
  EXPECT_THROW(Dup(), ValueError);
}

TEST(MlpTraining, LearnsXor) {
  Generator g(42);
  Mlp mlp(2, 8, 2, g);
  Tensor x = Tensor::from({0, 0, 0, 1, 1, 0, 1, 1}, {4, 2});
  Tensor y = Tensor::from_ints({0, 1, 1, 0}, {4});
  double loss = 0;
  for (int step = 0; step < 2000; ++step) {
    Tensor l = ops::cross_entropy(mlp.forward(x), y);
    loss = l.item();
    l.backward();
    sgd_step(mlp, 0.5);
  }
  EXPECT_LT(loss, 0.02);
  NoGradGuard no_grad;
  Tensor logits = mlp.forward(x);
  for (int i = 0; i < 4; ++i) {
    int pred = logits.at(2 * i + 1) > logits.at(2 * i) ? 1 : 0;
    EXPECT_EQ(pred, static_cast<int>(y.at(i))) << "row " << i;
  }
}

TEST(MlpTraining, FitsASmallRegression) {
  // y = sin(3x) on [-1, 1]: mean squared error falls by two orders of magnitude.
  Generator g(7);
  Mlp mlp(1, 32, 1, g);
  std::vector<double> xs, ys;
  for (int i = 0; i < 64; ++i) {
    double v = -1.0 + 2.0 * i / 63;
    xs.push_back(v);
    ys.push_back(std::sin(3 * v));
  }
  Tensor x = Tensor::from(xs, {64, 1}), y = Tensor::from(ys, {64, 1});
  double first = 0, last = 0;
  for (int step = 0; step < 3000; ++step) {
    Tensor l = ops::mean(ops::square(mlp.forward(x) - y));
    if (step == 0) first = l.item();
    last = l.item();
    l.backward();
    sgd_step(mlp, 0.1);
  }
  EXPECT_LT(last, first / 100);
  EXPECT_LT(last, 5e-3);
}

}  // namespace gattn
