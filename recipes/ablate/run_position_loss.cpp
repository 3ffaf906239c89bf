// A run's latest checkpoint evaluated at one context, by position.
#include "recipes/ablate/run_position_loss.h"

#include "framework/data/dataset.h"
#include "recipes/common/context_model.h"
#include "recipes/common/evaluation.h"
#include "recipes/common/run_setup.h"

namespace gattn::recipes {

RunPositionLoss run_position_loss(CheckpointModel& ckpt, std::int64_t context) {
  RunPositionLoss out;
  try {
    const models::ModelConfig& mc = ckpt.model->config();
    if (mc.encoder_decoder()) {
      out.note = "an encoder–decoder: its decoder positions are its target's";
      return out;
    }
    const std::int64_t block = mc.block_size;
    out.context = context > 0 ? context : block;
    if (out.context > block && mc.learned_positions()) {
      out.note = "learned positions: evaluated at its block size " + std::to_string(block);
      out.context = block;
    }
    const std::int64_t rows = rows_at_context(ckpt.config.get_int("train.batch_size"), block, out.context);
    fit_model_to_context(ckpt, out.context, rows, "report --context");
    std::unique_ptr<Dataset> data = make_dataset(data_options(ckpt.config), out.context);
    EvalOptions options;
    options.context = out.context;
    options.by_position = true;
    out.buckets = evaluate(*ckpt.model, *data, ckpt.config, rows, nullptr, options).by_position;
  } catch (const std::exception& e) {
    out = RunPositionLoss{};
    out.note = e.what();
  }
  return out;
}

}  // namespace gattn::recipes
