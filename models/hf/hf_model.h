// What a Hugging Face model is in gattn's terms: its config.json as a ModelConfig, and its tensors
// as gattn's parameters (docs/import.md has the classes, the name table and what is refused). The
// files themselves are read by framework/io/hf_checkpoint.h; `gattn import` (recipes/import/) puts
// the two together and writes a checkpoint.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "framework/io/hf_checkpoint.h"
#include "models/config.h"

namespace gattn::models {

// The decoder families: GPT-2's (learned positions, LayerNorm, GELU, Conv1D weights), and Llama's,
// which Qwen2, Qwen3, Qwen3-Next and Qwen3.5 extend (rope, RMSNorm, SwiGLU, separate q/k/v).
enum class HfFamily { gpt2, llama };

struct HfModel {
  std::string architecture;  // "LlamaForCausalLM"
  std::string model_type;    // "llama"
  std::string config_path;   // for messages
  HfFamily family = HfFamily::llama;
  ModelConfig config;              // gattn's model: block_size already capped
  std::int64_t max_positions = 0;  // max_position_embeddings (n_positions for GPT-2)
  // Llama family: the Hugging Face layout, where it differs between the classes.
  bool attention_bias = false;  // q, k, v and o_proj biases (Llama, Qwen3)
  bool qkv_bias = false;        // q, k, v biases only (Qwen2)
  bool mlp_bias = false;        // gate, up and down biases (Llama)
  bool qk_norm = false;         // self_attn.q_norm / k_norm (Qwen3, Qwen3-Next, Qwen3.5)
  bool output_gate = false;     // q_proj holds [query | gate] per head (Qwen3-Next, Qwen3.5)
};

// The classes gattn imports, as "GPT2LMHeadModel (gpt2)", for messages and the docs.
std::vector<std::string> hf_supported_classes();

// config.json (its path for messages) as an HfModel; `block_size_cap` > 0 caps the block size that
// max_position_embeddings gives. Throws ValueError (exit 2) naming the file and the key for an
// architecture or model_type gattn does not import, a key whose math gattn's model does not have
// (rope scaling, sliding windows, linear-attention layers, mixture-of-experts MLPs, other
// activations, biases on only some layers, quantization), and a key of the wrong type or range.
HfModel hf_model_from_config(const nlohmann::json& config, const std::string& config_path,
                             std::int64_t block_size_cap = 0);

// Tensors the class's files may hold that its forward does not use and transformers ignores on
// load: GPT-2's causal-mask buffers (h.N.attn.bias, h.N.attn.masked_bias), rotary inv_freq buffers,
// Qwen3-Next's multi-token-prediction weights (mtp.*). They are skipped, not read.
bool hf_ignored_tensor(const HfModel& model, const std::string& name);

// The Hugging Face tensors as gattn's parameters (f32, gattn's names: models/README.md), in no
// particular order. Every tensor the class needs must be there with the shape config.json implies,
// and every tensor there must be used: a missing one, a wrong shape and a tensor the class does not
// have (say a bias the config says is absent) throw CheckpointError (exit 3) naming the file and the
// tensor; a tied head whose lm_head.weight differs from the embedding throws ValueError (exit 2)
// naming tie_word_embeddings.
std::vector<std::pair<std::string, Tensor>> hf_to_gattn(const HfModel& model, const std::string& dir,
                                                        const std::map<std::string, HfTensor>& weights);

}  // namespace gattn::models
