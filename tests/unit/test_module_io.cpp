// save_module / load_module: parameters survive a round trip into a differently seeded module,
// handles stay valid, and a file that does not fit the module is refused without changing it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "framework/io/module_io.h"
#include "framework/nn/layers.h"
#include "test_util.h"

namespace gattn {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

class Block : public nn::Module {
 public:
  Block(std::int64_t dim, Generator& gen, DType dtype) {
    ln = register_module("ln", std::make_shared<nn::LayerNorm>(dim, 1e-5, dtype));
    fc = register_module("fc", std::make_shared<nn::Linear>(dim, 2 * dim, gen, nn::LinearOptions{.dtype = dtype}));
  }
  std::shared_ptr<nn::LayerNorm> ln;
  std::shared_ptr<nn::Linear> fc;
};

// blocks.{i}.ln.weight/bias, blocks.{i}.fc.weight/bias, head.weight/bias. Every parameter is
// randomised from the seed (LayerNorm and biases start at constants otherwise).
class TinyNet : public nn::Module {
 public:
  explicit TinyNet(std::uint64_t seed, int n_blocks = 2, std::int64_t dim = 4, DType dtype = DType::f32) {
    Generator gen(seed);
    blocks = register_module("blocks", std::make_shared<nn::ModuleList<Block>>());
    for (int i = 0; i < n_blocks; ++i) blocks->push_back(std::make_shared<Block>(dim, gen, dtype));
    head = register_module("head", std::make_shared<nn::Linear>(dim, 3, gen, nn::LinearOptions{.dtype = dtype}));
    visit_parameters([&](const std::string&, Tensor& p) { gen.normal_(p, 0.0, 1.0); });
  }
  std::shared_ptr<nn::ModuleList<Block>> blocks;
  std::shared_ptr<nn::Linear> head;
};

std::string raw_bytes(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw_data()),
                     static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()));
}

// A snapshot of all parameter bytes, to check that a failed load changed nothing.
std::vector<std::string> snapshot(nn::Module& m) {
  std::vector<std::string> out;
  m.visit_parameters([&](const std::string&, Tensor& p) { out.push_back(raw_bytes(p)); });
  return out;
}

// load_module throws CheckpointError naming the file and containing every needle; the module is unchanged.
::testing::AssertionResult load_refused(const std::string& path, nn::Module& m,
                                        const std::vector<std::string>& needles) {
  const auto before = snapshot(m);
  try {
    load_module(path, m);
    return ::testing::AssertionFailure() << "loaded without an error";
  } catch (const CheckpointError& e) {
    std::string msg = e.what();
    if (msg.find(path) == std::string::npos) return ::testing::AssertionFailure() << "message lacks the file: " << msg;
    for (const auto& needle : needles)
      if (msg.find(needle) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks '" << needle << "': " << msg;
    if (snapshot(m) != before) return ::testing::AssertionFailure() << "a failed load changed parameters";
    return ::testing::AssertionSuccess() << msg;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw something other than CheckpointError: " << e.what();
  }
}

TEST(ModuleIo, RoundTripIntoDifferentlySeededModule) {
  TempDir dir;
  TinyNet a(1), b(2);
  ASSERT_NE(snapshot(a), snapshot(b));
  Tensor handle = b.head->weight;  // held across the load, as an optimizer would
  save_module(dir.file("m.safetensors"), a, {{"format", kCheckpointFormat}});
  auto meta = load_module(dir.file("m.safetensors"), b);
  EXPECT_EQ(meta.at("format"), "gattn/1");
  EXPECT_EQ(snapshot(b), snapshot(a));
  EXPECT_TRUE(handle.shares_storage_with(b.parameter("head.weight")));
  EXPECT_EQ(raw_bytes(handle), raw_bytes(a.head->weight));
  EXPECT_TRUE(b.head->weight.requires_grad());
}

TEST(ModuleIo, FileHoldsF32ParametersInVisitOrder) {
  TempDir dir;
  TinyNet a(3);
  save_module(dir.file("m.safetensors"), a, {{"vocab", "[1,2]"}});
  SafetensorsFile f = load_safetensors(dir.file("m.safetensors"));
  auto params = a.named_parameters();
  ASSERT_EQ(f.tensors.size(), params.size());
  EXPECT_EQ(f.tensors.front().first, "blocks.0.ln.weight");
  EXPECT_EQ(f.tensors.back().first, "head.bias");
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(f.tensors[i].first, params[i].first);
    EXPECT_EQ(f.tensors[i].second.dtype(), DType::f32);
    EXPECT_EQ(f.tensors[i].second.shape(), params[i].second.shape());
  }
  EXPECT_EQ(f.metadata.at("vocab"), "[1,2]");
}

TEST(ModuleIo, ConvertsOtherDtypesThroughF32) {
  TempDir dir;
  TinyNet a(4, 1, 4, DType::f64), b(5, 1, 4, DType::f64);
  save_module(dir.file("m.safetensors"), a);
  EXPECT_EQ(load_safetensors(dir.file("m.safetensors")).get("head.weight").dtype(), DType::f32);
  load_module(dir.file("m.safetensors"), b);
  EXPECT_EQ(b.head->weight.dtype(), DType::f64);
  EXPECT_TRUE(test::all_close(b.head->weight, a.head->weight.to(DType::f32).to(DType::f64), 0, 0));

  TinyNet c(6, 1, 4, DType::f32);  // an f64 module's file loads into an f32 module of the same shape
  load_module(dir.file("m.safetensors"), c);
  EXPECT_TRUE(test::all_close(c.head->weight, a.head->weight.to(DType::f32), 0, 0));
}

TEST(ModuleIo, MissingTensorIsNamed) {
  TempDir dir;
  TinyNet a(1), b(2);
  auto params = a.named_parameters();
  std::vector<std::pair<std::string, Tensor>> partial;
  for (auto& [name, p] : params)
    if (name != "blocks.1.fc.bias") partial.emplace_back(name, p);
  save_safetensors(dir.file("m.safetensors"), partial);
  EXPECT_TRUE(load_refused(dir.file("m.safetensors"), b, {"missing", "'blocks.1.fc.bias'"}));

  save_module(dir.file("small.safetensors"), *std::make_unique<TinyNet>(1, 1));  // one block instead of two
  EXPECT_TRUE(
      load_refused(dir.file("small.safetensors"), b, {"missing", "'blocks.1.ln.weight'", "'blocks.1.fc.bias'"}));
}

TEST(ModuleIo, WrongShapeNamesBothShapes) {
  TempDir dir;
  TinyNet a(1), b(2);
  auto params = a.named_parameters();
  for (auto& [name, p] : params)
    if (name == "head.weight") p = Tensor::zeros({2, 4});
  save_safetensors(dir.file("m.safetensors"), params);
  EXPECT_TRUE(load_refused(dir.file("m.safetensors"), b, {"'head.weight'", "[2, 4]", "[3, 4]"}));

  save_module(dir.file("wide.safetensors"), *std::make_unique<TinyNet>(1, 2, 8));
  EXPECT_TRUE(load_refused(dir.file("wide.safetensors"), b, {"'blocks.0.ln.weight'", "[8]", "[4]"}));
}

TEST(ModuleIo, ExtraTensorIsNamed) {
  TempDir dir;
  TinyNet a(1), b(2);
  auto params = a.named_parameters();
  params.emplace_back("blocks.2.ln.weight", Tensor::ones({4}));
  save_safetensors(dir.file("m.safetensors"), params);
  EXPECT_TRUE(load_refused(dir.file("m.safetensors"), b, {"extra tensor 'blocks.2.ln.weight'"}));

  save_module(dir.file("deep.safetensors"), *std::make_unique<TinyNet>(1, 3));
  EXPECT_TRUE(load_refused(dir.file("deep.safetensors"), b, {"extra tensor 'blocks.2."}));
}

TEST(ModuleIo, IntegerTensorIsRefused) {
  TempDir dir;
  TinyNet a(1), b(2);
  auto params = a.named_parameters();
  for (auto& [name, p] : params)
    if (name == "head.bias") p = Tensor::from_ints({1, 2, 3}, {3});
  save_safetensors(dir.file("m.safetensors"), params);
  EXPECT_TRUE(load_refused(dir.file("m.safetensors"), b, {"'head.bias'", "i32"}));
}

TEST(ModuleIo, DamagedOrMissingFileIsACheckpointError) {
  TempDir dir;
  TinyNet b(2);
  EXPECT_TRUE(load_refused(dir.file("nope.safetensors"), b, {"cannot open"}));
  save_module(dir.file("m.safetensors"), b);
  fs::resize_file(dir.file("m.safetensors"), fs::file_size(dir.file("m.safetensors")) - 4);
  EXPECT_TRUE(load_refused(dir.file("m.safetensors"), b, {"head.bias"}));
}

}  // namespace
}  // namespace gattn
