// The models of the export tests: one per transformers class and gate form `gattn export` writes, and
// the settings it converts (a headwise gate, norms zero-centred on one side only), each small (2
// layers) with every parameter random — norm weights and biases too, so a swapped norm or bias
// cannot hide behind ones and zeros. tests/unit/test_hf_export.cpp round-trips all of them;
// gattn_make_export_checkpoints (tests/tools/make_export_checkpoints.cpp) writes the `golden` ones
// that tests/interop/make_hf_export_goldens.py runs through transformers (tests/data/hf_export/).
#pragma once
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor/random.h"
#include "framework/io/module_io.h"
#include "framework/io/safetensors.h"
#include "models/gating/registry.h"
#include "models/gpt.h"
#include "recipes/common/run_config.h"

namespace gattn::test {

struct ExportModel {
  std::string name;
  std::string hf_class;  // what `gattn export` writes (its default, or the --class given)
  bool golden;           // among the committed checkpoints with transformers' logits
  // Exported as it is: import gives back this config. Otherwise an equivalent one (a headwise gate
  // becomes the elementwise gate with equal rows; the norm form flips) computing the same function.
  bool exact;
  models::ModelConfig config;
};

// The gate transformers' Qwen3-Next and Qwen3.5 compute, as gattn's kind with the options that make it.
inline models::GateConfig qwen_output_gate(bool per_head) {
  return models::equivalent_gate(per_head ? "qwen3_next_output_gate_per_head" : "qwen3_next_output_gate");
}

inline std::vector<ExportModel> export_models() {
  models::ModelConfig base;
  base.vocab_size = 32;
  base.block_size = 16;
  base.n_layer = 2;
  base.n_head = 4;
  base.n_embd = 16;

  // Llama's family as import reads it: the key/value heads and head width always set.
  const auto llama_like = [&](std::int64_t kv_heads, std::int64_t head_dim, std::int64_t mlp_hidden) {
    models::ModelConfig c = base;
    c.position = models::kPositionRope;
    c.norm = models::kNormRms;
    c.norm_eps = 1e-6;
    c.mlp = models::kMlpSwiglu;
    c.mlp_hidden = mlp_hidden;
    c.n_kv_head = kv_heads;
    c.head_dim_size = head_dim;
    c.bias = false;
    c.tie_embeddings = false;
    return c;
  };
  std::vector<ExportModel> out;

  models::ModelConfig gpt2 = base;  // learned positions, LayerNorm, GELU, biases, tied
  gpt2.mlp_hidden = 48;             // n_inner
  out.push_back({"gpt2", "GPT2LMHeadModel", true, true, gpt2});
  models::ModelConfig gpt2_untied = base;
  gpt2_untied.n_embd = 32;
  gpt2_untied.tie_embeddings = false;
  gpt2_untied.norm_eps = 1e-6;
  out.push_back({"gpt2_untied", "GPT2LMHeadModel", false, true, gpt2_untied});

  models::ModelConfig llama = llama_like(2, 4, 24);  // grouped-query 4:2, every linear layer biased
  llama.bias = true;
  llama.rope_theta = 500000.0;
  llama.norm_eps = 1e-5;
  out.push_back({"llama", "LlamaForCausalLM", true, true, llama});
  models::ModelConfig llama_mqa = llama_like(1, 12, 40);  // one key/value head, heads wider than C/H, tied
  llama_mqa.n_embd = 32;
  llama_mqa.tie_embeddings = true;
  out.push_back({"llama_mqa", "LlamaForCausalLM", false, true, llama_mqa});

  models::ModelConfig qwen2 = llama_like(1, 4, 24);  // q, k, v biases
  qwen2.qkv_bias = true;
  qwen2.tie_embeddings = true;
  qwen2.rope_theta = 1000000.0;
  out.push_back({"qwen2", "Qwen2ForCausalLM", true, true, qwen2});

  models::ModelConfig qwen3 = llama_like(2, 8, 24);  // QK-norm, heads wider than C/H
  qwen3.qk_norm = models::kNormRms;
  qwen3.rope_theta = 1000000.0;
  out.push_back({"qwen3", "Qwen3ForCausalLM", true, true, qwen3});
  models::ModelConfig qwen3_offset = qwen3;  // zero-centred norms, written as 1 + w
  qwen3_offset.norm_offset = true;
  out.push_back({"qwen3_zero_centred", "Qwen3ForCausalLM", false, false, qwen3_offset});

  models::ModelConfig next = llama_like(2, 4, 24);  // the gate, zero-centred norms, partial rotary
  next.qk_norm = models::kNormRms;
  next.norm_offset = true;
  next.rope_fraction = 0.5;
  next.gate = qwen_output_gate(false);
  out.push_back({"qwen3_next", "Qwen3NextForCausalLM", true, true, next});
  models::ModelConfig headwise = next;  // one gate value per head, plain norms (configs/llama_bpe's G1)
  headwise.gate = qwen_output_gate(true);
  headwise.norm_offset = false;
  headwise.tie_embeddings = true;
  headwise.rope_fraction = 1.0;
  out.push_back({"qwen3_next_headwise", "Qwen3NextForCausalLM", true, false, headwise});

  models::ModelConfig qwen3_5 = llama_like(1, 8, 24);
  qwen3_5.qk_norm = models::kNormRms;
  qwen3_5.norm_offset = true;
  qwen3_5.rope_fraction = 0.5;
  qwen3_5.tie_embeddings = true;
  qwen3_5.gate = qwen_output_gate(false);
  out.push_back({"qwen3_5", "Qwen3_5ForCausalLM", true, true, qwen3_5});
  models::ModelConfig qwen3_5_plain = qwen3_5;  // the gate with plain norms, written as w − 1
  qwen3_5_plain.norm_offset = false;
  qwen3_5_plain.n_embd = 32;
  out.push_back({"qwen3_5_plain_norms", "Qwen3_5ForCausalLM", false, false, qwen3_5_plain});
  return out;
}

// Every parameter drawn from Philox (seed), in name order: norm weights around 1 (around 0 where
// applied as 1 + w), biases small, matrices 1/√fan_in, embeddings 0.25.
inline void randomize(models::GPT& model, std::uint64_t seed) {
  Generator gen(seed, 11);
  const bool zero_centred = model.config().norm_offset;
  for (auto& [name, p] : model.named_parameters()) {
    const auto ends_with = [&](const std::string& s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    const bool norm =
        ends_with("ln1.weight") || ends_with("ln2.weight") || ends_with("ln_f.weight") || ends_with("_norm.weight");
    Tensor noise = Tensor::empty(p.shape(), DType::f32);
    gen.normal_(noise, 0.0, 1.0);
    std::vector<double> v = noise.to_vector();
    const double fan_in = p.dim() == 2 ? static_cast<double>(p.size(1)) : 1.0;
    for (double& x : v) {
      if (norm)
        x = (zero_centred ? 0.0 : 1.0) + 0.2 * x;
      else if (ends_with(".bias"))
        x = 0.1 * x;
      else if (name == "wte.weight" || name == "wpe.weight")
        x = 0.25 * x;
      else
        x = x / std::sqrt(fan_in);
    }
    p.copy_from(Tensor::from(v, p.shape(), p.dtype()));
  }
}

// The checkpoint directory of `m` (model.safetensors with its run config, as training writes it):
// the config is the defaults with model.* from `m`, so it reads back exactly as import's does.
inline void write_export_checkpoint(const std::string& dir, const ExportModel& m, std::uint64_t seed = 1234) {
  const Config config = Config::from_string(nlohmann::json{{"model", models::to_json(m.config)}}.dump(), {},
                                            "the export test model " + m.name);
  models::GPT model(config.model_config(), 0);
  randomize(model, seed);
  std::filesystem::create_directories(dir);
  save_module((std::filesystem::path(dir) / "model.safetensors").string(), model,
              {{"format", kCheckpointFormat}, {"config", config.to_json().dump()}});
}

}  // namespace gattn::test
