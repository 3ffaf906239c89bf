// The attention block of a run as `gattn report` draws it: the base stages (norm, q/k/v, logits,
// softmax, mixing, projection, residual) with each configured gate placed where it acts, in the
// fixed order of application (docs/gates.md), all read from the gate registry.
#pragma once
#include <string>
#include <vector>

#include "models/config.h"

namespace gattn::recipes {

struct DiagramBox {
  bool gate = false;           // a configured gate (else a base stage of the attention)
  std::string title;           // a stage's text, or the gate's kind
  std::string detail;          // a gate's label: its layers and the options set off their defaults
  std::string acts_on;         // a gate's stage symbol ("h", "S", "y", …)
  std::string tooltip;         // a gate's math (its kind's summary)
  std::size_t kind_index = 0;  // the kind's place in the registry (its colour)
};

// One attention of the model: `site` self (the decoder's, or a decoder-only model's), cross or
// encoder. The first box is the residual stream's input and the last the residual sum; the gates
// at `site` sit between the stages, ordered by stage and then by the registry's order.
std::vector<DiagramBox> attention_diagram(const models::ModelConfig& model, const std::string& site);

// A gate's label: "layers 2–3, headwise", "all layers", "layer 1, multiplicative, query_key".
std::string gate_label(const models::GateConfig& gate);

// The attentions of the model worth a diagram, with their titles: the decoder-only block's
// attention, or an encoder–decoder's decoder self-attention, cross-attention and encoder attention.
std::vector<std::pair<std::string, std::string>> diagram_sites(const models::ModelConfig& model);

}  // namespace gattn::recipes
