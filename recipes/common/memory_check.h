// Sizes that cannot fit in memory (model.block_size 1e9, model.n_embd 2e6, a batch of a million
// windows) are refused before anything is allocated, naming the setting that makes them large,
// instead of ending in "internal error: std::bad_alloc". The estimates count only memory that is
// certainly allocated (a lower bound), so a setting that fits is never refused.
#pragma once
#include <string>

#include "core/tensor/tensor.h"
#include "recipes/common/run_config.h"

namespace gattn::recipes {

enum class ModelUse {
  train,     // weights, gradients, AdamW moments and one micro-batch's activations
  inference  // weights and one batch of logits (eval, sample, inspect)
};

// Throws ConfigError "<file:line>: <key> <value>: needs about …" when the model of `cfg`, used
// as `use` on `device`, cannot fit the memory this process may use (framework/runtime/memory_budget.h).
// A model.vocab_size of 0 (taken from the data later) counts as 1.
void check_model_memory(const Config& cfg, ModelUse use, Device device);

}  // namespace gattn::recipes
