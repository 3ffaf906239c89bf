// The run's rules over the whole config: the model's own validation (shapes, gates), a run name
// that stays under runs/, a data path where the data kind needs one, and the two forms of the
// gates (model.gate, model.gates; docs/config.md).
#include "recipes/common/run_config.h"

#include <algorithm>
#include <limits>
#include <set>

#include "models/attention.h"
#include "models/gating/registry.h"
#include "recipes/common/run_schema.h"

namespace gattn {

namespace {

using nlohmann::json;

constexpr const char* kGates = "model.gates";
constexpr const char* kGatePrefix = "model.gate.";

models::ModelConfig model_config_of(const config::Settings& cfg) {
  models::ModelConfig m;
  m.vocab_size = cfg.get_int("model.vocab_size");
  m.block_size = cfg.get_int("model.block_size");
  m.n_layer = cfg.get_int("model.n_layer");
  m.n_head = cfg.get_int("model.n_head");
  m.n_embd = cfg.get_int("model.n_embd");
  m.position = cfg.get_string("model.position");
  m.arch = cfg.get_string("model.arch");
  m.n_encoder_layer = cfg.get_int("model.n_encoder_layer");
  m.norm = cfg.get_string("model.norm");
  m.norm_eps = cfg.get_double("model.norm_eps");
  m.norm_offset = cfg.get_bool("model.norm_offset");
  m.mlp = cfg.get_string("model.mlp");
  m.mlp_hidden = cfg.get_int("model.mlp_hidden");
  m.n_kv_head = cfg.get_int("model.n_kv_head");
  m.head_dim_size = cfg.get_int("model.head_dim");
  m.qk_norm = cfg.get_string("model.qk_norm");
  m.rope_theta = cfg.get_double("model.rope_theta");
  m.rope_fraction = cfg.get_double("model.rope_fraction");
  m.bias = cfg.get_bool("model.bias");
  m.qkv_bias = cfg.get_bool("model.qkv_bias");
  m.tie_embeddings = cfg.get_bool("model.tie_embeddings");
  // The shorthand: the typed keys every gate entry has, and the rest of model.gate.* as options
  // (which the kind checks); set_keys are the ones the file or an override set to a non-default.
  models::GateConfig& g = m.gate;
  g.kind = cfg.get_string("model.gate.kind");
  g.all_layers = cfg.value("model.gate.layers").is_string();
  if (!g.all_layers) g.layers = cfg.get_int_list("model.gate.layers");
  g.activation = cfg.get_string("model.gate.activation");
  g.temperature = cfg.get_double("model.gate.temperature");
  g.init_bias = cfg.has("model.gate.init_bias") ? cfg.get_double("model.gate.init_bias")
                                                : std::numeric_limits<double>::quiet_NaN();
  g.init_weight = cfg.get_string("model.gate.init_weight");
  g.init_std = cfg.get_double("model.gate.init_std");
  g.site = cfg.get_string("model.gate.where");
  const std::vector<std::string>& common = models::common_gate_keys();
  for (const config::KeySpec& s : cfg.schema().keys()) {
    if (s.key.rfind(kGatePrefix, 0) != 0) continue;
    const std::string leaf = s.key.substr(std::string(kGatePrefix).size());
    const bool typed = models::is_entry_key(leaf) || std::find(common.begin(), common.end(), leaf) != common.end();
    if (!typed) g.options[leaf] = cfg.value(s.key);
    // A key written at its default changes nothing, so it cannot mislead (the annotated example
    // writes them all); a key set to anything else must mean something for the kind.
    if (cfg.set_by_user(s.key) && cfg.value(s.key) != s.default_value) g.set_keys.push_back(leaf);
  }
  const json& entries = cfg.value(kGates);
  for (std::size_t i = 0; i < entries.size(); ++i)
    m.gates.push_back(models::gate_from_json(entries[i], std::string(kGates) + "[" + std::to_string(i) + "]", true));
  return m;
}

void check_run_name(const config::Settings& cfg) {
  // run.dir defaults to runs/<run.name>: a name with a '/' (or a bare "..") would put the run
  // somewhere else ("../../escape" outside runs/, "/etc/passwd" under runs/etc/).
  const std::string name = cfg.get_string("run.name");
  std::string problem;
  if (name.empty() && cfg.get_string("run.dir").empty())
    problem = "is empty";
  else if (name.find('/') != std::string::npos)
    problem = "contains '/'";
  else if (name == "." || name == "..")
    problem = "is '" + name + "'";
  for (char c : name)
    if (problem.empty() && static_cast<unsigned char>(c) < 0x20) problem = "contains a control character";
  if (!problem.empty())
    throw ConfigError(cfg.where("run.name") + ": run.name " + json(name).dump() + " " + problem +
                      ": it must be one folder name (the run goes to runs/<run.name>); set run.dir for another place");
}

// Cross-key rules that the per-key schema cannot express: ModelConfig::validate's (shape and gate
// rules; its ValueError starts with the key, which Settings turns into the line) and the run's.
// regularization.gate_l1 is the mean of gate values in [0, ∞): a gate whose values are signed
// (tanh_magnitude) has nothing it could penalise, nor has a kind whose spec says why not.
void check_gate_l1(const config::Settings& cfg, const models::ModelConfig& model) {
  if (cfg.get_double("regularization.gate_l1") == 0.0) return;
  for (const models::GateConfig& g : model.gate_entries()) {
    std::string why;
    if (const models::GateKindSpec* kind = models::find_gate_kind(g.kind)) why = kind->gate_l1_refusal;
    if (g.activation == "tanh_magnitude") why = "activation tanh_magnitude gives signed values";
    if (!why.empty())
      throw ConfigError(cfg.where("regularization.gate_l1") + ": regularization.gate_l1 means nothing for " + g.where +
                        " (kind " + g.kind + "): " + why);
  }
}

// regularization.gate_entropy is the binary entropy −g ln g − (1−g) ln(1−g) of values in (0, 1),
// computed from the σ family's logit: a softplus gate's values reach past 1, where it means nothing,
// and the gate would silently be left out of the mean. (tanh_magnitude's signed values are left out
// of it too, as docs/gates.md says: a model may pair such a gate with σ gates the term weighs.)
void check_gate_entropy(const config::Settings& cfg, const models::ModelConfig& model) {
  if (cfg.get_double("regularization.gate_entropy") == 0.0) return;
  for (const models::GateConfig& g : model.gate_entries())
    if (g.activation == "softplus")
      throw ConfigError(cfg.where("regularization.gate_entropy") + ": regularization.gate_entropy means nothing for " +
                        g.where + " (kind " + g.kind +
                        "): activation softplus gives values in (0, ∞), where binary entropy is undefined");
}

// A regulariser weight needs something to weigh: the gate ones a gate, a kind's own one (router_balance)
// a kind in the model that computes it.
void check_regularizer_terms(const config::Settings& cfg, const models::ModelConfig& model) {
  const auto weighted = [&](const std::string& name) { return cfg.get_double("regularization." + name) != 0.0; };
  for (const char* name : {models::kGateEntropy, models::kGateL1})
    if (weighted(name) && !model.has_gates())
      throw ConfigError(cfg.where(std::string("regularization.") + name) + ": regularization." + name +
                        " weighs the gates' values, but the model has no gate (set model.gate.kind or drop it)");
  std::set<std::string> computed;
  for (const models::GateConfig& g : model.gate_entries())
    for (const std::string& r : models::gate_kind(g.kind).regularizers) computed.insert(r);
  for (const models::GateKindSpec* kind : models::gate_kinds())
    for (const std::string& r : kind->regularizers)
      if (weighted(r) && !computed.count(r))
        throw ConfigError(cfg.where("regularization." + r) + ": regularization." + r +
                          " means nothing here: no gate of " + "the model computes it (kind " + kind->name + " does)");
}

void validate_run(const config::Settings& cfg) {
  const models::ModelConfig model = model_config_of(cfg);
  model.validate();
  check_gate_l1(cfg, model);
  check_gate_entropy(cfg, model);
  check_regularizer_terms(cfg, model);
  check_run_name(cfg);
  const std::string kind = cfg.get_string("data.kind");
  if ((kind == "text" || kind == "tokens") && cfg.get_string("data.path").empty())
    throw ConfigError(cfg.where("data.kind") + ": data.path must be set when data.kind is " + kind);
}

const config::Rules& run_rules() {
  static const config::Rules rules{
      {{"model.gate", kGates, "model.gate is the one-gate shorthand, model.gates the list; keep one"}},
      validate_run,
  };
  return rules;
}

}  // namespace

Config Config::load(const std::string& yaml_path, const std::vector<std::string>& overrides) {
  return Config(Settings::load(run_schema(), run_rules(), yaml_path, overrides));
}

Config Config::from_string(const std::string& yaml_text, const std::vector<std::string>& overrides,
                           const std::string& origin_name) {
  return Config(Settings::from_string(run_schema(), run_rules(), yaml_text, overrides, origin_name));
}

Config Config::defaults() { return Config(Settings::defaults(run_schema(), run_rules())); }

models::ModelConfig Config::model_config() const { return model_config_of(*this); }

std::vector<ParamGroupSpec> Config::param_groups() const { return get_param_groups("optim.param_groups"); }

std::string Config::run_dir() const {
  const std::string dir = get_string("run.dir");
  return dir.empty() ? "runs/" + get_string("run.name") : dir;
}

}  // namespace gattn
