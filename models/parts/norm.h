// The norm part of a block: model.norm picks LayerNorm (GPT-2) or RmsNorm (Llama, Qwen; with
// model.norm_offset the zero-centred form of Qwen3-Next), at model.norm_eps. Every norm of the model
// (ln1, ln2, ln_cross, ln_f, the encoder's) is made here, so the keys mean the same everywhere.
#pragma once
#include <memory>

#include "framework/nn/layers.h"
#include "models/config.h"

namespace gattn::models {

// A norm over the last axis of width `dim`.
std::shared_ptr<nn::Norm> make_norm(const ModelConfig& config, std::int64_t dim);

// The per-head q/k norm of model.qk_norm rmsnorm (over head_dim, weights shared by the heads, the
// model's eps and offset); null with qk_norm none.
std::shared_ptr<nn::Norm> make_qk_norm(const ModelConfig& config);

}  // namespace gattn::models
