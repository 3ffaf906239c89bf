// `gattn export` against transformers, without Python: each tiny gattn checkpoint committed under
// tests/data/hf_export/ was exported by `gattn export` and loaded by transformers'
// AutoModelForCausalLM.from_pretrained (tests/interop/make_hf_export_goldens.py), which recorded its
// logits on fixed ids and what the export wrote. Here the export of the same checkpoint must write
// the same config.json and the same tensor bytes (CRC-32 of each), and gattn's logits on the
// checkpoint must be transformers' on the export: to 1e-9 absolute in f64 (the weights are f32
// values, exact in f64) and 1e-5 relative (max |Δ| over the largest |logit|) in f32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/autograd/grad_mode.h"
#include "framework/io/checksums.h"
#include "framework/io/hf_checkpoint.h"
#include "framework/io/module_io.h"
#include "framework/io/safetensors.h"
#include "recipes/common/checkpoint_model.h"
#include "recipes/export/hf_export.h"
#include "test_util.h"
#include "tools/export_models.h"

namespace gattn {
namespace {

const std::string kData = std::string(GATTN_SOURCE_DIR) + "/tests/data/hf_export/";

std::vector<std::string> golden_names() {
  std::vector<std::string> out;
  for (const test::ExportModel& m : test::export_models())
    if (m.golden) out.push_back(m.name);
  return out;
}

test::ExportModel golden_model(const std::string& name) {
  for (const test::ExportModel& m : test::export_models())
    if (m.name == name) return m;
  throw ValueError("no golden model " + name);
}

// The checkpoint's model in `dtype` (load_module converts the f32 weights).
std::unique_ptr<models::GPT> in_dtype(recipes::CheckpointModel& loaded, DType dtype) {
  models::ModelConfig c = loaded.model->config();
  c.dtype = dtype;
  auto model = std::make_unique<models::GPT>(c, 0);
  SafetensorsFile weights;
  weights.path = loaded.model_path;
  weights.tensors = loaded.model->named_parameters();
  load_module(weights, *model);
  model->eval();
  return model;
}

// max |a − b| and that over max |b|.
std::pair<double, double> deviation(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  const std::vector<double> a = got.to_vector(), b = want.to_vector();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return {diff, diff / scale};
}

class HfExportParity : public ::testing::TestWithParam<std::string> {};

TEST_P(HfExportParity, TheExportIsWhatTransformersLoadedAndComputesGattnsLogits) {
  const test::ExportModel m = golden_model(GetParam());
  const SafetensorsFile golden = load_safetensors(kData + m.name + ".goldens.safetensors");
  const recipes::ExportedHfModel exported = recipes::export_hf(kData + m.name, m.hf_class);
  EXPECT_EQ(exported.target.architecture, golden.metadata.at("model_class"));
  EXPECT_EQ(exported.files.at(kHfConfigFile), golden.metadata.at("config_json"));
  nlohmann::json crcs = nlohmann::json::object();
  for (const auto& [name, t] : exported.tensors)
    crcs[name] = crc32_hex(crc32(t.data<float>(), static_cast<std::size_t>(t.numel()) * 4));
  EXPECT_EQ(crcs, nlohmann::json::parse(golden.metadata.at("tensor_crc32")));

  recipes::CheckpointModel loaded = recipes::load_checkpoint_model(kData + m.name, {}, "test");
  const Tensor& ids = golden.get("ids");
  NoGradGuard no_grad;
  for (const DType dtype : {DType::f64, DType::f32}) {
    const bool f64 = dtype == DType::f64;
    const Tensor logits = in_dtype(loaded, dtype)->forward(ids).logits;
    const auto [abs_diff, rel_diff] = deviation(logits, golden.get(f64 ? "logits_f64" : "logits_f32"));
    // The figures docs/export.md quotes.
    std::printf("[export parity] %-20s %s: logits max abs %.2e, max rel %.2e\n", m.name.c_str(), f64 ? "f64" : "f32",
                abs_diff, rel_diff);
    if (f64)
      EXPECT_LE(abs_diff, 1e-9);
    else
      EXPECT_LE(rel_diff, 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, HfExportParity, ::testing::ValuesIn(golden_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace gattn
