// config.json → ModelConfig for the classes gattn imports. Each key is read with the default its
// transformers config class has (transformers 5.x, which still reads 4.x files: rope_theta and
// rope_scaling at the top level), so a config.json that leaves a key out means what it means to
// transformers. Keys that would change the math into something gattn's model does not compute are
// refused by name rather than dropped.
#include <cmath>
#include <limits>
#include <set>

#include "core/tensor/error.h"
#include "models/gating/registry.h"
#include "models/hf/hf_model.h"

namespace gattn::models {

namespace {

using nlohmann::json;

struct ClassSpec {
  const char* architecture;
  const char* model_type;
  HfFamily family;
  // transformers' defaults for keys a config.json may leave out (0: derived, see below).
  std::int64_t kv_heads;  // 0: num_attention_heads
  std::int64_t head_dim;  // 0: hidden_size / num_attention_heads
  std::int64_t max_positions;
  double partial_rotary;  // 0: the class rotates whole heads
  bool sliding_keys;      // use_sliding_window / max_window_layers (Qwen2, Qwen3)
  bool hybrid_layers;     // layer_types / full_attention_interval of linear and full attention
  bool moe_keys;          // num_experts / decoder_sparse_step / mlp_only_layers (Qwen3-Next)
};

const std::vector<ClassSpec>& classes() {
  static const std::vector<ClassSpec> all = {
      {"GPT2LMHeadModel", "gpt2", HfFamily::gpt2, 0, 0, 1024, 0, false, false, false},
      {"LlamaForCausalLM", "llama", HfFamily::llama, 0, 0, 2048, 0, false, false, false},
      {"Qwen2ForCausalLM", "qwen2", HfFamily::llama, 32, 0, 32768, 0, true, false, false},
      {"Qwen3ForCausalLM", "qwen3", HfFamily::llama, 32, 128, 32768, 0, true, false, false},
      {"Qwen3NextForCausalLM", "qwen3_next", HfFamily::llama, 2, 256, 32768, 0.25, false, true, true},
      {"Qwen3_5ForCausalLM", "qwen3_5_text", HfFamily::llama, 4, 256, 32768, 0.25, false, true, false},
  };
  return all;
}

// Typed reads of config.json's keys, each refusal naming the file and the key. A key set to null
// reads as absent, as transformers reads it.
class Keys {
 public:
  Keys(const json& j, std::string path) : j_(j), path_(std::move(path)) {}

  [[noreturn]] void bad(const std::string& key, const std::string& what) const {
    throw ValueError("import --hf: " + path_ + ": " + key + " " + what);
  }
  const json* find(const std::string& key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  bool has(const std::string& key) const { return find(key) != nullptr; }

  std::int64_t positive_int(const std::string& key) const {
    if (!has(key)) bad(key, "is missing (gattn needs it to build the model)");
    return positive_int(key, 0);
  }
  std::int64_t positive_int(const std::string& key, std::int64_t fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_number_integer() || v->get<std::int64_t>() <= 0)
      bad(key, "must be a positive integer, got " + v->dump());
    return v->get<std::int64_t>();
  }
  double positive_number(const std::string& key, double fallback) const {
    return positive_number(key, find(key), fallback);
  }
  double positive_number(const std::string& key, const json* v, double fallback) const {
    if (!v) return fallback;
    if (!v->is_number() || !(v->get<double>() > 0) || !std::isfinite(v->get<double>()))
      bad(key, "must be a positive number, got " + v->dump());
    return v->get<double>();
  }
  bool boolean(const std::string& key, bool fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) bad(key, "must be true or false, got " + v->dump());
    return v->get<bool>();
  }
  std::string string(const std::string& key, const std::string& fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_string()) bad(key, "must be a string, got " + v->dump());
    return v->get<std::string>();
  }
  // A key that must hold one value (gattn computes only that one), if present.
  void require(const std::string& key, const json& value, const std::string& why) const {
    const json* v = find(key);
    if (v && *v != value) bad(key, "is " + v->dump() + ": " + why);
  }
  const std::string& path() const { return path_; }

 private:
  const json& j_;
  std::string path_;
};

const ClassSpec& class_of(const Keys& k) {
  const std::string model_type = k.string("model_type", "");
  std::string architecture;
  if (const json* a = k.find("architectures")) {
    if (!a->is_array() || a->size() != 1 || !(*a)[0].is_string())
      k.bad("architectures", "must list one model class, got " + a->dump());
    architecture = (*a)[0].get<std::string>();
  }
  std::string supported;
  for (const std::string& c : hf_supported_classes()) supported += (supported.empty() ? "" : ", ") + c;
  for (const ClassSpec& c : classes()) {
    if (!architecture.empty() && architecture != c.architecture) continue;
    if (architecture.empty() && model_type != c.model_type) continue;
    if (model_type != c.model_type)
      k.bad("model_type", "is '" + model_type + "', but " + c.architecture + " is model_type '" + c.model_type + "'");
    return c;
  }
  if (model_type == "qwen3_5")
    k.bad("model_type",
          "is 'qwen3_5', the multimodal Qwen3.5 (its language model in text_config): gattn imports the "
          "language model saved on its own, Qwen3_5ForCausalLM (model_type qwen3_5_text)");
  if (architecture.empty()) {
    if (model_type.empty()) k.bad("model_type", "is missing, and so is architectures: not a transformers config");
    k.bad("model_type", "'" + model_type + "' is not a model gattn imports (it imports " + supported + ")");
  }
  k.bad("architectures", "'" + architecture + "' is not a class gattn imports (it imports " + supported +
                             (architecture.find("ForCausalLM") == std::string::npos &&
                                      architecture.find("LMHeadModel") == std::string::npos
                                  ? "; a base model without its language-model head cannot be run as one"
                                  : "") +
                             ")");
}

// The block size: max positions, capped by --block-size.
std::int64_t block_size(const Keys& k, const std::string& key, std::int64_t max_positions, std::int64_t cap) {
  if (cap <= 0) return max_positions;
  if (cap > max_positions)
    throw ValueError("import --block-size " + std::to_string(cap) + " is larger than the model's " + key + " " +
                     std::to_string(max_positions) + " (" + k.path() + ")");
  return cap;
}

void common_refusals(const Keys& k) {
  if (k.has("quantization_config"))
    k.bad("quantization_config", "is set: quantized weights are not imported (gattn reads f32, bf16 and f16 weights)");
}

HfModel gpt2(const Keys& k, HfModel m, std::int64_t cap) {
  ModelConfig& c = m.config;
  c.vocab_size = k.positive_int("vocab_size");
  c.n_embd = k.positive_int("n_embd");
  c.n_layer = k.positive_int("n_layer");
  c.n_head = k.positive_int("n_head");
  if (c.n_embd % c.n_head != 0)
    k.bad("n_embd", std::to_string(c.n_embd) + " is not divisible by n_head " + std::to_string(c.n_head));
  m.max_positions = k.positive_int("n_positions", k.positive_int("n_ctx", 1024));
  c.block_size = block_size(k, "n_positions", m.max_positions, cap);
  c.mlp_hidden = k.positive_int("n_inner", 0);
  c.norm_eps = k.positive_number("layer_norm_epsilon", 1e-5);
  c.tie_embeddings = k.boolean("tie_word_embeddings", true);
  const std::string act = k.string("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    k.bad("activation_function", "is '" + act + "': gattn's MLP is GELU's tanh form (gelu_new, gelu_pytorch_tanh)");
  k.require("scale_attn_weights", true, "gattn's attention always divides the scores by √d");
  k.require("scale_attn_by_inverse_layer_idx", false, "gattn does not scale the scores by 1/(layer + 1)");
  k.require("add_cross_attention", false, "cross-attention GPT-2 is an encoder–decoder gattn does not import");
  // reorder_and_upcast_attn only computes the scores in float32: the same math.
  return m;
}

struct Rope {
  double theta = 10000.0;
  double fraction = 1.0;
};

// The rotary settings: transformers 5's rope_parameters, or 4's rope_theta / rope_scaling /
// partial_rotary_factor at the top level (5 reads both, the first taking precedence).
Rope rope(const Keys& k, const ClassSpec& spec) {
  const json* params = k.find("rope_parameters");
  if (params && !params->is_object()) k.bad("rope_parameters", "must be an object, got " + params->dump());
  if (params)
    for (const auto& [key, value] : params->items())
      if (value.is_object())
        k.bad("rope_parameters", "holds settings per layer type ('" + key + "'): gattn's layers share one rope");
  const json* scaling = k.find("rope_scaling");
  if (scaling && !scaling->is_object()) k.bad("rope_scaling", "must be an object or null, got " + scaling->dump());
  for (const auto& [key, p] : {std::pair{"rope_parameters", params}, std::pair{"rope_scaling", scaling}}) {
    if (!p) continue;
    const json type = p->contains("rope_type") ? (*p)["rope_type"] : p->value("type", json("default"));
    if (type != "default")
      k.bad(key, "has rope_type " + type.dump() +
                     ": it rescales the rotary frequencies, and gattn's rope is the default one (θ^(−2k/d))");
  }
  Rope r;
  const json* theta = params && params->contains("rope_theta") ? &(*params)["rope_theta"] : k.find("rope_theta");
  r.theta = k.positive_number(params && params->contains("rope_theta") ? "rope_parameters.rope_theta" : "rope_theta",
                              theta, 10000.0);
  if (spec.partial_rotary > 0) {
    const bool nested = params && params->contains("partial_rotary_factor");
    const json* factor = nested ? &(*params)["partial_rotary_factor"] : k.find("partial_rotary_factor");
    const std::string key = nested ? "rope_parameters.partial_rotary_factor" : "partial_rotary_factor";
    r.fraction = k.positive_number(key, factor, spec.partial_rotary);
    if (r.fraction > 1) k.bad(key, "must be at most 1, got " + std::to_string(r.fraction));
  }
  return r;
}

// Every layer full (causal) attention: layer_types, or the interval of full layers among linear ones.
void full_attention_only(const Keys& k, const ClassSpec& spec, std::int64_t layers) {
  if (const json* types = k.find("layer_types")) {
    if (!types->is_array() || static_cast<std::int64_t>(types->size()) != layers)
      k.bad("layer_types",
            "must list the type of each of the " + std::to_string(layers) + " layers, got " + types->dump());
    for (std::size_t i = 0; i < types->size(); ++i)
      if ((*types)[i] != "full_attention")
        k.bad("layer_types", "has " + (*types)[i].dump() + " at layer " + std::to_string(i) +
                                 ": gattn imports models whose every layer is full causal attention");
    return;
  }
  if (spec.hybrid_layers) {
    const std::int64_t interval = k.positive_int("full_attention_interval", 4);
    if (interval != 1 && layers > 0)
      k.bad("full_attention_interval", "is " + std::to_string(interval) +
                                           " (and no layer_types): the other layers are linear attention, which gattn "
                                           "does not have");
  }
  if (spec.sliding_keys && k.boolean("use_sliding_window", false) && k.has("sliding_window") &&
      k.positive_int("max_window_layers", 28) < layers)
    k.bad("use_sliding_window", "is true with max_window_layers " +
                                    std::to_string(k.positive_int("max_window_layers", 28)) +
                                    " < num_hidden_layers: sliding-window layers are not imported");
}

// Qwen3-Next's MLPs: layer i is a mixture of experts unless it is in mlp_only_layers, num_experts is
// 0, or (i + 1) is not a multiple of decoder_sparse_step.
void dense_mlps_only(const Keys& k, std::int64_t layers) {
  const json* experts = k.find("num_experts");
  if (experts && (!experts->is_number_integer() || experts->get<std::int64_t>() < 0))
    k.bad("num_experts", "must be an integer >= 0, got " + experts->dump());
  const std::int64_t n_experts = experts ? experts->get<std::int64_t>() : 512;
  if (n_experts == 0) return;
  std::set<std::int64_t> dense;
  if (const json* only = k.find("mlp_only_layers")) {
    if (!only->is_array()) k.bad("mlp_only_layers", "must be a list of layer indices, got " + only->dump());
    for (const json& i : *only) {
      if (!i.is_number_integer()) k.bad("mlp_only_layers", "must be a list of layer indices, got " + only->dump());
      dense.insert(i.get<std::int64_t>());
    }
  }
  const std::int64_t step = k.positive_int("decoder_sparse_step", 1);
  for (std::int64_t i = 0; i < layers; ++i)
    if (!dense.count(i) && (i + 1) % step == 0)
      k.bad("num_experts", "is " + std::to_string(n_experts) + ": layer " + std::to_string(i) +
                               " is a mixture-of-experts MLP (not in mlp_only_layers, decoder_sparse_step " +
                               std::to_string(step) + "), and gattn imports dense MLPs only");
}

HfModel llama(const Keys& k, const ClassSpec& spec, HfModel m, std::int64_t cap) {
  ModelConfig& c = m.config;
  c.vocab_size = k.positive_int("vocab_size");
  c.n_embd = k.positive_int("hidden_size");
  c.n_layer = k.positive_int("num_hidden_layers");
  c.n_head = k.positive_int("num_attention_heads");
  c.mlp_hidden = k.positive_int("intermediate_size");
  c.n_kv_head = k.positive_int("num_key_value_heads", spec.kv_heads > 0 ? spec.kv_heads : c.n_head);
  if (c.n_head % c.n_kv_head != 0)
    k.bad("num_key_value_heads",
          std::to_string(c.n_kv_head) + " does not divide num_attention_heads " + std::to_string(c.n_head));
  if (!k.has("head_dim") && spec.head_dim == 0 && c.n_embd % c.n_head != 0)
    k.bad("hidden_size", std::to_string(c.n_embd) + " is not divisible by num_attention_heads " +
                             std::to_string(c.n_head) + " (and there is no head_dim)");
  c.head_dim_size = k.positive_int("head_dim", spec.head_dim > 0 ? spec.head_dim : c.n_embd / c.n_head);
  m.max_positions = k.positive_int("max_position_embeddings", spec.max_positions);
  c.block_size = block_size(k, "max_position_embeddings", m.max_positions, cap);
  c.norm = kNormRms;
  c.norm_eps = k.positive_number("rms_norm_eps", 1e-6);
  c.mlp = kMlpSwiglu;
  c.position = kPositionRope;
  c.tie_embeddings = k.boolean("tie_word_embeddings", false);
  const std::string act = k.string("hidden_act", "silu");
  if (act != "silu") k.bad("hidden_act", "is '" + act + "': gattn's gated MLP is SwiGLU (silu)");

  const Rope r = rope(k, spec);
  c.rope_theta = r.theta;
  c.rope_fraction = r.fraction;
  // transformers rotates int(head_dim · factor) dimensions in pairs (k, k + r/2).
  const auto rotated = static_cast<std::int64_t>(static_cast<double>(c.head_dim()) * r.fraction);
  if (rotated == 0 || rotated % 2 != 0)
    k.bad("partial_rotary_factor", "rotates " + std::to_string(rotated) + " of head_dim " +
                                       std::to_string(c.head_dim()) + " dimensions; rope needs an even number > 0");
  full_attention_only(k, spec, c.n_layer);
  if (spec.moe_keys) dense_mlps_only(k, c.n_layer);

  const std::string type = spec.model_type;
  m.qk_norm = type == "qwen3" || type == "qwen3_next" || type == "qwen3_5_text";
  m.output_gate = type == "qwen3_next" || type == "qwen3_5_text";
  if (type == "qwen2") {
    m.qkv_bias = true;  // Qwen2's q, k and v always have biases, o_proj and the MLP never
  } else {
    m.attention_bias = k.boolean("attention_bias", false);
    m.mlp_bias = type == "llama" && k.boolean("mlp_bias", false);
  }
  // gattn's biases are all of the linear layers (model.bias) or q, k, v only (model.qkv_bias).
  if (m.attention_bias != m.mlp_bias)
    k.bad(m.attention_bias ? "attention_bias" : "mlp_bias",
          "is true and " +
              std::string(m.attention_bias ? (type == "llama" ? "mlp_bias" : "the MLP's biases") : "attention_bias") +
              " false: gattn has biases on every linear layer or on q, k, v only");
  if (m.output_gate && m.attention_bias)
    k.bad("attention_bias",
          "is true: the gate rows of q_proj would need a bias, and gattn imports the gate without one");
  c.bias = m.attention_bias;
  c.qkv_bias = m.qkv_bias;
  if (m.qk_norm) c.qk_norm = kNormRms;
  if (m.output_gate) {
    c.norm_offset = true;  // Qwen3-Next's zero-centred norms: 1 + w
    // The attention output gate, σ(h·W_gᵀ) ⊙ y before o_proj, as the kind that computes it.
    c.gate = equivalent_gate("qwen3_next_output_gate");
  }
  return m;
}

}  // namespace

std::vector<std::string> hf_supported_classes() {
  std::vector<std::string> out;
  for (const ClassSpec& c : classes()) out.push_back(std::string(c.architecture) + " (" + c.model_type + ")");
  return out;
}

HfModel hf_model_from_config(const nlohmann::json& config, const std::string& config_path,
                             std::int64_t block_size_cap) {
  const Keys k(config, config_path);
  const ClassSpec& spec = class_of(k);
  common_refusals(k);
  HfModel m;
  m.architecture = spec.architecture;
  m.model_type = spec.model_type;
  m.config_path = config_path;
  m.family = spec.family;
  m = spec.family == HfFamily::gpt2 ? gpt2(k, std::move(m), block_size_cap)
                                    : llama(k, spec, std::move(m), block_size_cap);
  // mlp_hidden only where it differs from the width the MLP would have anyway (GPT-2's 4C), so the
  // config says no more than it must.
  ModelConfig by_default = m.config;
  by_default.mlp_hidden = 0;
  if (m.config.mlp_hidden == by_default.mlp_width()) m.config.mlp_hidden = 0;
  try {
    m.config.validate();
  } catch (const ValueError& e) {
    throw ValueError("import --hf: " + config_path + ": the model it describes is not one gattn builds: " + e.what());
  }
  return m;
}

bool hf_ignored_tensor(const HfModel& model, const std::string& name) {
  const auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (model.family == HfFamily::gpt2)
    return name.find(".attn.") != std::string::npos && (ends_with(".attn.bias") || ends_with(".attn.masked_bias"));
  if (ends_with("rotary_emb.inv_freq")) return true;
  return model.output_gate && name.rfind("mtp.", 0) == 0;
}

}  // namespace gattn::models
