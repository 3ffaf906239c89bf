// Row-parallel training's pieces: leaf-gradient sinks (core/autograd/engine.h), the parts'
// threads (recipes/train/row_parallel.h) and train.parallel's resolution; and the engine's adoption
// of a gradient buffer as .grad without a copy, which must never let two tensors share one.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "core/autograd/engine.h"
#include "framework/config/errors.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/unary.h"
#include "recipes/common/run_config.h"
#include "recipes/train/row_parallel.h"
#include "test_util.h"

namespace gattn {

namespace {

// A small two-layer net's loss on rows [begin, end) of x, weighted by `scale`: every parameter is
// used, one of them twice (so a leaf gets two contributions in one pass).
Tensor part_loss(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, std::int64_t begin,
                 std::int64_t end, double scale) {
  Tensor rows = x.alias_rows(begin, end);
  Tensor h = ops::tanh(ops::linear(rows, w1, b1));
  Tensor y = ops::linear(h, w2) + ops::linear(rows, w1);
  return ops::mean(y * y) * scale;
}

struct Net {
  Tensor x = test::randn({8, 5}, 1);
  Tensor w1 = test::randn({5, 5}, 2).set_requires_grad(true);
  Tensor b1 = test::randn({5}, 3).set_requires_grad(true);
  Tensor w2 = test::randn({5, 5}, 4).set_requires_grad(true);
  std::vector<Tensor> params() const { return {w1, b1, w2}; }
};

}  // namespace

TEST(RowParallel, PartsOnThreadsGiveTheWholeBatchGradient) {
  Net whole;
  part_loss(whole.x, whole.w1, whole.b1, whole.w2, 0, 8, 1.0).backward();
  for (int parts : {2, 4}) {
    Net net;
    std::atomic<int> ran{0};
    recipes::run_row_parts(parts, [&](int p) {
      EXPECT_EQ(omp_get_max_threads(), 1) << "a part's ops must run on its thread alone";
      const std::int64_t n = 8 / parts;
      part_loss(net.x, net.w1, net.b1, net.w2, p * n, (p + 1) * n, 1.0 / parts).backward();
      ++ran;
    });
    EXPECT_EQ(ran.load(), parts);
    for (std::size_t i = 0; i < net.params().size(); ++i)
      EXPECT_TRUE(test::all_close(net.params()[i].grad(), whole.params()[i].grad(), 1e-14, 1e-12))
          << "parts " << parts << ", parameter " << i;
  }
}

TEST(RowParallel, SumsDoNotDependOnWhichPartFinishesFirst) {
  // f32, so the order of the additions shows in the bits: two runs, the second with part 0 slowed
  // down, add the parts in the same order.
  auto grads = [](bool slow_part0) {
    Net net;
    const Tensor x = net.x.to(DType::f32);
    Tensor w1 = net.w1.detach().to(DType::f32).set_requires_grad(true);
    Tensor b1 = net.b1.detach().to(DType::f32).set_requires_grad(true);
    Tensor w2 = net.w2.detach().to(DType::f32).set_requires_grad(true);
    recipes::run_row_parts(2, [&](int p) {
      if (p == 0 && slow_part0) {
        volatile double s = 0;
        for (int i = 0; i < 20'000'000; ++i) s = s + 1e-9;
      }
      part_loss(x, w1, b1, w2, p * 4, (p + 1) * 4, 0.5).backward();
    });
    return std::vector<std::vector<double>>{w1.grad().to_vector(), b1.grad().to_vector(), w2.grad().to_vector()};
  };
  EXPECT_EQ(grads(false), grads(true));
}

TEST(RowParallel, TheLowestFailingPartIsRethrownAfterAllEnd) {
  std::atomic<int> ended{0};
  try {
    recipes::run_row_parts(3, [&](int p) {
      ++ended;
      if (p >= 1) throw std::runtime_error("part " + std::to_string(p));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 1");
  }
  EXPECT_EQ(ended.load(), 3);
}

TEST(RowParallel, TheCallersThreadCountIsKept) {
  const int before = omp_get_max_threads();
  recipes::run_row_parts(2, [](int) {});
  EXPECT_EQ(omp_get_max_threads(), before);
}

TEST(RowParallel, ASinkKeepsItsThreadsGradientsUntilAdded) {
  Tensor w = Tensor::from({1, 2}, {2}, DType::f64).set_requires_grad(true);
  autograd::LeafGradSink sink;
  autograd::set_leaf_grad_sink(&sink);
  ops::sum(w * w).backward();
  autograd::set_leaf_grad_sink(nullptr);
  EXPECT_FALSE(w.grad().defined());
  EXPECT_FALSE(sink.empty());
  ops::sum(w * 3.0).backward();  // no sink on this thread now: straight into .grad
  sink.add_into_leaves();
  EXPECT_TRUE(sink.empty());
  EXPECT_EQ(w.grad().to_vector(), (std::vector<double>{5, 7}));  // 3 + 2·1, 3 + 2·2
}

TEST(RowParallel, ParallelModeResolution) {
  auto parts = [](const std::string& yaml, Device device, int threads, std::int64_t parameters = 1'000'000) {
    return recipes::row_parts_for(Config::from_string(yaml, {}, "run.yaml"), device, threads, parameters);
  };
  EXPECT_EQ(parts("train: {batch_size: 12}", Device::cpu, 2), 2);  // auto
  EXPECT_EQ(parts("train: {batch_size: 12}", Device::cpu, 1), 1);
  EXPECT_EQ(parts("train: {batch_size: 7}", Device::cpu, 2), 1);
  EXPECT_EQ(parts("train: {batch_size: 12}", Device::cuda, 2), 1);
  EXPECT_EQ(parts("train: {batch_size: 12, parallel: ops}", Device::cpu, 2), 1);
  EXPECT_EQ(parts("train: {batch_size: 12, parallel: rows}", Device::cpu, 4), 4);
  // auto leaves big models to ops: (threads − 1) gradient copies of 124M parameters are 0.5 GB.
  EXPECT_EQ(parts("train: {batch_size: 12}", Device::cpu, 2, 124'000'000), 1);
  EXPECT_EQ(parts("train: {batch_size: 12}", Device::cpu, 2, 60'000'000), 2);
  EXPECT_EQ(parts("train: {batch_size: 16}", Device::cpu, 16, 5'000'000), 1);
  EXPECT_EQ(parts("train: {batch_size: 12, parallel: rows}", Device::cpu, 2, 124'000'000), 2);  // asked for
  EXPECT_TRUE(test::contains(test::error_of([&] { parts("train: {batch_size: 10, parallel: rows}", Device::cpu, 4); }),
                             "4 threads do not divide it"));
  EXPECT_TRUE(test::contains(test::error_of([&] { parts("train: {batch_size: 12, parallel: rows}", Device::cuda, 2); }),
                             "device cpu"));
}

TEST(AutogradAdoption, AGradientHandedToTwoLeavesIsNotShared) {
  // add's backward hands the same gradient tensor to both inputs: each leaf must get its own
  // buffer, so accumulating into one later leaves the other alone.
  Tensor a = Tensor::from({1, 2}, {2}, DType::f64).set_requires_grad(true);
  Tensor b = Tensor::from({3, 4}, {2}, DType::f64).set_requires_grad(true);
  (a + b).backward(Tensor::from({1, 1}, {2}, DType::f64));
  EXPECT_NE(a.grad().raw_data(), b.grad().raw_data());
  (a * 2.0).backward(Tensor::from({1, 1}, {2}, DType::f64));
  EXPECT_EQ(a.grad().to_vector(), (std::vector<double>{3, 3}));
  EXPECT_EQ(b.grad().to_vector(), (std::vector<double>{1, 1}));
}

TEST(AutogradAdoption, TheCallersGradientIsNeverTheLeafsGrad) {
  Tensor a = Tensor::from({1, 2}, {2}, DType::f64).set_requires_grad(true);
  const Tensor g = Tensor::from({1, 1}, {2}, DType::f64);
  a.backward(g);  // a leaf as the root: its gradient is the caller's tensor
  a.backward(g);
  EXPECT_EQ(g.to_vector(), (std::vector<double>{1, 1}));
  EXPECT_EQ(a.grad().to_vector(), (std::vector<double>{2, 2}));
}

TEST(AutogradAdoption, AFreshGradientIsAdoptedWithoutACopy) {
  // The product's backward computes a new tensor that nothing else holds: it becomes .grad as it is
  // (observable as the steady-state allocation count elsewhere; here, the values stay right across
  // accumulation).
  Tensor w = Tensor::from({1, 2}, {2}, DType::f64).set_requires_grad(true);
  const Tensor x = Tensor::from({3, 5}, {2}, DType::f64);
  ops::sum(w * x).backward();
  ops::sum(w * x).backward();
  EXPECT_EQ(w.grad().to_vector(), (std::vector<double>{6, 10}));
  EXPECT_EQ(x.to_vector(), (std::vector<double>{3, 5}));
}

}  // namespace gattn
