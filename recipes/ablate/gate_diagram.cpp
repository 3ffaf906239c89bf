// The attention block's diagram as boxes: the base stages, generic for every model, and between
// them the gates at each stage, placed and labelled from the registry (no kind is named here).
#include "recipes/ablate/gate_diagram.h"

#include <algorithm>

#include "models/gating/registry.h"
#include "recipes/ablate/svg.h"

namespace gattn::recipes {

namespace {

using models::GateStage;

std::string number_text(const nlohmann::json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number()) return report::format_number(v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string s;
    for (const nlohmann::json& item : v) s += (s.empty() ? "" : ", ") + number_text(item);
    return s;
  }
  return v.dump();
}

// "layer 1", "layers 2–3", "layers 0, 2–4": runs of consecutive blocks as ranges.
std::string layers_text(std::vector<std::int64_t> layers) {
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  if (layers.empty()) return "no layers";
  std::string s = layers.size() == 1 ? "layer " : "layers ";
  for (std::size_t i = 0; i < layers.size();) {
    std::size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    if (i > 0) s += ", ";
    s += std::to_string(layers[i]);
    if (j > i) s += "–" + std::to_string(layers[j]);
    i = j + 1;
  }
  return s;
}

// An option set off its default, in a few words: a choice by its value ("headwise"), a switch by
// its key ("hard", "no bias"), anything else as "key value" ("groups 2", "heads 0, 1").
std::string option_text(const std::string& key, const nlohmann::json& value) {
  if (value.is_boolean()) return value.get<bool>() ? key : "no " + key;
  if (value.is_string()) return value.get<std::string>();
  return key + " " + number_text(value);
}

DiagramBox stage(std::string title) {
  DiagramBox b;
  b.title = std::move(title);
  return b;
}

}  // namespace

std::string gate_label(const models::GateConfig& gate) {
  std::vector<std::string> parts{gate.all_layers ? std::string("all layers") : layers_text(gate.layers)};
  const models::GateKindSpec* kind = models::find_gate_kind(gate.kind);
  if (!kind) return parts[0];
  auto reads = [&](const char* key) {
    return std::find(kind->common_keys.begin(), kind->common_keys.end(), key) != kind->common_keys.end();
  };
  if (reads("activation") && gate.activation != models::GateConfig{}.activation) parts.push_back(gate.activation);
  if (reads("temperature") && gate.temperature != models::GateConfig{}.temperature)
    parts.push_back("τ " + report::format_number(gate.temperature));
  for (const models::GateOptionSpec& o : kind->options) {
    const nlohmann::json value = gate.option(o.key);
    if (value != o.default_value) parts.push_back(option_text(o.key, value));
  }
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

std::vector<std::pair<std::string, std::string>> diagram_sites(const models::ModelConfig& model) {
  if (!model.encoder_decoder()) return {{models::kSiteSelf, "attention block"}};
  return {{models::kSiteSelf, "decoder self-attention"},
          {models::kSiteCross, "decoder cross-attention"},
          {models::kSiteEncoder, "encoder self-attention"}};
}

std::vector<DiagramBox> attention_diagram(const models::ModelConfig& model, const std::string& site) {
  const bool cross = site == models::kSiteCross;
  const std::string norm = model.rms_norm() ? "RMSNorm" : "LayerNorm";
  const std::string attn = cross ? "cross" : "attn";
  // The gates at this site, each with its stage, ordered by stage, then the registry's order.
  struct Placed {
    GateStage stage;
    std::size_t kind_index;
    DiagramBox box;
  };
  std::vector<Placed> gates;
  const std::vector<const models::GateKindSpec*>& kinds = models::gate_kinds();
  for (std::size_t k = 0; k < kinds.size(); ++k)
    for (const models::GateConfig& g : model.gate_entries()) {
      if (g.kind != kinds[k]->name || g.site != site) continue;
      DiagramBox b;
      b.gate = true;
      b.title = g.kind;
      b.detail = gate_label(g);
      const GateStage at = models::gate_stage(*kinds[k], g);
      b.acts_on = models::gate_stage_symbol(at);
      b.tooltip = kinds[k]->summary;
      b.kind_index = k;
      gates.push_back({at, k, std::move(b)});
    }
  std::stable_sort(gates.begin(), gates.end(), [](const Placed& a, const Placed& b) {
    return a.stage != b.stage ? a.stage < b.stage : a.kind_index < b.kind_index;
  });
  std::vector<DiagramBox> boxes;
  auto gates_at = [&](GateStage s) {
    for (const Placed& p : gates)
      if (p.stage == s) boxes.push_back(p.box);
  };
  boxes.push_back(stage(cross ? "s: the decoder state (residual stream)" : "x: the block's input (residual stream)"));
  boxes.push_back(stage(norm + " " + (cross ? "ln_cross" : "ln1") + " → h"));
  gates_at(GateStage::h);
  boxes.push_back(stage(cross ? "q = cross.q(h); k, v = cross.kv(encoder output)" : "q, k, v = attn.qkv(h)"));
  gates_at(GateStage::qk);
  boxes.push_back(stage(site == models::kSiteSelf ? "S = q·kᵀ/√d, causal" : "S = q·kᵀ/√d"));
  gates_at(GateStage::scores);
  boxes.push_back(stage("P = softmax(S)"));
  gates_at(GateStage::probabilities);
  boxes.push_back(stage("y = P·v, heads merged"));
  gates_at(GateStage::y);
  boxes.push_back(stage(attn + ".proj(y)"));
  const std::size_t before = boxes.size();
  gates_at(GateStage::residual);
  const std::string stream = cross ? "s" : "x";
  // A gate on the residual stream mixes it with the attention's output instead of adding the two.
  boxes.push_back(stage(boxes.size() > before ? stream + " ← the gate's mix of " + stream + " and " + attn + ".proj(y)"
                                              : stream + " + " + attn + ".proj(y)"));
  return boxes;
}

}  // namespace gattn::recipes
