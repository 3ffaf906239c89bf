// Parity with Hugging Face transformers, without Python: each tiny model committed under
// tests/data/hf/ (tests/interop/make_hf_goldens.py made them, with transformers' logits and loss)
// is imported as `gattn import` imports it, and gattn's forward on the recorded ids must give
// transformers' logits and mean loss: to 1e-9 in f64 (the weights are bf16, f16 or f32 values, exact
// in f64, so both sides compute the same numbers up to rounding), and to 1e-5 relative in f32. The
// KV-cached forward over the ids in uneven chunks must equal the full forward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/autograd/grad_mode.h"
#include "framework/io/errors.h"
#include "framework/io/module_io.h"
#include "framework/io/safetensors.h"
#include "models/gpt.h"
#include "models/kv_cache.h"
#include "ops/shape.h"
#include "recipes/common/checkpoint_model.h"
#include "recipes/import/hf_import.h"
#include "test_util.h"

namespace gattn {
namespace {

const std::string kData = std::string(GATTN_SOURCE_DIR) + "/tests/data/hf/";

struct Goldens {
  Tensor ids, logits_f32, logits_f64;
  double loss_f32 = 0, loss_f64 = 0;
};

Goldens read_goldens(const std::string& name) {
  const SafetensorsFile f = load_safetensors(kData + name + ".goldens.safetensors");
  return {f.get("ids"), f.get("logits_f32"), f.get("logits_f64"), f.get("loss_f32").to_vector()[0],
          f.get("loss_f64").to_vector()[0]};
}

// The imported model's weights in a model of `dtype` (load_module converts).
std::unique_ptr<models::GPT> in_dtype(recipes::ImportedModel& imported, DType dtype) {
  models::ModelConfig c = imported.model->config();
  c.dtype = dtype;
  auto model = std::make_unique<models::GPT>(c, 0);
  SafetensorsFile weights;
  weights.path = imported.source;
  weights.tensors = imported.model->named_parameters();
  load_module(weights, *model);
  model->eval();
  return model;
}

// Columns [first, last) of ids [B, T], as a new i32 tensor.
Tensor columns(const Tensor& ids, std::int64_t first, std::int64_t last) { return ops::slice(ids, 1, first, last); }

struct Deviation {
  double max_abs = 0, max_rel = 0;  // max |a − b|, and that over max |b| (the logits' scale)
};

Deviation compare(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  const std::vector<double> a = got.to_vector(), b = want.to_vector();
  Deviation e;
  double scale = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    e.max_abs = std::max(e.max_abs, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  e.max_rel = e.max_abs / scale;
  return e;
}

class HfParity : public ::testing::TestWithParam<std::string> {};

TEST_P(HfParity, LogitsAndLossMatchTransformersInF64AndF32) {
  recipes::ImportedModel imported = recipes::import_hf(kData + GetParam());
  const Goldens g = read_goldens(GetParam());
  const std::int64_t T = g.ids.size(1);
  NoGradGuard no_grad;
  for (const DType dtype : {DType::f64, DType::f32}) {
    const bool f64 = dtype == DType::f64;
    auto model = in_dtype(imported, dtype);
    const Tensor logits = model->forward(g.ids).logits;
    const double loss = model->forward(columns(g.ids, 0, T - 1), columns(g.ids, 1, T)).loss.to_vector()[0];
    const Deviation e = compare(logits, f64 ? g.logits_f64 : g.logits_f32);
    const double want_loss = f64 ? g.loss_f64 : g.loss_f32;
    const double loss_abs = std::abs(loss - want_loss), loss_rel = loss_abs / std::abs(want_loss);
    // The figures docs/import.md quotes.
    std::printf("[parity] %-10s %s: logits max abs %.2e, max rel %.2e; loss %.12f vs %.12f (abs %.2e)\n",
                GetParam().c_str(), f64 ? "f64" : "f32", e.max_abs, e.max_rel, loss, want_loss, loss_abs);
    if (f64) {
      EXPECT_LE(e.max_abs, 1e-9) << "f64 logits";
      EXPECT_LE(loss_abs, 1e-9) << "f64 loss";
    } else {
      EXPECT_LE(e.max_rel, 1e-5) << "f32 logits";
      EXPECT_LE(loss_rel, 1e-5) << "f32 loss";
    }
  }
}

TEST_P(HfParity, CachedGenerationEqualsTheFullForward) {
  recipes::ImportedModel imported = recipes::import_hf(kData + GetParam());
  const Goldens g = read_goldens(GetParam());
  auto model = in_dtype(imported, DType::f64);
  NoGradGuard no_grad;
  const Tensor full = model->forward(g.ids).logits;
  models::KVCache cache(model->config(), g.ids.size(0));
  std::int64_t pos = 0;
  for (const std::int64_t chunk : {5, 1, 3, 1, 4, 2}) {
    const Tensor logits = model->forward_cached(columns(g.ids, pos, pos + chunk), cache);
    EXPECT_TRUE(test::all_close(logits, ops::slice(full, 1, pos, pos + chunk), 1e-11, 1e-9))
        << "positions " << pos << " … " << pos + chunk - 1;
    pos += chunk;
  }
  EXPECT_EQ(pos, g.ids.size(1));
}

// What `gattn import` writes is what eval, sample and inspect load: the same config and the same
// weights, bit for bit.
TEST_P(HfParity, TheCheckpointLoadsBackAsTheImportedModel) {
  recipes::ImportedModel imported = recipes::import_hf(kData + GetParam());
  test::TempDir tmp;
  const std::string out = tmp.file("ckpt");
  recipes::write_imported_checkpoint(imported, out);
  recipes::CheckpointModel loaded = recipes::load_checkpoint_model(out, {}, "test");
  EXPECT_EQ(models::to_json(loaded.model->config()), models::to_json(imported.model->config()));
  for (auto& [name, p] : imported.model->named_parameters())
    EXPECT_EQ(p.to_vector(), loaded.model->parameter(name).to_vector()) << name;
  EXPECT_TRUE(
      test::contains(loaded.metadata.at(recipes::kImportKey), "\"architecture\":\"" + imported.hf.architecture));
  EXPECT_TRUE(test::contains(
      test::message_of<OutputPathError>([&] { recipes::write_imported_checkpoint(imported, out); }), "already exists"));
}

INSTANTIATE_TEST_SUITE_P(Models, HfParity,
                         ::testing::Values("gpt2", "llama", "qwen2", "qwen3", "qwen3_next", "qwen3_5"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace gattn
