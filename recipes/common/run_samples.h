// What the end of a run prints of its model: a text sample, or an encoder–decoder's first val
// source decoded.
#pragma once
#include <cstdint>
#include <string>

#include "framework/data/dataset.h"
#include "models/gpt.h"
#include "recipes/common/run_config.h"

namespace gattn::recipes {

// `n` characters sampled from the model with the KV cache (temperature 0.8, seed from the config),
// starting from a newline when the vocabulary has one. Text data only ("" otherwise).
std::string sample_text(models::GPT& model, const Dataset& data, const Config& cfg, std::int64_t n);

// Encoder–decoder models: the first validation source decoded greedily (models::generate_target),
// as "SOURCE → OUTPUT (expected TARGET)": text where the data has a codec, else space-separated ids.
std::string sample_target(models::GPT& model, const Dataset& data);

}  // namespace gattn::recipes
