// A checkpoint's model resized to a longer context: a new GPT of the longer block with the trained
// weights copied over (rope and none have no tensor whose shape depends on the block).
#include "recipes/common/context_model.h"

#include <algorithm>

#include "framework/runtime/memory_budget.h"
#include "recipes/ablate/ablation.h"

namespace gattn::recipes {

std::int64_t rows_at_context(std::int64_t batch_size, std::int64_t block_size, std::int64_t context) {
  return std::max<std::int64_t>(1, batch_size * block_size / std::max<std::int64_t>(context, 1));
}

void fit_model_to_context(CheckpointModel& ckpt, std::int64_t context, std::int64_t rows, const std::string& flag) {
  const models::ModelConfig& mc = ckpt.model->config();
  if (context <= 0) throw UsageError(flag + " must be > 0, got " + std::to_string(context));
  if (context > mc.block_size && mc.learned_positions())
    throw UsageError(flag + " " + std::to_string(context) +
                     ": beyond model.block_size=" + std::to_string(mc.block_size) +
                     ", the length of the learned position table (model.position learned); a rope or none model "
                     "runs at any length");
  // The weights, and per window row the logits (f32, and a host f32 copy for the per-position loss
  // where they are not f32 on the host) beside the widest activations a layer of the no-grad forward
  // holds at once.
  const double V = static_cast<double>(mc.vocab_size), C = static_cast<double>(mc.n_embd);
  const double bytes = 4.0 * static_cast<double>(ckpt.model->num_parameters()) +
                       static_cast<double>(rows) * static_cast<double>(context) * (12.0 * V + 64.0 * C);
  const std::string shortfall =
      memory_shortfall(bytes, std::to_string(rows) + " window(s) of " + std::to_string(context) + " tokens");
  if (!shortfall.empty()) throw UsageError(flag + " " + std::to_string(context) + ": " + shortfall);
  if (context <= mc.block_size) return;
  models::ModelConfig longer = mc;
  longer.block_size = context;
  auto resized = std::make_unique<models::GPT>(longer, static_cast<std::uint64_t>(ckpt.config.get_int("seed")));
  for (auto& [name, p] : resized->named_parameters()) p.copy_from(ckpt.model->parameter(name));
  resized->set_step(ckpt.model->step());
  ckpt.model = std::move(resized);
}

}  // namespace gattn::recipes
