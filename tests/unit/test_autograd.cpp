// The autograd engine: graph walking, accumulation, shared sub-expressions, no_grad, detach,
// buffer release, and gradchecks of the broadcasting arithmetic it is built on.
#include <gtest/gtest.h>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/gradient_sum.h"
#include "core/autograd/node.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "test_util.h"

namespace gattn {

TEST(Autograd, ProductRuleOnScalars) {
  Tensor x = Tensor::scalar(3.0, DType::f64).set_requires_grad(true);
  Tensor y = Tensor::scalar(4.0, DType::f64).set_requires_grad(true);
  Tensor z = x * y + x;  // dz/dx = y + 1, dz/dy = x
  z.backward();
  EXPECT_EQ(x.grad().item(), 5.0);
  EXPECT_EQ(y.grad().item(), 3.0);
}

TEST(Autograd, SharedSubexpressionSumsBothPaths) {
  Tensor x = Tensor::scalar(2.0, DType::f64).set_requires_grad(true);
  Tensor a = x * x;      // used twice below
  Tensor z = a * a + a;  // z = x⁴ + x², dz/dx = 4x³ + 2x = 36
  z.backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 36.0);
}

TEST(Autograd, GradientsAccumulateAcrossBackwardCalls) {
  Tensor x = Tensor::from({1, 2, 3}, {3}, DType::f64).set_requires_grad(true);
  Tensor w = Tensor::from({0.5, -1, 2}, {3}, DType::f64);
  (x * w).backward(Tensor::ones({3}, DType::f64));
  (x * w).backward(Tensor::ones({3}, DType::f64));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<double>{1, -2, 4}));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, AccumulatedGradIsNotAnAliasOfAnotherTensor) {
  // The first gradient reaching a leaf may be the caller's gradient tensor itself; accumulating a
  // second one must not write into the caller's buffer.
  Tensor x = Tensor::from({1, 2}, {2}, DType::f64).set_requires_grad(true);
  Tensor g = Tensor::from({1, 1}, {2}, DType::f64);
  (x + Tensor::zeros({2}, DType::f64)).backward(g);
  (x + Tensor::zeros({2}, DType::f64)).backward(g);
  EXPECT_EQ(g.to_vector(), (std::vector<double>{1, 1}));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<double>{2, 2}));
}

TEST(Autograd, GradientSumsAddElementwiseInBothForms) {
  // The engine's own sum (core/autograd/gradient_sum.h): below and above the size at which its
  // loop runs threaded, both dtypes, out of place and in place.
  for (std::int64_t n : {1, 7, 40000}) {
    for (DType dtype : {DType::f32, DType::f64}) {
      const Tensor a = test::rand({n}, 3, -2, 2, DType::f64).to(dtype);
      const Tensor b = test::rand({n}, 4, -2, 2, DType::f64).to(dtype);
      const std::vector<double> a_before = a.to_vector();
      const Tensor want = a + b;  // the ops' add, which the engine used before
      const Tensor sum = autograd::sum_gradients(a, b, "test");
      EXPECT_EQ(sum.to_vector(), want.to_vector()) << n;
      Tensor acc = a.clone();
      autograd::add_gradient_into(acc, b, "test");
      EXPECT_EQ(acc.to_vector(), want.to_vector()) << n;
      EXPECT_EQ(a.to_vector(), a_before);  // the in-place sum wrote into the clone only
    }
  }
}

TEST(Autograd, GradientSumsRejectMismatchesByName) {
  const Tensor a = Tensor::ones({2, 3});
  EXPECT_NE(test::error_of([&] {
              autograd::sum_gradients(a, Tensor::ones({3, 2}), "backward");
            }).find("backward: gradient shapes [2, 3] and [3, 2] differ"),
            std::string::npos);
  EXPECT_THROW(autograd::sum_gradients(a, Tensor::ones({2, 3}, DType::f64), "backward"), DTypeError);
  Tensor ints = Tensor::ones({2, 3}, DType::i32);
  EXPECT_THROW(autograd::add_gradient_into(ints, Tensor::ones({2, 3}, DType::i32), "backward"), DTypeError);
}

TEST(Autograd, NoGradRecordsNothing) {
  Tensor x = Tensor::scalar(1.0, DType::f64).set_requires_grad(true);
  {
    NoGradGuard guard;
    Tensor y = x * x;
    EXPECT_TRUE(y.is_leaf());
    EXPECT_FALSE(y.requires_grad());
    EXPECT_THROW(y.backward(), AutogradError);
  }
  Tensor y = x * x;
  EXPECT_FALSE(y.is_leaf());
}

TEST(Autograd, DetachCutsTheGraph) {
  Tensor x = Tensor::scalar(3.0, DType::f64).set_requires_grad(true);
  Tensor d = (x * x).detach();
  EXPECT_TRUE(d.is_leaf());
  Tensor z = x * d;  // d is a constant 9
  z.backward();
  EXPECT_EQ(x.grad().item(), 9.0);
}

TEST(Autograd, GraphIsFreedAfterBackwardUnlessRetained) {
  Tensor x = Tensor::scalar(2.0, DType::f64).set_requires_grad(true);
  Tensor z = x * x;
  z.backward(/*retain_graph=*/true);
  z.backward();
  EXPECT_EQ(x.grad().item(), 8.0);
  EXPECT_THROW(z.backward(), AutogradError);
}

TEST(Autograd, SavedBuffersAreReleasedByBackward) {
  Tensor x = Tensor::ones({1000}, DType::f64).set_requires_grad(true);
  Tensor big = Tensor::ones({1000}, DType::f64);
  std::weak_ptr<Storage> saved = big.impl().storage;
  Tensor z = x * big;
  big = Tensor();
  EXPECT_FALSE(saved.expired());  // the mul node keeps it for backward
  z.backward(Tensor::ones({1000}, DType::f64));
  EXPECT_TRUE(saved.expired());  // released as soon as the node ran
}

TEST(Autograd, NonScalarRootNeedsAGradient) {
  Tensor x = Tensor::ones({3}, DType::f64).set_requires_grad(true);
  Tensor y = x * x;
  EXPECT_THROW(y.backward(), AutogradError);
  EXPECT_THROW(y.backward(Tensor::ones({4}, DType::f64)), AutogradError);
}

TEST(Autograd, OnlyLeavesCanBeMarked) {
  Tensor x = Tensor::ones({3}, DType::f64).set_requires_grad(true);
  Tensor y = x * x;
  EXPECT_THROW(y.set_requires_grad(true), AutogradError);
}

TEST(Autograd, DeepChainDoesNotRecurse) {
  // 100k nodes: the engine walks iteratively, so no stack overflow.
  Tensor x = Tensor::scalar(1.0, DType::f64).set_requires_grad(true);
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y + Tensor::scalar(0.0, DType::f64);
  y.backward();
  EXPECT_EQ(x.grad().item(), 1.0);
}

// A test-only op with two outputs (2x, x²), to exercise multi-output nodes.
std::vector<Tensor> twice_and_square(const Tensor& x) {
  Tensor two = Tensor::empty(x.shape(), DType::f64), sq = Tensor::empty(x.shape(), DType::f64);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    two.data<double>()[i] = 2 * x.at(i);
    sq.data<double>()[i] = x.at(i) * x.at(i);
  }
  return autograd::record_multi("twice_and_square", {two, sq}, {x},
                                [x = x.detach()](const std::vector<Tensor>& g, const std::vector<bool>&) {
                                  Tensor dx = Tensor::zeros(x.shape(), DType::f64);
                                  if (g[0].defined()) dx = dx + g[0] * 2.0;
                                  if (g[1].defined()) dx = dx + g[1] * x * 2.0;
                                  return std::vector<Tensor>{dx};
                                });
}

TEST(Autograd, MultiOutputNodeGetsEachOutputsGradient) {
  Tensor x = Tensor::from({1, 3}, {2}, DType::f64).set_requires_grad(true);
  auto outs = twice_and_square(x);
  EXPECT_EQ(outs[0].grad_fn(), outs[1].grad_fn());
  Tensor z = outs[0] * outs[1];  // 2x³: dz/dx = 6x²
  z.backward(Tensor::ones({2}, DType::f64));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<double>{6, 54}));
  // Only one output used: the other's gradient arrives undefined and counts as zero.
  Tensor y = Tensor::from({2}, {1}, DType::f64).set_requires_grad(true);
  twice_and_square(y)[1].backward(Tensor::ones({1}, DType::f64));
  EXPECT_EQ(y.grad().item(), 4.0);
  EXPECT_TRUE(test::grads_ok(
      [](const std::vector<Tensor>& in) {
        auto o = twice_and_square(in[0]);
        return o[0] * o[1] + o[1];
      },
      {test::rand({3}, 5)}));
}

struct BroadcastCase {
  Shape a, b;
};

class ElementwiseGrad : public ::testing::TestWithParam<BroadcastCase> {};

TEST_P(ElementwiseGrad, AllFourOpsGradcheck) {
  const auto& c = GetParam();
  Tensor a = test::rand(c.a, 11), b = test::rand(c.b, 12, 0.5, 2.0);  // b away from 0 for div
  using V = std::vector<Tensor>;
  EXPECT_TRUE(test::grads_ok([](const V& in) { return in[0] + in[1]; }, {a, b}));
  EXPECT_TRUE(test::grads_ok([](const V& in) { return in[0] - in[1]; }, {a, b}));
  EXPECT_TRUE(test::grads_ok([](const V& in) { return in[0] * in[1]; }, {a, b}));
  EXPECT_TRUE(test::grads_ok([](const V& in) { return in[0] / in[1]; }, {a, b}));
  EXPECT_TRUE(test::grads_ok([](const V& in) { return (in[0] * 3.0 + 1.0) * in[0]; }, {a}));
}

INSTANTIATE_TEST_SUITE_P(Shapes, ElementwiseGrad,
                         ::testing::Values(BroadcastCase{{3, 4}, {3, 4}}, BroadcastCase{{3, 4}, {4}},
                                           BroadcastCase{{3, 1}, {1, 4}}, BroadcastCase{{2, 3, 4}, {3, 1}},
                                           BroadcastCase{{1}, {2, 2}}, BroadcastCase{{}, {3}},
                                           BroadcastCase{{2, 1, 3}, {2, 4, 1}}, BroadcastCase{{1, 1}, {1, 1}}),
                         // Stable names (ctest runs each case by name): a_3x4_b_4, a_scalar_b_3, ...
                         [](const ::testing::TestParamInfo<BroadcastCase>& info) {
                           auto dims = [](const Shape& s) {
                             if (s.empty()) return std::string("scalar");
                             std::string out;
                             for (std::size_t i = 0; i < s.size(); ++i) {
                               if (i) out += 'x';
                               out.append(std::to_string(s[i]));
                             }
                             return out;
                           };
                           return "a_" + dims(info.param.a) + "_b_" + dims(info.param.b);
                         });

TEST(Elementwise, ForwardValuesAndLargeMagnitudes) {
  Tensor a = Tensor::from({1e30, -2, 3}, {3}, DType::f64);
  Tensor b = Tensor::from({2}, {1}, DType::f64);
  EXPECT_EQ((a * b).to_vector(), (std::vector<double>{2e30, -4, 6}));
  EXPECT_EQ((a / b).to_vector(), (std::vector<double>{5e29, -1, 1.5}));
  Tensor big = test::rand({4, 5}, 3, -1e6, 1e6);
  EXPECT_TRUE(test::grads_ok([](const std::vector<Tensor>& in) { return in[0] * in[1]; }, {big, test::rand({5}, 4)},
                             GradcheckOptions{1e-3, 1e-4, 1e-6, 1}));
}

TEST(Elementwise, MismatchedShapesNameBoth) {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4});
  try {
    ops::add(a, b);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("add"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[4]"), std::string::npos) << m;
  }
  EXPECT_THROW(ops::mul(Tensor::zeros({2}), Tensor::zeros({2}, DType::f64)), DTypeError);
  EXPECT_THROW(ops::add(Tensor::zeros({2}, DType::i32), Tensor::zeros({2}, DType::i32)), DTypeError);
}

TEST(Elementwise, InPlaceUpdatesRecordNothing) {
  Tensor a = Tensor::from({1, 2, 3, 4}, {2, 2}, DType::f64);
  ops::add_(a, Tensor::from({10, 20}, {2}, DType::f64));
  EXPECT_EQ(a.to_vector(), (std::vector<double>{11, 22, 13, 24}));
  ops::axpy_(a, 2.0, Tensor::ones({2, 2}, DType::f64));
  ops::scale_(a, 0.5);
  EXPECT_EQ(a.to_vector(), (std::vector<double>{6.5, 12, 7.5, 13}));
  EXPECT_THROW(ops::add_(a, Tensor::zeros({3}, DType::f64)), ShapeError);
}

// The leaf-ready hook (data parallelism starts gradient buckets from it): each leaf fires once,
// after its last contribution of the pass, with its gradient then complete; no hook, no calls.
TEST(Autograd, LeafReadyHookFiresOncePerLeafWithItsFinalGradient) {
  Tensor a = Tensor::from({1, 2}, {2}, DType::f64), b = Tensor::from({3, 4}, {2}, DType::f64);
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  std::vector<std::pair<const TensorImpl*, std::vector<double>>> fired;
  autograd::set_leaf_grad_ready_hook([&](const TensorImpl& leaf) {
    fired.emplace_back(&leaf, Tensor(std::const_pointer_cast<TensorImpl>(leaf.grad)).to_vector());
  });
  // a is used three times (a·b, a·a): its gradient b + 2a is complete only after all three.
  Tensor y = ops::sum(ops::add(ops::mul(a, b), ops::mul(a, a)));
  y.backward();
  autograd::set_leaf_grad_ready_hook({});
  ASSERT_EQ(fired.size(), 2u);
  for (const auto& [leaf, grad] : fired) {
    if (leaf == &a.impl()) {
      EXPECT_EQ(grad, (std::vector<double>{5, 8}));
    } else {
      EXPECT_EQ(leaf, &b.impl());
      EXPECT_EQ(grad, (std::vector<double>{1, 2}));
    }
  }
  EXPECT_NE(fired[0].first, fired[1].first);
  // Without a hook nothing is called.
  fired.clear();
  a.zero_grad();
  ops::sum(ops::mul(a, a)).backward();
  EXPECT_TRUE(fired.empty());
}

}  // namespace gattn
