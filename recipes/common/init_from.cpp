// train.init_from: reading the source checkpoint, inheriting its model settings, and copying its
// weights into a model that may carry more gates.
#include "recipes/common/init_from.h"

#include <filesystem>
#include <map>
#include <set>

#include "framework/config/errors.h"
#include "framework/io/checkpoint_verify.h"
#include "framework/io/errors.h"
#include "framework/io/module_io.h"
#include "framework/io/safetensors.h"
#include "models/gating/options.h"
#include "models/gating/registry.h"
#include "recipes/common/checkpoint_model.h"
#include "recipes/common/vocabulary_match.h"

namespace gattn::recipes {

namespace {

namespace fs = std::filesystem;

constexpr const char* kKey = "train.init_from";

struct Source {
  std::string dir, model_path;
  SafetensorsFile file;
  Config config;
};

// The checkpoint, verified, and the run config its weights carry. Anything wrong with it is the
// checkpoint's fault (exit 3), never a reason to start from random weights.
Source read_source(const Config& cfg) {
  const std::string given = cfg.get_string(kKey);
  const std::string who = cfg.where(kKey) + ": " + kKey;
  if (!fs::exists(given)) throw CheckpointError(who + ": checkpoint directory '" + given + "' does not exist");
  const fs::path dir = checkpoint_directory(given, who);
  const std::string model_path = (dir / "model.safetensors").string();
  SafetensorsFile file = load_safetensors(model_path);
  verify_checkpoint_file(file);
  const auto it = file.metadata.find("config");
  if (it == file.metadata.end()) throw CheckpointError(who + ": " + model_path + " has no 'config' metadata");
  const std::string origin = model_path + " (config metadata)";
  try {
    Config config = Config::from_string(it->second, {}, origin);
    return Source{dir.string(), model_path, std::move(file), std::move(config)};
  } catch (const Error& e) {
    throw CheckpointError(who + ": " + model_path +
                          ": its 'config' metadata is not a valid gattn config (damaged?): " + e.what());
  }
}

// Where a gate entry was written, for messages: the shorthand's kind line or the list's.
std::string where_entry(const Config& cfg, const models::GateConfig& g) {
  return cfg.where(g.where == "model.gate" ? "model.gate.kind" : "model.gates");
}

bool is_gate_key(const std::string& key) { return key.rfind("model.gate.", 0) == 0 || key == "model.gates"; }
bool is_model_key(const std::string& key) { return key.rfind("model.", 0) == 0; }

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// The parameter names and shapes of `mc`'s model without any gate: what every model of these
// settings has, whatever its gates.
std::map<std::string, Shape> ungated_parameters(models::ModelConfig mc) {
  mc.gate = models::GateConfig{};
  mc.gates.clear();
  std::map<std::string, Shape> out;
  models::GPT bare(mc, 0);
  bare.visit_parameters([&](const std::string& name, Tensor& p) { out.emplace(name, p.shape()); });
  return out;
}

// `name`, a tensor of a block's only gate ("….gate.weight"), as the model names it once the block
// has several gates ("….gate.<kind>.weight", the kind the checkpoint's block has there), or "" when
// it is no such tensor. Names: blocks.L.attn.gate.*, encoder.blocks.L.attn.gate.*, blocks.L.cross.gate.*.
std::string name_under_kind(const std::string& name, const models::ModelConfig& before,
                            const std::map<std::string, Tensor*>& params) {
  const std::size_t at = name.rfind(".gate.");
  const std::size_t blocks = name.rfind("blocks.", at);
  if (at == std::string::npos || blocks == std::string::npos) return "";
  const std::string site = name.rfind("encoder.", 0) == 0                      ? models::kSiteEncoder
                           : at >= 6 && name.compare(at - 6, 6, ".cross") == 0 ? models::kSiteCross
                                                                               : models::kSiteSelf;
  std::int64_t layer = -1;
  try {
    layer = std::stoll(name.substr(blocks + 7));
  } catch (const std::exception&) {
    return "";
  }
  std::string kind;
  for (const models::GateConfig& g : before.layer_gates(layer, site))
    if (models::gate_kind(g.kind).module_name == "gate") kind = kind.empty() ? g.kind : "(several)";
  const std::string moved = name.substr(0, at) + ".gate." + kind + "." + name.substr(at + 6);
  return !kind.empty() && params.count(moved) ? moved : "";
}

// Schedules of a gate entry (`entry`: as the config holds it) that are over at the checkpoint's
// step, written as their end: no ramp, the final temperature. A new run counts steps from 0 again, so
// a kept gate whose ramp had ended would otherwise ramp in once more, and start elsewhere than the
// checkpoint's function. A schedule still running at that step restarts (docs/finetune.md).
nlohmann::json settled_entry(nlohmann::json entry, std::int64_t step) {
  const models::GateOptions o = models::GateOptions::of(models::gate_from_json(entry, "model.gates", true));
  if (o.ramp_at(step) == 1.0) {
    entry.erase("ramp_start");
    entry.erase("ramp_steps");
  }
  if (o.temperature_steps > 0 && step >= o.temperature_steps) {
    entry["temperature"] = o.temperature_final;
    entry.erase("temperature_final");
    entry.erase("temperature_steps");
  }
  return entry;
}

}  // namespace

std::vector<std::string> init_from_overrides(const Config& cfg) {
  if (cfg.get_string(kKey).empty()) return {};
  const Source src = read_source(cfg);
  bool names_gates = false;
  for (const config::KeySpec& s : cfg.schema().keys())
    names_gates = names_gates || (is_gate_key(s.key) && cfg.set_by_user(s.key));
  // The checkpoint's gates as they compute at its step: the shorthand's keys through its entry.
  const std::int64_t step = checkpoint_step(src.dir);
  nlohmann::json shorthand = nlohmann::json::object();
  for (const config::KeySpec& s : cfg.schema().keys())
    if (s.key.rfind("model.gate.", 0) == 0) shorthand[s.key.substr(11)] = src.config.value(s.key);
  if (shorthand.value("kind", "") != models::kNoGate) shorthand = settled_entry(shorthand, step);
  std::vector<std::string> out;
  const Config defaults = Config::defaults();
  for (const config::KeySpec& s : cfg.schema().keys()) {
    if (!is_model_key(s.key) || cfg.set_by_user(s.key) || (names_gates && is_gate_key(s.key))) continue;
    nlohmann::json v = src.config.value(s.key);
    if (s.key.rfind("model.gate.", 0) == 0) v = shorthand.value(s.key.substr(11), defaults.value(s.key));
    if (s.key == "model.gates")
      for (nlohmann::json& entry : v) entry = settled_entry(entry, step);
    if (v != defaults.value(s.key)) out.push_back(s.key + "=" + v.dump());  // JSON is YAML
  }
  return out;
}

void check_init_from_vocabulary(const Config& cfg, const Dataset& data) {
  if (cfg.get_string(kKey).empty()) return;
  const Source src = read_source(cfg);
  check_same_vocabulary(src.file.metadata, src.model_path, data);
}

InitFrom init_from_checkpoint(const Config& cfg, const Dataset& data, models::GPT& model) {
  Source src = read_source(cfg);
  check_same_vocabulary(src.file.metadata, src.model_path, data);
  const std::string who = cfg.where(kKey) + ": " + kKey;

  InitFrom out;
  out.dir = src.dir;
  std::vector<std::string> changed_keys;  // keys that may have changed a tensor
  for (const config::KeySpec& s : cfg.schema().keys()) {
    if (!is_model_key(s.key) || is_gate_key(s.key) || cfg.value(s.key) == src.config.value(s.key)) continue;
    const std::string change = s.key + ": " + src.config.value(s.key).dump() + " -> " + cfg.value(s.key).dump();
    out.config_changes.push_back(change);
    changed_keys.push_back(cfg.where(s.key) + ": " + change);
  }
  // A tensor that differs from the checkpoint's: the config's doing when it changed a model key
  // (exit 2, naming it), the checkpoint's damage otherwise (exit 3, naming the tensor).
  const auto mismatch = [&](const std::string& what) {
    if (changed_keys.empty()) throw CheckpointError(who + ": " + src.model_path + ": " + what + " (damaged?)");
    std::string keys;
    for (const std::string& k : changed_keys) keys += (keys.empty() ? "" : "; ") + k;
    throw ConfigError(keys + ": " + what + "; " + kKey + " may add gates but change nothing that shapes a tensor");
  };

  // The checkpoint's gates stay, block by block: a block's only gate is named by its place, not its
  // kind (attn.gate.*), so a config that swapped one kind for another in a block would otherwise
  // load one kind's weights into another's.
  const models::ModelConfig now = model.config(), before = src.config.model_config();
  const std::string gates_where = cfg.where(cfg.set_by_user("model.gates") ? "model.gates" : "model.gate.kind");
  for (const char* site : {models::kSiteSelf, models::kSiteEncoder, models::kSiteCross}) {
    const bool sited = std::string(site) == models::kSiteSelf || before.encoder_decoder();
    for (std::int64_t l = 0; sited && l < before.site_layers(site); ++l)
      for (const models::GateConfig& old : before.layer_gates(l, site)) {
        bool kept = false;
        for (const models::GateConfig& g : now.layer_gates(l, site)) kept = kept || g.kind == old.kind;
        if (!kept)
          throw ConfigError(gates_where + ": the checkpoint has a '" + old.kind + "' gate on the " + site +
                            " attention of block " + std::to_string(l) + ", which this config drops; " + kKey +
                            " keeps the checkpoint's gates as they are (list them in model.gates beside the ones "
                            "you add)");
      }
  }

  std::map<std::string, Tensor*> params;
  std::vector<std::pair<std::string, Tensor>> named = model.named_parameters();
  for (auto& [name, p] : named) params.emplace(name, &p);
  const std::map<std::string, Shape> ungated = ungated_parameters(src.config.model_config());

  // Every tensor of the checkpoint lands somewhere, with its shape.
  SafetensorsFile merged{src.model_path, {}, src.file.metadata};
  std::set<std::string> taken;
  for (auto& [name, t] : src.file.tensors) {
    const bool gate_tensor = !ungated.count(name);
    std::string target = params.count(name) ? name : name_under_kind(name, before, params);
    const std::string found = target.empty() ? "not in this model" : "is " + shape_text(params.at(target)->shape());
    if (!target.empty() && params.at(target)->shape() == t.shape()) {
      // in place
    } else if (gate_tensor) {
      throw ConfigError(gates_where + ": the checkpoint's gate tensor '" + printable_name(name) + "' " +
                        shape_text(t.shape()) + " is " + found + " here: " + kKey +
                        " keeps the checkpoint's gates as they are, with their options");
    } else {
      mismatch("its tensor '" + name + "' " + shape_text(t.shape()) + (target.empty() ? " is " : ", this model's ") +
               found);
    }
    if (target != name) out.renamed.push_back(name + " -> " + target);
    taken.insert(target);
    merged.tensors.emplace_back(target, t);
  }
  // The rest are the added gates' parameters: keep their initial values.
  const std::map<std::string, Shape> ungated_now = ungated_parameters(model.config());
  for (auto& [name, p] : named) {
    if (taken.count(name)) continue;
    if (ungated_now.count(name)) mismatch("it has no tensor '" + name + "', which this model has");
    out.new_parameters.push_back(name + " " + shape_text(p.shape()));
    merged.tensors.emplace_back(name, p.clone());
  }
  // Each gate the checkpoint's blocks do not have starts with no effect.
  for (const models::GateConfig& g : now.gate_entries()) {
    const std::int64_t blocks = now.site_layers(g.site);
    for (std::int64_t l = 0; l < blocks; ++l) {
      if (!g.applies_to(l)) continue;
      bool had = false;
      for (const models::GateConfig& old : before.layer_gates(l, g.site)) had = had || old.kind == g.kind;
      if (had || models::GateOptions::of(g).ramp_at(0) == 0.0) continue;
      throw ConfigError(where_entry(cfg, g) + ": " + g.where + ": " + kKey + " adds a '" + g.kind + "' gate to block " +
                        std::to_string(l) +
                        " of a trained model; give it a ramp (ramp_steps >= 1, or ramp_start >= 1) so that it "
                        "starts with no effect and step 0 computes the checkpoint's function");
    }
  }
  load_module(merged, model);
  out.tensors = static_cast<std::int64_t>(src.file.tensors.size());
  return out;
}

}  // namespace gattn::recipes
