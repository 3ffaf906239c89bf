// `gattn export` without Python: every model of tests/tools/export_models.h (each class and gate form
// gattn exports, every parameter random) saved as a checkpoint, exported and imported back must be
// the same model — the same config (models::to_json) and every parameter bit for bit — or, where the
// export converts (a headwise gate, norms zero-centred on one side only), the same function and an
// export that reproduces itself byte for byte. The committed Hugging Face models (tests/data/hf/),
// imported and exported, give back transformers' own tensors. Then every refusal: one line naming
// the setting, listing what exports, and no directory written.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "core/autograd/grad_mode.h"
#include "framework/io/errors.h"
#include "framework/io/hf_checkpoint.h"
#include "framework/io/safetensors.h"
#include "models/gating/registry.h"
#include "models/hf/hf_export.h"
#include "recipes/common/checkpoint_model.h"
#include "recipes/export/hf_export.h"
#include "recipes/import/hf_import.h"
#include "test_util.h"
#include "tools/export_models.h"
#include "unit/model_test_util.h"

namespace gattn {
namespace {

using nlohmann::json;
using test::contains;
using test::message_of;

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data<float>(), b.data<float>(), static_cast<std::size_t>(a.numel()) * 4) == 0;
}

const test::ExportModel& model_named(const std::string& name) {
  static const std::vector<test::ExportModel> all = test::export_models();
  for (const test::ExportModel& m : all)
    if (m.name == name) return m;
  throw ValueError("no export test model " + name);
}

std::vector<std::string> model_names() {
  std::vector<std::string> out;
  for (const test::ExportModel& m : test::export_models()) out.push_back(m.name);
  return out;
}

// The max |a − b| over the logits of two models on the same ids, and the largest |logit|.
std::pair<double, double> logit_difference(models::GPT& a, models::GPT& b) {
  NoGradGuard no_grad;
  a.eval();
  b.eval();
  const Tensor ids = test::tokens(2, a.config().block_size, a.config().vocab_size, 5);
  const std::vector<double> x = a.forward(ids).logits.to_vector(), y = b.forward(ids).logits.to_vector();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(x[i]));
  }
  return {diff, scale};
}

class HfExportRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(HfExportRoundTrip, ImportOfTheExportIsTheModel) {
  const test::ExportModel& m = model_named(GetParam());
  test::TempDir tmp;
  test::write_export_checkpoint(tmp.file("ckpt"), m);
  const recipes::ExportedHfModel exported = recipes::export_hf(tmp.file("ckpt"));
  EXPECT_EQ(exported.target.architecture, m.hf_class == "Qwen3_5ForCausalLM" ? "Qwen3NextForCausalLM" : m.hf_class)
      << "the default class";
  const recipes::ExportedHfModel as_class = recipes::export_hf(tmp.file("ckpt"), m.hf_class);
  recipes::write_hf_directory(as_class, tmp.file("hf"));
  recipes::ImportedModel imported = recipes::import_hf(tmp.file("hf"));
  EXPECT_EQ(imported.hf.architecture, m.hf_class);
  recipes::CheckpointModel original = recipes::load_checkpoint_model(tmp.file("ckpt"), {}, "test");

  if (m.exact) {
    EXPECT_EQ(models::to_json(imported.model->config()).dump(), models::to_json(original.model->config()).dump());
    std::size_t compared = 0;
    for (auto& [name, p] : original.model->named_parameters()) {
      EXPECT_TRUE(same_bits(imported.model->parameter(name), p)) << name;
      ++compared;
    }
    EXPECT_EQ(compared, imported.model->named_parameters().size());
  } else {
    // The same function: the logits agree to f32 rounding (measured: see the printed line).
    const auto [diff, scale] = logit_difference(*original.model, *imported.model);
    std::printf("[export] %-20s converted: logits max |Δ| %.2e of max |logit| %.2e\n", m.name.c_str(), diff, scale);
    EXPECT_LE(diff, 1e-6 * scale);
  }
  // Exporting the import writes the same directory again, byte for byte.
  recipes::write_imported_checkpoint(imported, tmp.file("ckpt2"));
  // An imported checkpoint exports as the class it came from.
  const recipes::ExportedHfModel again = recipes::export_hf(tmp.file("ckpt2"));
  EXPECT_EQ(again.target.architecture, m.hf_class);
  EXPECT_EQ(again.files, as_class.files);
  ASSERT_EQ(again.tensors.size(), as_class.tensors.size());
  for (std::size_t i = 0; i < again.tensors.size(); ++i) {
    EXPECT_EQ(again.tensors[i].first, as_class.tensors[i].first);
    EXPECT_TRUE(same_bits(again.tensors[i].second, as_class.tensors[i].second)) << again.tensors[i].first;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, HfExportRoundTrip, ::testing::ValuesIn(model_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// transformers' files (tests/data/hf/, written by save_pretrained) imported and exported again: the
// same tensors bit for bit (F16 and BF16 ones widened to f32), and the keys that say what the model is.
class HfExportOfImport : public ::testing::TestWithParam<std::string> {};

TEST_P(HfExportOfImport, GivesBackTransformersTensors) {
  const std::string dir = std::string(GATTN_SOURCE_DIR) + "/tests/data/hf/" + GetParam();
  recipes::ImportedModel imported = recipes::import_hf(dir);
  const recipes::ExportedHfModel exported = recipes::export_hf_model(*imported.model, imported.hf.architecture);
  const HfDirectory files = open_hf_directory(dir);
  const auto original =
      read_hf_weights(files, [&](const std::string& n) { return models::hf_ignored_tensor(imported.hf, n); });
  std::map<std::string, Tensor> written(exported.tensors.begin(), exported.tensors.end());
  for (const auto& [name, t] : original) {
    // save_pretrained may store a tied head; the export leaves it to the embedding, as import reads it.
    if (name == "lm_head.weight" && imported.model->config().tie_embeddings) continue;
    // GPT2Model files (no transformer. prefix) are written as GPT2LMHeadModel's.
    const std::string as_written = written.count(name) ? name : "transformer." + name;
    ASSERT_TRUE(written.count(as_written)) << name;
    EXPECT_TRUE(same_bits(written.at(as_written), t.value.to(DType::f32))) << name;
    written.erase(as_written);
  }
  EXPECT_TRUE(written.empty()) << "exported but not in transformers' file: " << written.begin()->first;
  const json config = json::parse(exported.files.at(kHfConfigFile));
  for (const char* key : {"model_type", "architectures", "vocab_size", "hidden_size", "num_hidden_layers",
                          "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size", "rms_norm_eps",
                          "rope_parameters", "tie_word_embeddings", "layer_types", "n_embd", "n_layer", "n_head",
                          "n_positions", "layer_norm_epsilon", "max_position_embeddings"})
    if (files.config.contains(key)) {
      EXPECT_EQ(config.at(key), files.config.at(key)) << key;
    }
}

INSTANTIATE_TEST_SUITE_P(Models, HfExportOfImport,
                         ::testing::Values("gpt2", "llama", "qwen2", "qwen3", "qwen3_next", "qwen3_5"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// ---- refusals ----

models::ModelConfig config_of(const std::string& name) { return model_named(name).config; }

std::string refusal(const models::ModelConfig& c, const std::string& wanted = "") {
  return message_of<ValueError>([&] { models::hf_export_target(c, wanted); });
}

TEST(HfExport, SettingsNoClassComputesAreRefusedNamingTheKeyAndListingWhatExports) {
  models::ModelConfig c = config_of("gpt2");
  c.norm = models::kNormRms;
  std::string why = refusal(c);
  EXPECT_TRUE(contains(why, "model.norm is rmsnorm: GPT2LMHeadModel, the class with learned positions, has LayerNorm"));
  EXPECT_TRUE(contains(why, "gattn exports GPT2LMHeadModel ("));
  EXPECT_TRUE(contains(why, "Qwen3_5ForCausalLM ("));
  EXPECT_EQ(why.find('\n'), std::string::npos) << "one line";

  c = config_of("gpt2");
  c.n_kv_head = 2;
  EXPECT_TRUE(contains(refusal(c), "model.n_kv_head is 2: GPT2LMHeadModel has a key/value head per query head"));
  c = config_of("llama_mqa");
  c.rope_fraction = 0.5;
  EXPECT_TRUE(contains(refusal(c), "model.rope_fraction is 0.5: LlamaForCausalLM rotates whole heads"));
  c = config_of("qwen3");
  c.bias = true;
  EXPECT_TRUE(contains(refusal(c), "model.bias is true: Qwen3ForCausalLM's biases (attention_bias) are on q, k, v"));
  c = config_of("qwen3");
  c.qkv_bias = true;
  EXPECT_TRUE(contains(refusal(c), "model.qkv_bias is true: Qwen3ForCausalLM's attention_bias would bias o_proj too"));
  c = config_of("llama");
  c.mlp = models::kMlpGelu;
  EXPECT_TRUE(contains(refusal(c), "model.mlp is gelu: LlamaForCausalLM's MLP is SwiGLU"));
  // The sigmoid GLU: no class has it, whichever block it sits in, and --class says so too.
  for (const char* name : {"llama", "gpt2"}) {
    c = config_of(name);
    c.mlp = models::kMlpGlu;
    EXPECT_TRUE(contains(refusal(c), "model.mlp is glu: no transformers class has a sigmoid-gated MLP")) << name;
    EXPECT_TRUE(contains(refusal(c), "gattn exports GPT2LMHeadModel (")) << name;
  }
  c = config_of("llama");
  c.arch = models::kArchEncoderDecoder;
  EXPECT_TRUE(contains(refusal(c), "model.arch is encoder_decoder: transformers' causal-LM classes are decoders"));
}

TEST(HfExport, GatesOtherThanQwensOutputGateAreRefused) {
  const std::string output = test::qwen_output_gate(false).kind;
  models::ModelConfig c = config_of("qwen3_next");
  c.gate = models::GateConfig{};
  c.gate.kind = "score";
  std::string why = refusal(c);
  EXPECT_TRUE(contains(why, "model.gate.kind is score, a gate no transformers class has (the " + output +
                                " gate exports, as Qwen3NextForCausalLM's attention output gate)"));
  EXPECT_TRUE(contains(why, "model.gate.kind " + output + " elementwise or headwise with bias false"));

  c = config_of("llama");
  c.gate = test::qwen_output_gate(false);
  EXPECT_TRUE(contains(refusal(c), "model.qk_norm is none: Qwen3NextForCausalLM normalises q and k per head"));

  const auto gated = [&](const std::function<void(models::GateConfig&)>& edit) {
    models::ModelConfig g = config_of("qwen3_next");
    edit(g.gate);
    return refusal(g);
  };
  EXPECT_TRUE(contains(gated([](models::GateConfig& g) { g.options["bias"] = true; }),
                       "model.gate: bias is true (it needs false): Qwen3NextForCausalLM's attention output gate"));
  EXPECT_TRUE(contains(gated([](models::GateConfig& g) {
                         g.options["granularity"] = "headwise";
                         g.options["bias"] = true;
                       }),
                       "model.gate: bias is true (it needs false)"));
  EXPECT_TRUE(contains(gated([](models::GateConfig& g) { g.activation = "softplus"; }),
                       "model.gate: activation is \"softplus\" (it needs \"sigmoid\")"));
  EXPECT_TRUE(contains(gated([](models::GateConfig& g) { g.temperature = 2.0; }),
                       "model.gate: temperature is 2.0 (it needs 1.0)"));
  EXPECT_TRUE(
      contains(gated([](models::GateConfig& g) { g.options["groups"] = 2; }), "model.gate: groups is 2 (it needs 1)"));
  EXPECT_TRUE(contains(gated([](models::GateConfig& g) {
                         g.all_layers = false;
                         g.layers = {1};
                       }),
                       "model.gate.layers is [1]: Qwen3NextForCausalLM gates every layer, and layer 0 has no gate"));
  // A list of every layer is every layer.
  c = config_of("qwen3_next");
  c.gate.all_layers = false;
  c.gate.layers = {0, 1};
  EXPECT_EQ(models::hf_export_target(c).architecture, "Qwen3NextForCausalLM");

  c = config_of("qwen3_next");
  models::GateConfig second;
  second.kind = "forget";
  second.where = "model.gates[1]";
  c.gates = {c.gate, second};
  c.gates[0].where = "model.gates[0]";
  c.gate = models::GateConfig{};
  EXPECT_TRUE(contains(refusal(c), "model.gates has 2 entries: Qwen3NextForCausalLM has one gate"));
}

TEST(HfExport, TheClassAskedForMustComputeTheModel) {
  EXPECT_EQ(models::hf_export_target(config_of("qwen3_next"), "qwen3_5_text").architecture, "Qwen3_5ForCausalLM");
  EXPECT_EQ(models::hf_export_target(config_of("qwen3_5"), "Qwen3NextForCausalLM").model_type, "qwen3_next");
  EXPECT_TRUE(contains(refusal(config_of("llama"), "Qwen3ForCausalLM"),
                       "export --class Qwen3ForCausalLM: model.qk_norm is none: Qwen3ForCausalLM normalises q and k "
                       "per head (the model exports as LlamaForCausalLM)"));
  EXPECT_TRUE(
      contains(refusal(config_of("llama"), "MistralForCausalLM"),
               "export --class MistralForCausalLM: not a class gattn exports (it exports GPT2LMHeadModel (gpt2)"));
  EXPECT_TRUE(contains(refusal(config_of("qwen3"), "Qwen3NextForCausalLM"),
                       "the model has no gate: Qwen3NextForCausalLM gates every attention output"));
}

TEST(HfExport, TheDirectoryIsWrittenWholeOrNotAtAll) {
  test::TempDir tmp;
  test::write_export_checkpoint(tmp.file("ckpt"), model_named("qwen3_next"));
  const recipes::ExportedHfModel exported = recipes::export_hf(tmp.file("ckpt"));
  recipes::write_hf_directory(exported, tmp.file("hf"));
  EXPECT_TRUE(std::filesystem::exists(tmp.file("hf/config.json")));
  const SafetensorsFile weights = load_safetensors(tmp.file("hf/model.safetensors"));
  EXPECT_EQ(weights.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_TRUE(contains(message_of<OutputPathError>([&] { recipes::write_hf_directory(exported, tmp.file("hf")); }),
                       "export --out " + tmp.file("hf") + " already exists"));
  EXPECT_TRUE(contains(message_of<OutputPathError>([&] { recipes::write_hf_directory(exported, tmp.file("ckpt/hf")); }),
                       "--hf"));
  EXPECT_FALSE(std::filesystem::exists(tmp.file("ckpt/hf")));
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { recipes::export_hf(tmp.file("nothing")); }),
                       "neither a checkpoint directory"));
  for (const auto& entry : std::filesystem::directory_iterator(tmp.path()))
    EXPECT_EQ(entry.path().filename().string().find("partial"), std::string::npos) << entry.path();
}

}  // namespace
}  // namespace gattn
