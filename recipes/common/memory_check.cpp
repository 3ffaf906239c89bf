// The estimate: f32 parameters of the embeddings and blocks (an encoder–decoder's encoder and
// cross-attention too; gates and LayerNorms left out), and the logits plus a few C-wide activations
// per layer of one micro-batch.
#include "recipes/common/memory_check.h"

#include <algorithm>
#include <vector>

#include "framework/config/schema.h"
#include "framework/runtime/memory_budget.h"

namespace gattn::recipes {

namespace {

// One part of the estimate and the settings that make it large, the likeliest culprit first.
struct Term {
  double bytes;
  std::string what;
  std::vector<std::string> keys;
};

}  // namespace

void check_model_memory(const Config& cfg, ModelUse use, Device device) {
  const models::ModelConfig mc = cfg.model_config();
  const double V = static_cast<double>(std::max<std::int64_t>(mc.vocab_size, 1));
  const double T = static_cast<double>(mc.block_size), L = static_cast<double>(mc.n_layer);
  const double C = static_cast<double>(mc.n_embd), B = static_cast<double>(cfg.get_int("train.batch_size"));
  // The model is built on the host before it moves to a GPU; on the CPU, training adds the
  // gradient and AdamW's two moments per parameter, and the activations live beside them.
  const bool host_trains = use == ModelUse::train && device == Device::cpu;
  const double per_param = host_trains ? 16.0 : 4.0;
  std::vector<Term> terms = {
      {per_param * V * C, "the token embedding, model.vocab_size x model.n_embd", {"model.vocab_size", "model.n_embd"}},
      {mc.learned_positions() ? per_param * T * C : 0.0,  // rope and none have no table
       "the position embedding, model.block_size x model.n_embd",
       {"model.block_size", "model.n_embd"}},
      {per_param * L * 12.0 * C * C,
       "the blocks, model.n_layer x 12 x model.n_embd^2",
       {"model.n_embd", "model.n_layer"}},
  };
  // An encoder–decoder adds the encoder's blocks and a cross-attention (q, kv, proj: 4C²) per
  // decoder block, and on the CPU the encoder's activations.
  const double E = static_cast<double>(mc.encoder_layers());
  if (mc.encoder_decoder())
    terms.push_back({per_param * (E * 12.0 + L * 4.0) * C * C + (host_trains ? 4.0 * B * T * 8.0 * C * E : 0.0),
                     "the encoder and the cross-attention, (model.n_encoder_layer x 12 + model.n_layer x 4) x "
                     "model.n_embd^2",
                     {"model.n_encoder_layer", "model.n_embd", "model.n_layer"}});
  if (device == Device::cpu) {
    const double logits = 4.0 * B * T * V * (use == ModelUse::train ? 2.0 : 1.0);  // and their gradient
    const double layers = use == ModelUse::train ? 4.0 * B * T * 8.0 * C * L : 0.0;
    terms.push_back({logits + layers,
                     "one batch's activations, train.batch_size x model.block_size x (model.vocab_size + ...)",
                     {"train.batch_size", "model.block_size", "model.vocab_size"}});
  }
  double total = 0;
  const Term* largest = &terms.front();
  for (const Term& t : terms) {
    total += t.bytes;
    if (t.bytes > largest->bytes) largest = &t;
  }
  const std::string purpose = use == ModelUse::train ? "to train" : "to run";
  const std::string shortfall = memory_shortfall(total, "the model " + purpose + "; mostly " + largest->what);
  if (shortfall.empty()) return;
  // Name the key of that term that is furthest above its default: block_size 1e9 rather than
  // the batch size beside it.
  std::string key = largest->keys.front();
  double furthest = 0;
  for (const std::string& k : largest->keys) {
    const double ratio = cfg.get_double(k) / std::max(1.0, cfg.schema().find(k)->default_value.get<double>());
    if (ratio > furthest) {
      furthest = ratio;
      key = k;
    }
  }
  throw ConfigError(cfg.where(key) + ": " + key + " " + cfg.value(key).dump() + ": " + shortfall);
}

}  // namespace gattn::recipes
