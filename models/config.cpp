// ModelConfig: gate kind names, validation with errors naming the `model.*` key, and the JSON form
// stored in checkpoint metadata.
#include "models/config.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "framework/tensor/error.h"

namespace gattn::models {

namespace {

constexpr GateKind kAllKinds[] = {GateKind::none, GateKind::output,  GateKind::score, GateKind::forget,
                                  GateKind::pair, GateKind::context, GateKind::routed};

[[noreturn]] void bad(const std::string& key, const std::string& what) { throw ValueError(key + ": " + what); }

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

const char* gate_kind_name(GateKind k) {
  switch (k) {
    case GateKind::none:
      return "none";
    case GateKind::output:
      return "output";
    case GateKind::score:
      return "score";
    case GateKind::forget:
      return "forget";
    case GateKind::pair:
      return "pair";
    case GateKind::context:
      return "context";
    case GateKind::routed:
      return "routed";
  }
  return "?";
}

GateKind parse_gate_kind(const std::string& name) {
  std::string valid;
  for (GateKind k : kAllKinds) {
    if (name == gate_kind_name(k)) return k;
    if (!valid.empty()) valid += ", ";
    valid += gate_kind_name(k);
  }
  throw ValueError("model.gate.kind: unknown gate kind '" + name + "' (expected one of " + valid + ")");
}

bool GateConfig::applies_to(std::int64_t layer) const {
  if (kind == GateKind::none) return false;
  if (all_layers) return true;
  return std::find(layers.begin(), layers.end(), layer) != layers.end();
}

double GateConfig::resolved_init_bias() const {
  if (!std::isnan(init_bias)) return init_bias;
  // The Forgetting Transformer starts with σ(3) ≈ 0.95: little forgetting until it is learned.
  return kind == GateKind::forget ? 3.0 : 0.0;
}

void ModelConfig::validate() const {
  if (vocab_size < 0)
    bad("model.vocab_size", "must be >= 0 (0 = taken from the data), got " + std::to_string(vocab_size));
  if (block_size <= 0) bad("model.block_size", "must be > 0, got " + std::to_string(block_size));
  if (n_layer <= 0) bad("model.n_layer", "must be > 0, got " + std::to_string(n_layer));
  if (n_head <= 0) bad("model.n_head", "must be > 0, got " + std::to_string(n_head));
  if (n_embd <= 0) bad("model.n_embd", "must be > 0, got " + std::to_string(n_embd));
  if (n_embd % n_head != 0)
    bad("model.n_embd", "must be divisible by model.n_head, got n_embd=" + std::to_string(n_embd) +
                            " n_head=" + std::to_string(n_head));
  if (dtype != DType::f32 && dtype != DType::f64)
    bad("model.dtype", std::string("must be f32 or f64, got ") + dtype_name(dtype));

  const GateConfig& g = gate;
  if (g.granularity != "elementwise" && g.granularity != "headwise")
    bad("model.gate.granularity", "expected one of elementwise, headwise, got '" + g.granularity + "'");
  if (g.activation != "sigmoid" && g.activation != "gumbel_sigmoid")
    bad("model.gate.activation", "expected one of sigmoid, gumbel_sigmoid, got '" + g.activation + "'");
  if (!(g.temperature > 0) || !std::isfinite(g.temperature))
    bad("model.gate.temperature", "must be a finite number > 0, got " + num(g.temperature));
  if (std::isinf(g.init_bias)) bad("model.gate.init_bias", "must be finite, got " + num(g.init_bias));
  if (g.init_weight != "zero" && g.init_weight != "normal")
    bad("model.gate.init_weight", "expected one of zero, normal, got '" + g.init_weight + "'");
  if (!g.all_layers) {
    std::set<std::int64_t> seen;
    for (std::int64_t l : g.layers) {
      if (l < 0 || l >= n_layer)
        bad("model.gate.layers", "block index " + std::to_string(l) + " out of range [0, " + std::to_string(n_layer) +
                                     ") for model.n_layer=" + std::to_string(n_layer));
      if (!seen.insert(l).second) bad("model.gate.layers", "block index " + std::to_string(l) + " listed twice");
    }
  }
  if (g.windows.empty()) bad("model.gate.windows", "needs at least one expert span");
  for (std::int64_t w : g.windows)
    if (w < 0) bad("model.gate.windows", "spans must be >= 0 (0 = full causal), got " + std::to_string(w));
  const auto n_experts = static_cast<std::int64_t>(g.windows.size());
  if (g.top_k < 1 || g.top_k > n_experts)
    bad("model.gate.top_k", "must be in [1, " + std::to_string(n_experts) +
                                "] (the number of model.gate.windows), got " + std::to_string(g.top_k));
}

nlohmann::json to_json(const ModelConfig& c) {
  nlohmann::json gate = {
      {"kind", gate_kind_name(c.gate.kind)},
      {"granularity", c.gate.granularity},
      {"activation", c.gate.activation},
      {"temperature", c.gate.temperature},
      {"init_weight", c.gate.init_weight},
      {"windows", c.gate.windows},
      {"top_k", c.gate.top_k},
  };
  gate["layers"] = c.gate.all_layers ? nlohmann::json("all") : nlohmann::json(c.gate.layers);
  // JSON has no NaN: the kind's default bias is written as null.
  gate["init_bias"] = std::isnan(c.gate.init_bias) ? nlohmann::json(nullptr) : nlohmann::json(c.gate.init_bias);
  return {{"vocab_size", c.vocab_size}, {"block_size", c.block_size}, {"n_layer", c.n_layer},
          {"n_head", c.n_head},         {"n_embd", c.n_embd},         {"gate", gate}};
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

}  // namespace

ModelConfig model_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) bad("model", "expected an object, got " + j.dump());
  reject_unknown(j, "model.", {"vocab_size", "block_size", "n_layer", "n_head", "n_embd", "gate"});
  ModelConfig c;
  c.vocab_size = get_int(j, "model.", "vocab_size");
  c.block_size = get_int(j, "model.", "block_size");
  c.n_layer = get_int(j, "model.", "n_layer");
  c.n_head = get_int(j, "model.", "n_head");
  c.n_embd = get_int(j, "model.", "n_embd");
  const nlohmann::json& g = field(j, "model.", "gate");
  if (!g.is_object()) bad("model.gate", "expected an object, got " + g.dump());
  const std::string p = "model.gate.";
  reject_unknown(
      g, p,
      {"kind", "granularity", "layers", "activation", "temperature", "init_bias", "init_weight", "windows", "top_k"});
  c.gate.kind = parse_gate_kind(get_string(g, p, "kind"));
  c.gate.granularity = get_string(g, p, "granularity");
  const nlohmann::json& layers = field(g, p, "layers");
  if (layers.is_string()) {
    if (layers.get<std::string>() != "all")
      bad(p + "layers", "expected 'all' or a list of block indices, got " + layers.dump());
    c.gate.all_layers = true;
  } else {
    c.gate.all_layers = false;
    c.gate.layers = get_int_list(layers, p + "layers");
  }
  c.gate.activation = get_string(g, p, "activation");
  c.gate.temperature = get_number(g, p, "temperature");
  const nlohmann::json& bias = field(g, p, "init_bias");
  if (bias.is_null()) {
    c.gate.init_bias = std::numeric_limits<double>::quiet_NaN();
  } else {
    if (!bias.is_number()) bad(p + "init_bias", "expected a number or null, got " + bias.dump());
    c.gate.init_bias = bias.get<double>();
  }
  c.gate.init_weight = get_string(g, p, "init_weight");
  c.gate.windows = get_int_list(field(g, p, "windows"), p + "windows");
  c.gate.top_k = get_int(g, p, "top_k");
  c.validate();
  return c;
}

}  // namespace gattn::models
