// Writing and publishing a training run's checkpoints.
#include "recipes/common/run_checkpoints.h"

#include <map>
#include <string>

#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_text.h"
#include "framework/io/run_files.h"
#include "framework/io/train_state.h"

namespace gattn::recipes {

CheckpointWritten save_checkpoint_directory(const RunSetup& run, const OptimizerSnapshot& optimizer,
                                            const std::vector<std::pair<std::string, double>>& lrs, TrainState state) {
  std::map<std::string, std::string> meta{{"format", kCheckpointFormat}, {"config", run.config.to_json().dump()}};
  if (!run.data->vocab_json().empty()) meta["vocab"] = run.data->vocab_json();
  if (auto tokenizer = run.data->tokenizer()) add_tokenizer_metadata(meta, *tokenizer);
  state.config = run.config.to_json();
  state.config_hash = config_hash(state.config);
  state.lr.clear();
  if (state.step > 0)
    for (const auto& [group, lr] : lrs) state.lr[group] = lr;
  return write_checkpoint_directory(run.dir, *run.model, optimizer, meta, state);
}

void publish_checkpoint(const RunSetup& run, std::int64_t step) {
  gattn::publish_checkpoint(run.dir, step);
  prune_checkpoints(run.dir, step, run.config.get_int("checkpoint.keep_last"),
                    run.config.get_int("checkpoint.keep_every"));
}

}  // namespace gattn::recipes
