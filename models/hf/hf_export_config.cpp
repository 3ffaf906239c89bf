// ModelConfig → the transformers class that computes it, and its config.json. A class is chosen only
// when it computes gattn's model exactly: each class lists what it needs of the model, and a model
// no class fits is refused with the first thing that keeps the nearest class from computing it.
// config.json holds the keys transformers 5 writes for the class (rope_parameters), so that every key
// import reads (models/hf/hf_config.cpp) says what the model is, and nothing is left to a default
// that another version might change.
#include <functional>

#include "core/tensor/error.h"
#include "models/gating/registry.h"
#include "models/hf/hf_export.h"

namespace gattn::models {

namespace {

using nlohmann::json;

// The names models/hf gives Qwen3-Next's attention output gate (the gate registry's equivalents): as
// it is, d values per head, and with the d rows of each head equal, one value per head.
constexpr const char* kOutputGate = "qwen3_next_output_gate";
constexpr const char* kOutputGatePerHead = "qwen3_next_output_gate_per_head";

// "model.norm is rmsnorm": a key of the model's config and its value, for the refusals.
std::string is(const std::string& key, const json& value) {
  return "model." + key + " is " + (value.is_string() ? value.get<std::string>() : value.dump());
}

struct ExportClass {
  const char* architecture;
  const char* model_type;
  HfFamily family;
  bool gate_in_summary;  // the list of what exports says which gate the class takes
  const char* summary;   // what the class computes, for the list of what exports
  // "" when the class computes the model, else why not (the first reason).
  std::function<std::string(const ModelConfig&, const char* architecture)> why_not;
};

// The kind that computes Qwen3-Next's gate, to name it in messages without naming a kind here.
std::string output_gate_kind() { return equivalent_gate(kOutputGate).kind; }

// How the model's config names a gate entry's keys: "gate" (model.gate) or "gates[1]".
std::string entry_key(const GateConfig& g) {
  const std::string prefix = "model.";
  return g.where.rfind(prefix, 0) == 0 ? g.where.substr(prefix.size()) : g.where;
}

std::string no_gates(const ModelConfig& c, const std::string& architecture) {
  if (!c.has_gates()) return "";
  const GateConfig g = c.gate_entries().front();
  return is(entry_key(g) + ".kind", g.kind) + ": " + architecture + " has no gate (only the " + output_gate_kind() +
         " gate exports, as Qwen3-Next's and Qwen3.5's attention output gate)";
}

std::string gpt2_needs(const ModelConfig& c, const char* a) {
  const std::string arch = a;
  if (!c.learned_positions()) return is("position", c.position) + ": " + arch + " has learned positions";
  if (c.rms_norm()) return is("norm", c.norm) + ": " + arch + ", the class with learned positions, has LayerNorm";
  if (c.mlp != kMlpGelu) return is("mlp", c.mlp) + ": " + arch + "'s MLP is GELU";
  if (!c.bias) return is("bias", false) + ": " + arch + " has biases on every linear layer";
  if (c.kv_heads() != c.n_head)
    return is("n_kv_head", c.n_kv_head) + ": " + arch + " has a key/value head per query head";
  if (c.n_embd % c.n_head != 0 || c.head_dim() != c.n_embd / c.n_head)
    return is("head_dim", c.head_dim()) + ": " + arch + "'s heads are n_embd / n_head wide";
  if (c.qk_norm != kQkNormNone) return is("qk_norm", c.qk_norm) + ": " + arch + " does not normalise q and k";
  return no_gates(c, arch);
}

// What every class of Llama's family needs: rope, RMSNorm, SwiGLU; whole heads rotated unless the
// class rotates part of one.
std::string llama_family_needs(const ModelConfig& c, const std::string& arch, bool partial_rotary) {
  if (!c.rope()) return is("position", c.position) + ": " + arch + " rotates q and k (rope)";
  if (!c.rms_norm()) return is("norm", c.norm) + ": " + arch + "'s norms are RMSNorm";
  if (!c.swiglu()) return is("mlp", c.mlp) + ": " + arch + "'s MLP is SwiGLU";
  if (!partial_rotary && c.rope_fraction != 1.0)
    return is("rope_fraction", c.rope_fraction) + ": " + arch +
           " rotates whole heads (Qwen3-Next and Qwen3.5, which carry the gate, rotate part of one)";
  return "";
}

std::string llama_needs(const ModelConfig& c, const char* a) {
  const std::string arch = a;
  if (std::string why = llama_family_needs(c, arch, false); !why.empty()) return why;
  if (c.qk_norm != kQkNormNone)
    return is("qk_norm", c.qk_norm) + ": " + arch + " does not normalise q and k (Qwen3ForCausalLM does)";
  if (c.qkv_bias && !c.bias)
    return is("qkv_bias", true) + ": " + arch +
           " has biases on every linear layer or none (Qwen2ForCausalLM has them on q, k, v)";
  return no_gates(c, arch);
}

std::string qwen2_needs(const ModelConfig& c, const char* a) {
  const std::string arch = a;
  if (std::string why = llama_family_needs(c, arch, false); !why.empty()) return why;
  if (c.qk_norm != kQkNormNone) return is("qk_norm", c.qk_norm) + ": " + arch + " does not normalise q and k";
  if (c.bias) return is("bias", true) + ": " + arch + " has biases on q, k and v only";
  if (!c.qkv_bias) return is("qkv_bias", false) + ": " + arch + " always has q, k and v biases";
  return no_gates(c, arch);
}

// Qwen3's attention_bias biases q, k, v and o_proj but not the MLP: gattn has no such model.
std::string no_biases(const ModelConfig& c, const std::string& arch) {
  if (c.bias)
    return is("bias", true) + ": " + arch + "'s biases (attention_bias) are on q, k, v and o_proj, never the MLP";
  if (c.qkv_bias) return is("qkv_bias", true) + ": " + arch + "'s attention_bias would bias o_proj too";
  return "";
}

std::string qwen3_needs(const ModelConfig& c, const char* a) {
  const std::string arch = a;
  if (std::string why = llama_family_needs(c, arch, false); !why.empty()) return why;
  if (c.qk_norm == kQkNormNone) return is("qk_norm", c.qk_norm) + ": " + arch + " normalises q and k per head";
  if (std::string why = no_biases(c, arch); !why.empty()) return why;
  return no_gates(c, arch);
}

// The gate entry's differences from Qwen3-Next's gate, with the equivalent (as it is, or per head)
// that it is nearest to; empty when it is one of them.
std::vector<std::string> gate_mismatches(const GateConfig& g, bool* per_head) {
  std::vector<std::string> elementwise = equivalent_mismatches(g, kOutputGate);
  std::vector<std::string> headwise = equivalent_mismatches(g, kOutputGatePerHead);
  *per_head = headwise.size() < elementwise.size();
  return *per_head ? headwise : elementwise;
}

// The gate comes first: a kind transformers has no math for is the reason, whatever else the model is.
std::string gated_needs(const ModelConfig& c, const char* a) {
  const std::string arch = a;
  const std::vector<GateConfig> gates = c.gate_entries();
  if (gates.empty())
    return "the model has no gate: " + arch + " gates every attention output (σ(h·W_gᵀ), the " + output_gate_kind() +
           " gate with bias false)";
  if (gates.size() > 1)
    return "model.gates has " + std::to_string(gates.size()) + " entries: " + arch +
           " has one gate, on the attention output";
  const GateConfig& g = gates.front();
  const std::string key = entry_key(g);
  bool per_head = false;
  const std::vector<std::string> differences = gate_mismatches(g, &per_head);
  if (!differences.empty() && differences.front().rfind("kind is ", 0) == 0)
    return is(key + ".kind", g.kind) + ", a gate no transformers class has (the " + output_gate_kind() +
           " gate exports, as " + arch + "'s attention output gate)";
  if (std::string why = llama_family_needs(c, arch, true); !why.empty()) return why;
  if (c.qk_norm == kQkNormNone) return is("qk_norm", c.qk_norm) + ": " + arch + " normalises q and k per head";
  if (c.bias || c.qkv_bias)
    return is(c.bias ? "bias" : "qkv_bias", true) + ": " + arch +
           "'s attention_bias would bias the gate rows of q_proj too, and gattn's gate there has none";
  for (std::int64_t i = 0; i < c.n_layer; ++i)
    if (!g.applies_to(i))
      return is(key + ".layers", g.all_layers ? json("all") : json(g.layers)) + ": " + arch +
             " gates every layer, and layer " + std::to_string(i) + " has no gate";
  if (differences.empty()) return "";
  std::string list;
  for (const std::string& d : differences) list += (list.empty() ? "" : ", ") + d;
  return "model." + key + ": " + list + ": " + arch +
         "'s attention output gate is σ(h·W_gᵀ) without a bias, elementwise (or, written d times, headwise)";
}

const std::vector<ExportClass>& classes() {
  static const std::vector<ExportClass> all = {
      {"GPT2LMHeadModel", "gpt2", HfFamily::gpt2, false, "learned positions, LayerNorm, GELU, biases", gpt2_needs},
      {"LlamaForCausalLM", "llama", HfFamily::llama, false,
       "rope, RMSNorm, SwiGLU, biases on every linear layer or none", llama_needs},
      {"Qwen2ForCausalLM", "qwen2", HfFamily::llama, false, "Llama's with biases on q, k, v only", qwen2_needs},
      {"Qwen3ForCausalLM", "qwen3", HfFamily::llama, false, "Llama's with QK-norm, no biases", qwen3_needs},
      {"Qwen3NextForCausalLM", "qwen3_next", HfFamily::llama, true, "Qwen3's", gated_needs},
      {"Qwen3_5ForCausalLM", "qwen3_5_text", HfFamily::llama, false, "as Qwen3NextForCausalLM, with --class",
       gated_needs},
  };
  return all;
}

// The class whose reason to refuse a model is the one to show: the class the model's most telling
// settings point at.
const ExportClass& nearest(const ModelConfig& c) {
  const std::string type = c.has_gates()              ? "qwen3_next"
                           : c.learned_positions()    ? "gpt2"
                           : c.qk_norm != kQkNormNone ? "qwen3"
                           : c.qkv_bias && !c.bias    ? "qwen2"
                                                      : "llama";
  for (const ExportClass& k : classes())
    if (type == k.model_type) return k;
  return classes().front();
}

std::string exported_list() {
  std::string out;
  for (const std::string& c : hf_export_classes()) out += (out.empty() ? "" : "; ") + c;
  return "gattn exports " + out;
}

HfTarget target_of(const ExportClass& k, const ModelConfig& c) {
  HfTarget t;
  t.architecture = k.architecture;
  t.model_type = k.model_type;
  t.family = k.family;
  t.config = c;
  if (k.family == HfFamily::gpt2) return t;
  t.attention_bias = c.bias;
  t.qkv_bias = c.qkv_bias && !c.bias;
  t.qk_norm = c.qk_norm != kQkNormNone;
  t.output_gate = c.has_gates();
  if (t.output_gate) {
    bool per_head = false;
    gate_mismatches(c.gate_entries().front(), &per_head);
    t.gate_per_head = per_head;
    t.zero_centred_norms = true;
  }
  return t;
}

json rope_parameters(const HfTarget& t) {
  json p = {{"rope_type", "default"}, {"rope_theta", t.config.rope_theta}};
  if (t.output_gate) p["partial_rotary_factor"] = t.config.rope_fraction;
  return p;
}

json gpt2_config(const HfTarget& t) {
  const ModelConfig& c = t.config;
  return {{"vocab_size", c.vocab_size},
          {"n_positions", c.block_size},
          {"n_embd", c.n_embd},
          {"n_layer", c.n_layer},
          {"n_head", c.n_head},
          // null: 4·n_embd, as import reads it back.
          {"n_inner", c.mlp_width() == 4 * c.n_embd ? json(nullptr) : json(c.mlp_width())},
          {"activation_function", "gelu_new"},
          {"layer_norm_epsilon", c.norm_eps},
          // gattn's model has no dropout: a model fine-tuned in transformers should not either.
          {"resid_pdrop", 0.0},
          {"embd_pdrop", 0.0},
          {"attn_pdrop", 0.0},
          {"scale_attn_weights", true},
          {"scale_attn_by_inverse_layer_idx", false},
          {"reorder_and_upcast_attn", false}};
}

json llama_config(const HfTarget& t) {
  const ModelConfig& c = t.config;
  json j = {{"vocab_size", c.vocab_size},
            {"hidden_size", c.n_embd},
            {"num_hidden_layers", c.n_layer},
            {"num_attention_heads", c.n_head},
            {"num_key_value_heads", c.kv_heads()},
            {"head_dim", c.head_dim()},
            {"intermediate_size", c.mlp_width()},
            {"hidden_act", "silu"},
            {"max_position_embeddings", c.block_size},
            {"rms_norm_eps", c.norm_eps},
            {"rope_parameters", rope_parameters(t)},
            {"attention_dropout", 0.0}};
  const json full = json(std::vector<std::string>(static_cast<std::size_t>(c.n_layer), "full_attention"));
  if (t.model_type == "llama") {
    j["attention_bias"] = t.attention_bias;
    j["mlp_bias"] = t.attention_bias;
  } else {
    // Every layer full attention: no sliding windows, no linear attention.
    j["layer_types"] = full;
  }
  if (t.model_type == "qwen2" || t.model_type == "qwen3") {
    j["use_sliding_window"] = false;
    j["sliding_window"] = nullptr;
    j["max_window_layers"] = c.n_layer;
  }
  if (t.model_type != "llama" && t.model_type != "qwen2") j["attention_bias"] = false;
  if (t.model_type == "qwen3_next") {
    // Dense MLPs in every layer.
    j["num_experts"] = 0;
    j["mlp_only_layers"] = json::array();
    j["decoder_sparse_step"] = 1;
  }
  return j;
}

}  // namespace

std::vector<std::string> hf_export_classes() {
  std::vector<std::string> out;
  for (const ExportClass& k : classes())
    out.push_back(std::string(k.architecture) + " (" + k.summary +
                  (k.gate_in_summary ? " with the attention output gate, model.gate.kind " + output_gate_kind() +
                                           " elementwise or headwise with bias false, on every layer; any rope_fraction"
                                     : "") +
                  ")");
  return out;
}

HfTarget hf_export_target(const ModelConfig& config, const std::string& wanted) {
  if (config.encoder_decoder())
    throw ValueError("export: " + is("arch", config.arch) + ": transformers' causal-LM classes are decoders; " +
                     exported_list());
  // No transformers class has the sigmoid GLU: GPT-2's MLP is GELU, the Llama family's SwiGLU.
  if (config.mlp == kMlpGlu)
    throw ValueError("export: " + is("mlp", config.mlp) +
                     ": no transformers class has a sigmoid-gated MLP σ(gate(h)) ⊙ up(h) (GPT-2's is GELU, Llama's "
                     "and Qwen's SwiGLU silu(gate(h)) ⊙ up(h)); " +
                     exported_list());
  if (!wanted.empty()) {
    for (const ExportClass& k : classes()) {
      if (wanted != k.architecture && wanted != k.model_type) continue;
      const std::string why = k.why_not(config, k.architecture);
      if (why.empty()) return target_of(k, config);
      std::string fits;
      for (const ExportClass& other : classes())
        if (fits.empty() && other.why_not(config, other.architecture).empty()) fits = other.architecture;
      throw ValueError("export --class " + wanted + ": " + why + " (" +
                       (fits.empty() ? exported_list() : "the model exports as " + fits) + ")");
    }
    std::string names;
    for (const ExportClass& k : classes())
      names += (names.empty() ? "" : ", ") + std::string(k.architecture) + " (" + k.model_type + ")";
    throw ValueError("export --class " + wanted + ": not a class gattn exports (it exports " + names + ")");
  }
  for (const ExportClass& k : classes())
    if (k.why_not(config, k.architecture).empty()) return target_of(k, config);
  const ExportClass& k = nearest(config);
  throw ValueError("export: no transformers class computes this model: " + k.why_not(config, k.architecture) + ". " +
                   exported_list());
}

nlohmann::json hf_export_config(const HfTarget& t) {
  json j = t.family == HfFamily::gpt2 ? gpt2_config(t) : llama_config(t);
  j["architectures"] = {t.architecture};
  j["model_type"] = t.model_type;
  j["tie_word_embeddings"] = t.config.tie_embeddings;
  // transformers 5 reads dtype, 4 torch_dtype: the weights are gattn's f32.
  j["dtype"] = "float32";
  j["torch_dtype"] = "float32";
  // The token ids are the checkpoint's: no special tokens are known without its tokenizer.
  j["bos_token_id"] = nullptr;
  j["eos_token_id"] = nullptr;
  j["pad_token_id"] = nullptr;
  j["use_cache"] = true;
  return j;
}

}  // namespace gattn::models
