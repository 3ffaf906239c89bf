// gattn's model in transformers' terms, the inverse of hf_model.h: the class that computes it, its
// config.json and its tensors under transformers' names (docs/export.md has the classes, the name
// table and what is refused). `gattn export` (recipes/export/) writes them as a model directory.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"
#include "models/config.h"
#include "models/hf/hf_model.h"

namespace gattn::models {

// The class a model exports as, and where its layout differs from gattn's.
struct HfTarget {
  std::string architecture;  // "Qwen3NextForCausalLM"
  std::string model_type;    // "qwen3_next"
  HfFamily family = HfFamily::llama;
  ModelConfig config;           // the model exported
  bool attention_bias = false;  // q, k, v and o_proj biases (with the MLP's: Llama's attention_bias + mlp_bias)
  bool qkv_bias = false;        // q, k, v biases only (Qwen2)
  bool qk_norm = false;         // self_attn.q_norm / k_norm
  bool output_gate = false;     // q_proj holds [query | gate] per head
  bool gate_per_head = false;   // gattn's gate has one row per head: written d times into q_proj
  // The class's norms apply 1 + w (Qwen3-Next, Qwen3.5). Where gattn's model does not (model.norm_offset
  // false) the weights are written as w − 1, and the other way round as 1 + w.
  bool zero_centred_norms = false;
};

// The classes gattn exports to, each with what it needs of the model, for messages and the docs.
std::vector<std::string> hf_export_classes();

// The class that computes `config` exactly: `wanted` ("" for the first that does; an architecture
// like Qwen3_5ForCausalLM or a model_type like qwen3_5_text otherwise). Throws ValueError (exit 2),
// one line naming the key and why, for a model no class computes — another gate kind, a gate on
// some layers only or with options transformers has no math for, settings no class combines (learned
// positions with RMSNorm, partial rotary without the gate, biases on some layers only, …), an
// encoder–decoder — and for a `wanted` class that does not compute it; the line lists what exports.
HfTarget hf_export_target(const ModelConfig& config, const std::string& wanted = "");

// config.json for the target: transformers' keys for the class, float32 weights, no special tokens.
nlohmann::json hf_export_config(const HfTarget& target);

// gattn's parameters (f32, gattn's names: models/README.md) as the class's tensors, named and laid
// out as transformers saves them (f32; the tied head is not stored, as save_pretrained does). Throws
// ValueError when a parameter the target needs is missing or misshapen (a model that is not the
// target's config).
std::vector<std::pair<std::string, Tensor>> gattn_to_hf(const HfTarget& target,
                                                        const std::vector<std::pair<std::string, Tensor>>& params);

}  // namespace gattn::models
