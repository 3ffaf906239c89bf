// Reading Hugging Face directories (framework/io/hf_checkpoint.h) and mapping them to gattn
// (models/hf/): F16 widening and skipped buffers, every refusal of the files (exit 3) and of
// config.json (exit 2) naming the file and the key or tensor, the ModelConfig of each class, and the
// tensor layout (Conv1D transposes, q/k/v stacking, Qwen3-Next's per-head query | gate split, tied
// heads). The directories are the committed tiny models (tests/data/hf/) copied and edited.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "framework/io/errors.h"
#include "framework/io/hf_checkpoint.h"
#include "framework/io/safetensors.h"
#include "models/hf/hf_model.h"
#include "test_util.h"

namespace gattn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::contains;
using test::message_of;

const std::string kData = std::string(GATTN_SOURCE_DIR) + "/tests/data/hf/";
using Tensors = std::vector<std::pair<std::string, Tensor>>;

// A safetensors file from raw entries: (name, dtype, shape, little-endian bytes).
struct RawTensor {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
};

void write_raw_safetensors(const std::string& path, const std::vector<RawTensor>& tensors) {
  json header = json::object();
  std::string data;
  for (const RawTensor& t : tensors) {
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(text.size() >> (8 * i));
  test::write_text(path, out + text + data);
}

std::string u16_bytes(const std::vector<std::uint16_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 2);
}

// A copy of a committed model in a temporary directory, to edit.
class ModelCopy {
 public:
  explicit ModelCopy(const std::string& name) : dir_(tmp_.path() / name) {
    fs::copy(kData + name, dir_, fs::copy_options::recursive);
  }
  std::string dir() const { return dir_.string(); }
  std::string file(const std::string& f) const { return (dir_ / f).string(); }
  json config() const { return json::parse(test::read_file(file(kHfConfigFile))); }
  void set_config(const json& c) const { test::write_text(file(kHfConfigFile), c.dump(2)); }
  // Changes config.json: `edit` gets it and may change anything.
  void edit_config(const std::function<void(json&)>& edit) const {
    json c = config();
    edit(c);
    set_config(c);
  }
  // Rewrites model.safetensors after `edit` changed its tensors (F16 files come back as F32).
  void edit_weights(const std::function<void(std::vector<std::pair<std::string, Tensor>>&)>& edit) const {
    SafetensorsReadOptions widen;
    widen.widen_f16 = true;
    SafetensorsFile f = load_safetensors(file(kHfWeightsFile), widen);
    edit(f.tensors);
    save_safetensors(file(kHfWeightsFile), f.tensors, f.metadata);
  }
  models::HfModel model() const {
    const HfDirectory d = open_hf_directory(dir());
    return models::hf_model_from_config(d.config, d.config_path);
  }
  std::vector<std::pair<std::string, Tensor>> mapped() const {
    const HfDirectory d = open_hf_directory(dir());
    const models::HfModel m = models::hf_model_from_config(d.config, d.config_path);
    return models::hf_to_gattn(
        m, dir(), read_hf_weights(d, [&](const std::string& n) { return models::hf_ignored_tensor(m, n); }));
  }

 private:
  test::TempDir tmp_;
  fs::path dir_;
};

const Tensor& named(const std::vector<std::pair<std::string, Tensor>>& v, const std::string& name) {
  for (const auto& [n, t] : v)
    if (n == name) return t;
  throw ValueError("no tensor " + name);
}

Tensor hf_tensor(const std::string& model, const std::string& name) {
  const HfDirectory d = open_hf_directory(kData + model);
  return read_hf_weights(d).at(name).value.to(DType::f32);
}

// ---- the files ----

TEST(HfFiles, F16IsWidenedExactlyAndOnlyWhenAsked) {
  test::TempDir tmp;
  // 1, −2, the smallest subnormal 2⁻²⁴, the largest normal 65504, +inf, −0, a NaN
  write_raw_safetensors(tmp.file("h.safetensors"),
                        {{"x", "F16", {7}, u16_bytes({0x3c00, 0xc000, 0x0001, 0x7bff, 0x7c00, 0x8000, 0x7e00})}});
  SafetensorsReadOptions widen;
  widen.widen_f16 = true;
  const SafetensorsFile f = load_safetensors(tmp.file("h.safetensors"), widen);
  const Tensor& x = f.get("x");
  ASSERT_EQ(x.dtype(), DType::f32);
  const float* v = x.data<float>();
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], std::ldexp(1.0f, -24));
  EXPECT_EQ(v[3], 65504.0f);
  EXPECT_TRUE(std::isinf(v[4]) && v[4] > 0);
  EXPECT_TRUE(v[5] == 0.0f && std::signbit(v[5]));
  EXPECT_TRUE(std::isnan(v[6]));
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { load_safetensors(tmp.file("h.safetensors")); }),
                       "unsupported dtype 'F16'"));
}

TEST(HfFiles, SkippedTensorsAreCheckedButNotRead) {
  test::TempDir tmp;
  write_raw_safetensors(tmp.file("s.safetensors"), {{"mask", "I64", {2}, std::string(16, '\1')},
                                                    {"w", "F32", {1}, std::string("\0\0\x80\x3f", 4)}});
  SafetensorsReadOptions options;
  options.skip = [](const std::string& n) { return n == "mask"; };
  const SafetensorsFile f = load_safetensors(tmp.file("s.safetensors"), options);
  ASSERT_EQ(f.tensors.size(), 1u);
  EXPECT_EQ(f.get("w").to_vector()[0], 1.0);
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { load_safetensors(tmp.file("s.safetensors")); }),
                       "tensor 'mask': unsupported dtype 'I64'"));
  // A skipped tensor still has to be a well-formed one.
  write_raw_safetensors(tmp.file("s.safetensors"), {{"mask", "Q4", {2}, std::string(16, '\1')}});
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { load_safetensors(tmp.file("s.safetensors"), options); }),
                       "unknown dtype 'Q4'"));
  write_raw_safetensors(tmp.file("s.safetensors"), {{"mask", "I64", {3}, std::string(16, '\1')}});
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { load_safetensors(tmp.file("s.safetensors"), options); }),
                       "does not match data_offsets"));
}

TEST(HfFiles, DirectoryRefusalsNameTheFile) {
  test::TempDir tmp;
  const std::string dir = tmp.path().string();
  EXPECT_TRUE(
      contains(message_of<CheckpointError>([&] { open_hf_directory(tmp.file("nothing")); }), "not a directory"));
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { open_hf_directory(dir); }), "config.json"));
  test::write_text(tmp.file("config.json"), "{\"model_type\": ");
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { open_hf_directory(dir); }), "config.json: not valid JSON"));
  test::write_text(tmp.file("config.json"), "[1]");
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { open_hf_directory(dir); }), "not a JSON object"));
  test::write_text(tmp.file("config.json"), "{}");
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { open_hf_directory(dir); }), "no model.safetensors"));
  test::write_text(tmp.file("pytorch_model.bin"), "pickle");
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { open_hf_directory(dir); }), "only PyTorch pickles"));
  test::write_text(tmp.file("model.safetensors"), "");
  test::write_text(tmp.file("model.safetensors.index.json"), "{}");
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { open_hf_directory(dir); }), "holds both"));
}

TEST(HfFiles, IndexAndShardsMustAgree) {
  ModelCopy m("qwen2");  // two shards
  const std::string index_path = m.file(kHfIndexFile);
  const json index = json::parse(test::read_file(index_path));
  const auto with_index = [&](const std::function<void(json&)>& edit) {
    json i = index;
    edit(i);
    test::write_text(index_path, i.dump());
  };
  const auto files_error = [&] {
    return message_of<CheckpointError>([&] { read_hf_weights(open_hf_directory(m.dir())); });
  };
  EXPECT_EQ(read_hf_weights(open_hf_directory(m.dir())).size(), index["weight_map"].size());

  with_index([](json& i) { i.erase("weight_map"); });
  EXPECT_TRUE(contains(files_error(), "no \"weight_map\""));
  with_index([](json& i) { i["weight_map"]["model.norm.weight"] = "../../etc/passwd"; });
  EXPECT_TRUE(contains(files_error(), "tensor 'model.norm.weight' is mapped to \"../../etc/passwd\", not a file name"));
  fs::rename(m.file("model-00002-of-00002.safetensors"), m.file("moved"));
  with_index([](json&) {});
  EXPECT_TRUE(contains(files_error(), "shard model-00002-of-00002.safetensors is missing"));
  fs::rename(m.file("moved"), m.file("model-00002-of-00002.safetensors"));
  // A tensor listed in the other shard than the one holding it, and one listed that no shard holds.
  std::string moved_name;
  with_index([&](json& i) {
    for (auto& [name, file] : i["weight_map"].items())
      if (file == "model-00001-of-00002.safetensors" && moved_name.empty()) {
        moved_name = name;
        file = "model-00002-of-00002.safetensors";
      }
  });
  EXPECT_TRUE(contains(files_error(), "tensor '" + moved_name + "' is not listed for this shard"));
  with_index([](json& i) { i["weight_map"]["model.extra.weight"] = "model-00001-of-00002.safetensors"; });
  EXPECT_TRUE(contains(files_error(), "model-00001-of-00002.safetensors': tensor 'model.extra.weight' is missing"));
}

TEST(HfFiles, WeightDtypesOtherThanFloatsAreRefused) {
  ModelCopy m("llama");
  SafetensorsFile f = load_safetensors(m.file(kHfWeightsFile));
  f.tensors.emplace_back("model.step", Tensor::zeros({1}, DType::i32));
  save_safetensors(m.file(kHfWeightsFile), f.tensors);
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { m.mapped(); }), "tensor 'model.step': dtype I32"));
  std::vector<RawTensor> raw = {{"model.norm.weight", "F8_E4M3", {64}, std::string(64, '\0')}};
  write_raw_safetensors(m.file(kHfWeightsFile), raw);
  EXPECT_TRUE(
      contains(message_of<CheckpointError>([&] { m.mapped(); }),
               "tensor 'model.norm.weight': unsupported dtype 'F8_E4M3' (gattn reads F32, F64, I32, BF16, F16)"));
}

// ---- config.json ----

TEST(HfConfig, EachClassBecomesItsModelConfig) {
  const auto config = [](const std::string& name) { return ModelCopy(name).model(); };
  const models::HfModel gpt2 = config("gpt2");
  EXPECT_EQ(gpt2.family, models::HfFamily::gpt2);
  EXPECT_EQ(gpt2.config.position, models::kPositionLearned);
  EXPECT_EQ(gpt2.config.norm, models::kNormLayer);
  EXPECT_EQ(gpt2.config.mlp, models::kMlpGelu);
  EXPECT_EQ(gpt2.config.mlp_hidden, 0);  // 4C: the default width, not written
  EXPECT_EQ(gpt2.config.block_size, 64);
  EXPECT_TRUE(gpt2.config.tie_embeddings);
  EXPECT_TRUE(gpt2.config.bias);

  const models::HfModel llama = config("llama");
  EXPECT_EQ(llama.architecture, "LlamaForCausalLM");
  EXPECT_EQ(llama.config.position, models::kPositionRope);
  EXPECT_EQ(llama.config.norm, models::kNormRms);
  EXPECT_EQ(llama.config.norm_eps, 1e-5);
  EXPECT_EQ(llama.config.mlp, models::kMlpSwiglu);
  EXPECT_EQ(llama.config.mlp_hidden, 160);
  EXPECT_EQ(llama.config.kv_heads(), 2);
  EXPECT_EQ(llama.config.rope_theta, 500000.0);
  EXPECT_EQ(llama.config.rope_fraction, 1.0);
  EXPECT_FALSE(llama.config.tie_embeddings);
  EXPECT_FALSE(llama.config.bias);
  EXPECT_FALSE(llama.config.qkv_bias);
  EXPECT_EQ(llama.config.gate.kind, models::kNoGate);

  const models::HfModel qwen2 = config("qwen2");
  EXPECT_FALSE(qwen2.config.bias);
  EXPECT_TRUE(qwen2.config.qkv_bias);
  EXPECT_TRUE(qwen2.config.tie_embeddings);
  EXPECT_EQ(qwen2.config.kv_heads(), 1);

  const models::HfModel qwen3 = config("qwen3");
  EXPECT_EQ(qwen3.config.head_dim(), 24);  // not hidden_size / num_attention_heads = 16
  EXPECT_EQ(qwen3.config.qk_norm, models::kNormRms);
  EXPECT_FALSE(qwen3.config.norm_offset);

  for (const std::string name : {"qwen3_next", "qwen3_5"}) {
    const models::HfModel q = config(name);
    EXPECT_TRUE(q.config.norm_offset) << name;
    EXPECT_EQ(q.config.qk_norm, models::kNormRms) << name;
    EXPECT_EQ(q.config.gate.kind, "output") << name;
    EXPECT_EQ(q.config.gate.options.at("granularity"), "elementwise") << name;
    EXPECT_EQ(q.config.gate.options.at("bias"), false) << name;
    EXPECT_TRUE(q.config.gate.all_layers) << name;
  }
  EXPECT_EQ(config("qwen3_next").config.rope_fraction, 0.25);
  EXPECT_EQ(config("qwen3_next").config.rope_dims(), 8);
  EXPECT_EQ(config("qwen3_5").config.rope_fraction, 0.5);
}

TEST(HfConfig, TransformersFourKeysAndDefaults) {
  ModelCopy m("llama");
  m.edit_config([](json& c) {
    c.erase("rope_parameters");
    c["rope_theta"] = 250000.0;
    c["rope_scaling"] = nullptr;
    c.erase("num_key_value_heads");
    c.erase("head_dim");
    c.erase("rms_norm_eps");
    c.erase("tie_word_embeddings");
  });
  const models::HfModel llama = m.model();
  EXPECT_EQ(llama.config.rope_theta, 250000.0);
  EXPECT_EQ(llama.config.kv_heads(), 4);  // Llama's default: num_attention_heads
  EXPECT_EQ(llama.config.head_dim(), 16);
  EXPECT_EQ(llama.config.norm_eps, 1e-6);
  EXPECT_FALSE(llama.config.tie_embeddings);
  // Qwen3-Next's partial rotary from 4.x's top-level key, and its default 0.25.
  ModelCopy next("qwen3_next");
  next.edit_config([](json& c) {
    c.erase("rope_parameters");
    c["partial_rotary_factor"] = 0.5;
  });
  EXPECT_EQ(next.model().config.rope_fraction, 0.5);
  next.edit_config([](json& c) { c.erase("partial_rotary_factor"); });
  EXPECT_EQ(next.model().config.rope_fraction, 0.25);
  // A dense Qwen3-Next with experts configured but every layer in mlp_only_layers.
  next.edit_config([](json& c) {
    c["num_experts"] = 8;
    c["mlp_only_layers"] = {0, 1};
  });
  EXPECT_NO_THROW(next.model());
}

TEST(HfConfig, BlockSizeIsMaxPositionsCappedByTheOption) {
  const HfDirectory d = open_hf_directory(kData + "llama");
  EXPECT_EQ(models::hf_model_from_config(d.config, d.config_path).config.block_size, 64);
  EXPECT_EQ(models::hf_model_from_config(d.config, d.config_path, 16).config.block_size, 16);
  EXPECT_TRUE(contains(message_of<ValueError>([&] { models::hf_model_from_config(d.config, d.config_path, 65); }),
                       "--block-size 65 is larger than the model's max_position_embeddings 64"));
}

// Each edit of a good config.json and the key its refusal must name.
struct Refusal {
  std::string model;
  std::function<void(json&)> edit;
  std::string message;
};

TEST(HfConfig, KeysGattnCannotHonourAreRefusedByName) {
  const std::vector<Refusal> cases = {
      {"llama",
       [](json& c) {
         c["model_type"] = "mistral";
         c["architectures"] = {"MistralForCausalLM"};
       },
       "architectures 'MistralForCausalLM' is not a class gattn imports"},
      {"llama",
       [](json& c) {
         c.erase("architectures");
         c["model_type"] = "gemma";
       },
       "model_type 'gemma' is not a model gattn imports"},
      {"qwen3_5",
       [](json& c) {
         c["model_type"] = "qwen3_5";
         c["architectures"] = {"Qwen3_5ForConditionalGeneration"};
       },
       "the multimodal Qwen3.5"},
      {"llama", [](json& c) { c["architectures"] = {"LlamaModel"}; }, "a base model without its language-model head"},
      {"llama", [](json& c) { c["model_type"] = "qwen2"; },
       "model_type is 'qwen2', but LlamaForCausalLM is model_type 'llama'"},
      {"llama", [](json& c) { c.erase("hidden_size"); }, "hidden_size is missing"},
      {"llama", [](json& c) { c["hidden_size"] = "64"; }, "hidden_size must be a positive integer, got \"64\""},
      {"llama", [](json& c) { c["num_key_value_heads"] = 3; },
       "num_key_value_heads 3 does not divide num_attention_heads 4"},
      {"llama", [](json& c) { c["hidden_act"] = "gelu"; }, "hidden_act is 'gelu'"},
      {"llama",
       [](json& c) {
         c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
         c.erase("rope_parameters");
       },
       "rope_scaling has rope_type \"linear\""},
      {"llama", [](json& c) { c["rope_parameters"]["rope_type"] = "yarn"; }, "rope_parameters has rope_type \"yarn\""},
      {"llama",
       [](json& c) {
         c["rope_parameters"] = {{"full_attention", {{"rope_theta", 1e4}}}};
       },
       "rope_parameters holds settings per layer type"},
      {"llama", [](json& c) { c["attention_bias"] = true; }, "attention_bias is true and mlp_bias false"},
      {"llama", [](json& c) { c["mlp_bias"] = true; }, "mlp_bias is true and attention_bias false"},
      {"llama",
       [](json& c) {
         c["quantization_config"] = {{"quant_method", "gptq"}};
       },
       "quantization_config is set"},
      {"qwen3", [](json& c) { c["attention_bias"] = true; }, "attention_bias is true and the MLP's biases false"},
      {"qwen2", [](json& c) { c["layer_types"][1] = "sliding_attention"; },
       "layer_types has \"sliding_attention\" at layer 1"},
      {"qwen2",
       [](json& c) {
         c.erase("layer_types");
         c["use_sliding_window"] = true;
         c["sliding_window"] = 8;
         c["max_window_layers"] = 1;
       },
       "use_sliding_window is true with max_window_layers 1"},
      {"qwen3_next", [](json& c) { c["layer_types"][0] = "linear_attention"; },
       "layer_types has \"linear_attention\" at layer 0"},
      {"qwen3_next", [](json& c) { c.erase("layer_types"); }, "full_attention_interval is 4"},
      {"qwen3_next", [](json& c) { c["num_experts"] = 8; }, "num_experts is 8: layer 0 is a mixture-of-experts MLP"},
      {"qwen3_next",
       [](json& c) {
         c["num_experts"] = 8;
         c["decoder_sparse_step"] = 2;
       },
       "num_experts is 8: layer 1 is a mixture-of-experts MLP"},
      {"qwen3_next", [](json& c) { c["rope_parameters"]["partial_rotary_factor"] = 0.1; },
       "partial_rotary_factor rotates 3 of head_dim 32 dimensions"},
      {"qwen3_5", [](json& c) { c["attention_bias"] = true; }, "attention_bias is true"},
      {"gpt2", [](json& c) { c["activation_function"] = "gelu"; }, "activation_function is 'gelu'"},
      {"gpt2", [](json& c) { c["scale_attn_by_inverse_layer_idx"] = true; }, "scale_attn_by_inverse_layer_idx is true"},
      {"gpt2", [](json& c) { c["add_cross_attention"] = true; }, "add_cross_attention is true"},
      {"gpt2", [](json& c) { c["n_embd"] = 66; }, "n_embd 66 is not divisible by n_head 4"},
  };
  for (const Refusal& r : cases) {
    ModelCopy m(r.model);
    m.edit_config(r.edit);
    const std::string msg = message_of<ValueError>([&] { m.model(); });
    EXPECT_TRUE(contains(msg, r.message)) << r.model;
    EXPECT_TRUE(contains(msg, m.file(kHfConfigFile))) << r.model;
  }
}

// ---- the tensors ----

TEST(HfTensors, Gpt2ConvWeightsAreTransposedAndWpeCapped) {
  const HfDirectory d = open_hf_directory(kData + "gpt2");
  const models::HfModel m = models::hf_model_from_config(d.config, d.config_path, 10);
  const auto mapped = models::hf_to_gattn(m, d.dir, read_hf_weights(d));
  const Tensor c_attn = hf_tensor("gpt2", "transformer.h.1.attn.c_attn.weight");  // [C, 3C]
  const Tensor& qkv = named(mapped, "blocks.1.attn.qkv.weight");                  // [3C, C]
  ASSERT_EQ(qkv.shape(), (Shape{192, 64}));
  for (const auto& [r, c] : {std::pair{0, 0}, {5, 63}, {100, 7}, {191, 1}})
    EXPECT_EQ(qkv.data<float>()[r * 64 + c], c_attn.data<float>()[c * 192 + r]);
  EXPECT_EQ(named(mapped, "wpe.weight").shape(), (Shape{10, 64}));
  EXPECT_EQ(named(mapped, "wpe.weight").to_vector()[64 * 9 + 3],
            hf_tensor("gpt2", "transformer.wpe.weight").to_vector()[64 * 9 + 3]);
  std::set<std::string> names;
  for (const auto& [n, t] : mapped) names.insert(n);
  EXPECT_FALSE(names.count("lm_head.weight"));  // tied
  EXPECT_EQ(names.size(), 2u + 12u * 2u + 2u);
}

TEST(HfTensors, Gpt2WithoutPrefixAndWithMaskBuffersImports) {
  ModelCopy m("gpt2");
  m.edit_weights([](Tensors& tensors) {
    for (auto& [name, t] : tensors) name = name.substr(std::string("transformer.").size());
    tensors.emplace_back("h.0.attn.bias", Tensor::zeros({1, 1, 64, 64}, DType::f32));
    tensors.emplace_back("h.0.attn.masked_bias", Tensor::zeros({}, DType::f32));
  });
  EXPECT_EQ(m.mapped().size(), 2u + 12u * 2u + 2u);
}

TEST(HfTensors, QwenNextQProjSplitsPerHeadIntoQueryAndGate) {
  const auto mapped = ModelCopy("qwen3_next").mapped();
  const Tensor q_proj = hf_tensor("qwen3_next", "model.layers.0.self_attn.q_proj.weight");  // [2·H·d, C]
  const Tensor k_proj = hf_tensor("qwen3_next", "model.layers.0.self_attn.k_proj.weight");
  const Tensor& qkv = named(mapped, "blocks.0.attn.qkv.weight");    // [(H + 2·H_kv)·d, C]
  const Tensor& gate = named(mapped, "blocks.0.attn.gate.weight");  // [H·d, C]
  const std::int64_t H = 4, K = 2, d = 32, C = 64;
  ASSERT_EQ(qkv.shape(), (Shape{(H + 2 * K) * d, C}));
  ASSERT_EQ(gate.shape(), (Shape{H * d, C}));
  const auto row = [&](const Tensor& t, std::int64_t r) {
    return std::vector<float>(t.data<float>() + r * C, t.data<float>() + (r + 1) * C);
  };
  for (std::int64_t n = 0; n < H; ++n)
    for (std::int64_t j : {0L, 7L, d - 1}) {
      EXPECT_EQ(row(qkv, n * d + j), row(q_proj, 2 * n * d + j)) << "query head " << n;
      EXPECT_EQ(row(gate, n * d + j), row(q_proj, 2 * n * d + d + j)) << "gate head " << n;
    }
  EXPECT_EQ(row(qkv, H * d + 5), row(k_proj, 5));  // the keys follow the queries
  EXPECT_FALSE(std::isnan(named(mapped, "lm_head.weight").to_vector()[0]));
  EXPECT_EQ(named(mapped, "blocks.1.attn.q_norm.weight").shape(), (Shape{d}));
}

TEST(HfTensors, Qwen2StacksQkvBiasesFromShards) {
  const auto mapped = ModelCopy("qwen2").mapped();
  const Tensor& b = named(mapped, "blocks.1.attn.qkv.bias");
  ASSERT_EQ(b.shape(), (Shape{64 + 2 * 16}));
  EXPECT_EQ(b.to_vector()[64 + 16 + 3], hf_tensor("qwen2", "model.layers.1.self_attn.v_proj.bias").to_vector()[3]);
  for (const auto& [n, t] : mapped) EXPECT_EQ(n.find("attn.proj.bias"), std::string::npos) << n;
}

TEST(HfTensors, MissingExtraAndMisshapenTensorsAreNamed) {
  {
    ModelCopy m("llama");
    m.edit_weights([](Tensors& t) {
      std::erase_if(
          t, [](const std::pair<std::string, Tensor>& p) { return p.first == "model.layers.1.mlp.up_proj.weight"; });
    });
    EXPECT_TRUE(contains(message_of<CheckpointError>([&] { m.mapped(); }),
                         "tensor 'model.layers.1.mlp.up_proj.weight' is missing"));
  }
  {
    ModelCopy m("llama");
    m.edit_weights(
        [](Tensors& t) { t.emplace_back("model.layers.0.self_attn.q_proj.bias", Tensor::zeros({64}, DType::f32)); });
    const std::string msg = message_of<CheckpointError>([&] { m.mapped(); });
    EXPECT_TRUE(contains(msg, "tensor 'model.layers.0.self_attn.q_proj.bias' is not a weight of LlamaForCausalLM"));
    EXPECT_TRUE(contains(msg, m.file(kHfWeightsFile)));
  }
  {
    ModelCopy m("llama");
    m.edit_config([](json& c) { c["intermediate_size"] = 128; });
    const std::string msg = message_of<CheckpointError>([&] { m.mapped(); });
    EXPECT_TRUE(contains(msg, "tensor 'model.layers.0.mlp.gate_proj.weight' has shape [160, 64]"));
    EXPECT_TRUE(contains(msg, "implies [intermediate_size, hidden_size] = [128, 64]"));
  }
  {
    ModelCopy m("llama");  // untied: the head is required
    m.edit_weights([](Tensors& t) {
      std::erase_if(t, [](const std::pair<std::string, Tensor>& p) { return p.first == "lm_head.weight"; });
    });
    EXPECT_TRUE(contains(message_of<CheckpointError>([&] { m.mapped(); }), "tensor 'lm_head.weight' is missing"));
  }
}

TEST(HfTensors, ATiedHeadMustBeTheEmbedding) {
  ModelCopy m("qwen3_5");  // tied, no lm_head.weight in the file
  m.edit_weights([](Tensors& t) {
    Tensor copy;
    for (auto& [n, v] : t)
      if (n == "model.embed_tokens.weight") copy = v.to(DType::f32);
    t.emplace_back("lm_head.weight", copy);
  });
  EXPECT_NO_THROW(m.mapped());  // stored twice, equal: fine
  m.edit_weights([](Tensors& t) {
    for (auto& [n, v] : t)
      if (n == "lm_head.weight") v.data<float>()[5] += 1.0f;
  });
  const std::string msg = message_of<ValueError>([&] { m.mapped(); });
  EXPECT_TRUE(contains(msg, "tie_word_embeddings is true, but lm_head.weight"));
  EXPECT_TRUE(contains(msg, "differs from model.embed_tokens.weight"));
}

TEST(HfTensors, QwenNextMtpWeightsAndRotaryBuffersAreIgnored) {
  ModelCopy m("qwen3_next");
  m.edit_weights([](Tensors& t) {
    t.emplace_back("mtp.fc.weight", Tensor::zeros({64, 128}, DType::f32));
    t.emplace_back("model.layers.0.self_attn.rotary_emb.inv_freq", Tensor::zeros({4}, DType::f32));
  });
  EXPECT_NO_THROW(m.mapped());
  ModelCopy l("llama");
  l.edit_weights([](Tensors& t) { t.emplace_back("mtp.fc.weight", Tensor::zeros({64, 128}, DType::f32)); });
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { l.mapped(); }), "tensor 'mtp.fc.weight' is not a weight"));
}

}  // namespace
}  // namespace gattn
