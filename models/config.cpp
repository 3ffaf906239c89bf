// ModelConfig: the gate entries, validation with errors naming the `model.*` key (a gate entry is
// checked against its kind's registration), and the JSON form stored in checkpoint metadata.
#include "models/config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "core/tensor/error.h"
#include "models/gating/registry.h"

namespace gattn::models {

namespace {

[[noreturn]] void bad(const std::string& key, const std::string& what) { throw ValueError(key + ": " + what); }

}  // namespace

std::int64_t ModelConfig::mlp_width() const {
  if (mlp_hidden > 0) return mlp_hidden;
  if (!gated_mlp()) return 4 * n_embd;
  const std::int64_t two_thirds = (8 * n_embd + 2) / 3;  // ⌈8C/3⌉
  return (two_thirds + 31) / 32 * 32;
}

std::int64_t ModelConfig::rope_dims() const {
  return static_cast<std::int64_t>(std::floor(rope_fraction * static_cast<double>(head_dim()) + 1e-9));
}

bool GateConfig::applies_to(std::int64_t layer) const {
  if (kind == kNoGate) return false;
  if (all_layers) return true;
  return std::find(layers.begin(), layers.end(), layer) != layers.end();
}

double GateConfig::resolved_init_bias() const {
  if (!std::isnan(init_bias)) return init_bias;
  const GateKindSpec* k = find_gate_kind(kind);
  return k ? k->default_init_bias : 0.0;
}

nlohmann::json GateConfig::option(const std::string& key) const {
  if (auto it = options.find(key); it != options.end()) return *it;
  if (const GateKindSpec* k = find_gate_kind(kind))
    for (const GateOptionSpec& o : k->options)
      if (o.key == key) return o.default_value;
  throw ValueError(where + "." + key + ": not an option of gate kind '" + kind + "'");
}

std::vector<GateConfig> ModelConfig::gate_entries() const {
  if (!gates.empty()) return gates;
  if (gate.kind == kNoGate) return {};
  return {gate};
}

std::vector<GateConfig> ModelConfig::layer_gates(std::int64_t layer, const std::string& site) const {
  std::vector<GateConfig> out;
  for (const GateKindSpec* k : gate_kinds())  // the registry's order is the order of application
    for (const GateConfig& g : gate_entries())
      if (g.kind == k->name && g.site == site && g.applies_to(layer)) out.push_back(g);
  return out;
}

void ModelConfig::validate() const {
  if (vocab_size < 0)
    bad("model.vocab_size", "must be >= 0 (0 = taken from the data), got " + std::to_string(vocab_size));
  if (block_size <= 0) bad("model.block_size", "must be > 0, got " + std::to_string(block_size));
  if (n_layer <= 0) bad("model.n_layer", "must be > 0, got " + std::to_string(n_layer));
  if (n_head <= 0) bad("model.n_head", "must be > 0, got " + std::to_string(n_head));
  if (n_embd <= 0) bad("model.n_embd", "must be > 0, got " + std::to_string(n_embd));
  if (head_dim_size < 0)
    bad("model.head_dim", "must be >= 0 (0 = n_embd / n_head), got " + std::to_string(head_dim_size));
  if (head_dim_size == 0 && n_embd % n_head != 0)
    bad("model.n_embd", "must be divisible by model.n_head, got n_embd=" + std::to_string(n_embd) +
                            " n_head=" + std::to_string(n_head) + " (or set model.head_dim)");
  if (n_kv_head < 0) bad("model.n_kv_head", "must be >= 0 (0 = n_head), got " + std::to_string(n_kv_head));
  if (n_head % kv_heads() != 0)
    bad("model.n_kv_head",
        "must divide model.n_head, got n_kv_head=" + std::to_string(n_kv_head) + " n_head=" + std::to_string(n_head));
  if (position != kPositionLearned && position != kPositionRope && position != kPositionNone)
    bad("model.position", "must be learned, rope or none, got '" + position + "'");
  if (!(rope_theta > 1.0) || !std::isfinite(rope_theta))
    bad("model.rope_theta", "must be a finite number > 1, got " + std::to_string(rope_theta));
  if (!(rope_fraction > 0.0 && rope_fraction <= 1.0))
    bad("model.rope_fraction", "must be in (0, 1], got " + std::to_string(rope_fraction));
  if (!rope() && (rope_theta != 10000.0 || rope_fraction != 1.0))
    bad(rope_fraction != 1.0 ? "model.rope_fraction" : "model.rope_theta",
        "means nothing with model.position " + position + " (rotary positions only)");
  // The rotation turns the pairs (k, k + r/2) of the r rotated dimensions: an odd r has one left over.
  if (rope() && (rope_dims() % 2 != 0 || rope_dims() == 0))
    bad(rope_fraction != 1.0 ? "model.rope_fraction" : "model.position",
        "rope rotates an even number of dimensions per head, got " + std::to_string(rope_dims()) + " (head_dim " +
            std::to_string(head_dim()) + " × rope_fraction " + std::to_string(rope_fraction) + ")");
  if (norm != kNormLayer && norm != kNormRms) bad("model.norm", "must be layernorm or rmsnorm, got '" + norm + "'");
  if (!(norm_eps > 0.0) || !std::isfinite(norm_eps))
    bad("model.norm_eps", "must be a finite number > 0, got " + std::to_string(norm_eps));
  if (norm_offset && !rms_norm()) bad("model.norm_offset", "needs model.norm rmsnorm (a LayerNorm has no offset form)");
  if (mlp != kMlpGelu && mlp != kMlpSwiglu && mlp != kMlpGlu)
    bad("model.mlp", "must be gelu, swiglu or glu, got '" + mlp + "'");
  if (mlp_hidden < 0)
    bad("model.mlp_hidden", "must be >= 0 (0 = the MLP's default), got " + std::to_string(mlp_hidden));
  if (qk_norm != kQkNormNone && qk_norm != kNormRms)
    bad("model.qk_norm", "must be none or rmsnorm, got '" + qk_norm + "'");
  if (arch != kArchDecoder && arch != kArchEncoderDecoder)
    bad("model.arch", "must be decoder or encoder_decoder, got '" + arch + "'");
  if (n_encoder_layer < 0)
    bad("model.n_encoder_layer", "must be >= 0 (0 = n_layer), got " + std::to_string(n_encoder_layer));
  if (n_encoder_layer > 0 && !encoder_decoder())
    bad("model.n_encoder_layer", "means nothing for model.arch " + arch + " (it has no encoder)");
  if (dtype != DType::f32 && dtype != DType::f64)
    bad("model.dtype", std::string("must be f32 or f64, got ") + dtype_name(dtype));
  if (!gates.empty() && gate.kind != kNoGate)
    bad("model.gates", "given together with model.gate (kind '" + gate.kind +
                           "'): use model.gate for one gate or model.gates for several, not both");
  if (gate.kind != kNoGate && !gate.all_layers && gate.layers.empty())
    bad(gate.where + ".layers", "lists no block: give block indices, or all (or leave the gate out)");
  for (const GateConfig& g : gates)
    if (!g.all_layers && g.layers.empty())
      bad(g.where + ".layers", "lists no block: give block indices, or all (or leave the entry out)");
  validate_gate_entry(gate, *this);
  for (const GateConfig& g : gates) {
    if (g.kind == kNoGate) bad(g.where + ".kind", "a model.gates entry needs a gate kind, got " + g.kind);
    validate_gate_entry(g, *this);
  }
  // At most one gate of each kind per block and site: the parameter names (attn.gate.<kind>.) and
  // the order of application assume it.
  for (const char* site : {kSiteSelf, kSiteEncoder, kSiteCross})
    for (std::int64_t l = 0; l < site_layers(site); ++l) {
      std::map<std::string, std::string> seen;  // kind -> the entry that put it in block l
      for (const GateConfig& g : gates) {
        if (g.site != site || !g.applies_to(l)) continue;
        auto [it, fresh] = seen.emplace(g.kind, g.where);
        if (!fresh)
          bad(g.where + ".layers", "block " + std::to_string(l) + " already has a '" + g.kind + "' gate from " +
                                       it->second + " (at most one gate of each kind per block)");
      }
    }
}

nlohmann::json gate_to_json(const GateConfig& g) {
  nlohmann::json out = {
      {"kind", g.kind},
      {"activation", g.activation},
      {"temperature", g.temperature},
      {"init_weight", g.init_weight},
      {"init_std", g.init_std},
  };
  out["layers"] = g.all_layers ? nlohmann::json("all") : nlohmann::json(g.layers);
  out["where"] = g.site;
  // JSON has no NaN: the kind's default bias is written as null.
  out["init_bias"] = std::isnan(g.init_bias) ? nlohmann::json(nullptr) : nlohmann::json(g.init_bias);
  for (auto it = g.options.begin(); it != g.options.end(); ++it) out[it.key()] = it.value();
  return out;
}

nlohmann::json to_json(const ModelConfig& c) {
  nlohmann::json gates = nlohmann::json::array();
  for (const GateConfig& g : c.gates) gates.push_back(gate_to_json(g));
  nlohmann::json out = {{"vocab_size", c.vocab_size},
                        {"block_size", c.block_size},
                        {"n_layer", c.n_layer},
                        {"n_head", c.n_head},
                        {"n_embd", c.n_embd},
                        {"position", c.position},
                        {"arch", c.arch},
                        {"n_encoder_layer", c.n_encoder_layer},
                        {"gate", gate_to_json(c.gate)},
                        {"gates", gates}};
  // The block's parts (metadata from before they existed lacks them: model_config_from_json reads
  // GPT-2's defaults there).
  out["norm"] = c.norm;
  out["norm_eps"] = c.norm_eps;
  out["norm_offset"] = c.norm_offset;
  out["mlp"] = c.mlp;
  out["mlp_hidden"] = c.mlp_hidden;
  out["n_kv_head"] = c.n_kv_head;
  out["head_dim"] = c.head_dim_size;
  out["qk_norm"] = c.qk_norm;
  out["rope_theta"] = c.rope_theta;
  out["rope_fraction"] = c.rope_fraction;
  out["bias"] = c.bias;
  out["qkv_bias"] = c.qkv_bias;
  out["tie_embeddings"] = c.tie_embeddings;
  return out;
}

namespace {

const nlohmann::json& field(const nlohmann::json& obj, const std::string& prefix, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end()) bad(prefix + name, "missing");
  return *it;
}

std::int64_t get_int(const nlohmann::json& obj, const std::string& prefix, const char* name) {
  const nlohmann::json& v = field(obj, prefix, name);
  if (!v.is_number_integer()) bad(prefix + name, "expected an integer, got " + v.dump());
  return v.get<std::int64_t>();
}

double get_number(const nlohmann::json& obj, const std::string& prefix, const char* name) {
  const nlohmann::json& v = field(obj, prefix, name);
  if (!v.is_number()) bad(prefix + name, "expected a number, got " + v.dump());
  return v.get<double>();
}

bool get_bool(const nlohmann::json& obj, const std::string& prefix, const char* name) {
  const nlohmann::json& v = field(obj, prefix, name);
  if (!v.is_boolean()) bad(prefix + name, "expected true or false, got " + v.dump());
  return v.get<bool>();
}

std::string get_string(const nlohmann::json& obj, const std::string& prefix, const char* name) {
  const nlohmann::json& v = field(obj, prefix, name);
  if (!v.is_string()) bad(prefix + name, "expected a string, got " + v.dump());
  return v.get<std::string>();
}

std::vector<std::int64_t> get_int_list(const nlohmann::json& v, const std::string& key) {
  if (!v.is_array()) bad(key, "expected a list of integers, got " + v.dump());
  std::vector<std::int64_t> out;
  for (const auto& e : v) {
    if (!e.is_number_integer()) bad(key, "expected a list of integers, got " + v.dump());
    out.push_back(e.get<std::int64_t>());
  }
  return out;
}

void reject_unknown(const nlohmann::json& obj, const std::string& prefix, std::initializer_list<const char*> known) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) bad(prefix + it.key(), "unknown key");
  }
}

// Whether some registered kind has an option `key`.
bool is_option_of_some_kind(const std::string& key) {
  for (const GateKindSpec* k : gate_kinds())
    for (const GateOptionSpec& o : k->options)
      if (o.key == key) return true;
  return false;
}

}  // namespace

GateConfig gate_from_json(const nlohmann::json& j, const std::string& where, bool record_keys) {
  if (!j.is_object()) bad(where, "expected a map of gate keys, got " + j.dump());
  const std::string p = where + ".";
  GateConfig g;
  g.where = where;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "kind") {
      if (!v.is_string()) bad(p + key, "expected a string, got " + v.dump());
      g.kind = v.get<std::string>();
      if (g.kind != kNoGate) gate_kind(g.kind, p + key);  // unknown: the message lists the kinds
    } else if (key == "layers") {
      if (v.is_string()) {
        if (v.get<std::string>() != "all") bad(p + key, "expected 'all' or a list of block indices, got " + v.dump());
        g.all_layers = true;
      } else {
        g.all_layers = false;
        g.layers = get_int_list(v, p + key);
      }
    } else if (key == "where") {
      if (!v.is_string()) bad(p + key, "expected self, encoder or cross, got " + v.dump());
      g.site = v.get<std::string>();
    } else if (key == "activation" || key == "init_weight") {
      if (!v.is_string()) bad(p + key, "expected a string, got " + v.dump());
      (key == "activation" ? g.activation : g.init_weight) = v.get<std::string>();
    } else if (key == "temperature" || key == "init_std") {
      if (!v.is_number()) bad(p + key, "expected a number, got " + v.dump());
      (key == "temperature" ? g.temperature : g.init_std) = v.get<double>();
    } else if (key == "init_bias") {
      if (!v.is_null() && !v.is_number()) bad(p + key, "expected a number or null, got " + v.dump());
      g.init_bias = v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
    } else if (is_option_of_some_kind(key)) {
      g.options[key] = v;
    } else {
      bad(p + key, "unknown key (gate keys: kind, layers, " + std::string("activation, temperature, init_bias, ") +
                       "init_weight, init_std and the kinds' own keys; docs/gates.md lists them)");
    }
    if (record_keys) g.set_keys.push_back(key);
  }
  if (!j.contains("kind")) bad(p + "kind", "missing");
  // Metadata written by to_json holds every common key; one that is missing is damage (init_std,
  // newer than the format's first checkpoints, reads as its default when absent).
  if (!record_keys)
    for (const char* key : {"layers", "activation", "temperature", "init_bias", "init_weight"})
      if (!j.contains(key)) bad(p + key, "missing");
  return g;
}

ModelConfig model_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) bad("model", "expected an object, got " + j.dump());
  reject_unknown(j, "model.",
                 {"vocab_size",      "block_size",    "n_layer",  "n_head",  "n_embd",     "position",      "arch",
                  "n_encoder_layer", "gate",          "gates",    "norm",    "norm_eps",   "norm_offset",   "mlp",
                  "mlp_hidden",      "n_kv_head",     "head_dim", "qk_norm", "rope_theta", "rope_fraction", "bias",
                  "qkv_bias",        "tie_embeddings"});
  ModelConfig c;
  c.vocab_size = get_int(j, "model.", "vocab_size");
  c.block_size = get_int(j, "model.", "block_size");
  c.n_layer = get_int(j, "model.", "n_layer");
  c.n_head = get_int(j, "model.", "n_head");
  c.n_embd = get_int(j, "model.", "n_embd");
  // Metadata from before rotary positions has no "position": those models learned theirs.
  if (auto it = j.find("position"); it != j.end()) {
    if (!it->is_string()) bad("model.position", "expected learned, rope or none, got " + it->dump());
    c.position = it->get<std::string>();
  }
  // Metadata from before encoder–decoder models has no "arch" (nor "n_encoder_layer", nor a gate's
  // "where"): decoders.
  if (auto it = j.find("arch"); it != j.end()) {
    if (!it->is_string()) bad("model.arch", "expected decoder or encoder_decoder, got " + it->dump());
    c.arch = it->get<std::string>();
  }
  if (j.contains("n_encoder_layer")) c.n_encoder_layer = get_int(j, "model.", "n_encoder_layer");
  // The block's parts: absent in metadata from before they existed and wherever they are GPT-2's.
  if (j.contains("norm")) c.norm = get_string(j, "model.", "norm");
  if (j.contains("norm_eps")) c.norm_eps = get_number(j, "model.", "norm_eps");
  if (j.contains("norm_offset")) c.norm_offset = get_bool(j, "model.", "norm_offset");
  if (j.contains("mlp")) c.mlp = get_string(j, "model.", "mlp");
  if (j.contains("mlp_hidden")) c.mlp_hidden = get_int(j, "model.", "mlp_hidden");
  if (j.contains("n_kv_head")) c.n_kv_head = get_int(j, "model.", "n_kv_head");
  if (j.contains("head_dim")) c.head_dim_size = get_int(j, "model.", "head_dim");
  if (j.contains("qk_norm")) c.qk_norm = get_string(j, "model.", "qk_norm");
  if (j.contains("rope_theta")) c.rope_theta = get_number(j, "model.", "rope_theta");
  if (j.contains("rope_fraction")) c.rope_fraction = get_number(j, "model.", "rope_fraction");
  if (j.contains("bias")) c.bias = get_bool(j, "model.", "bias");
  if (j.contains("qkv_bias")) c.qkv_bias = get_bool(j, "model.", "qkv_bias");
  if (j.contains("tie_embeddings")) c.tie_embeddings = get_bool(j, "model.", "tie_embeddings");
  c.gate = gate_from_json(field(j, "model.", "gate"), "model.gate", false);
  // Metadata from before several gates could be configured has no "gates".
  if (auto it = j.find("gates"); it != j.end()) {
    if (!it->is_array()) bad("model.gates", "expected a list of gate entries, got " + it->dump());
    for (std::size_t i = 0; i < it->size(); ++i)
      c.gates.push_back(gate_from_json((*it)[i], "model.gates[" + std::to_string(i) + "]", false));
  }
  c.validate();
  return c;
}

}  // namespace gattn::models
