// `gattn train --config FILE [key.path=value ...] [--resume auto|DIR] [--stop-after N]`: trains a
// gated GPT from a YAML config (recipes/train/trainer.h has the loop). docs/cli.md has the command
// and its exit codes, docs/run-directory.md what a run writes.
#include <memory>
#include <string>

#include "framework/dist/communicator.h"
#include "recipes/common/recipe.h"
#include "recipes/train/trainer.h"

namespace gattn::recipes {

namespace {

// A successful run ends MPI together; an error leaves without it (the exception reaches main,
// which exits non-zero, and mpirun / srun then stop the other ranks).
int run_train(const TrainArgs& args) {
  const int rc = Trainer(args).run();
  dist::finalize_world();
  return rc;
}

}  // namespace

Action add_train(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "train a model from a YAML config");
  cmd->add_option("--config", args->config, "YAML config file")->required();
  cmd->add_option("overrides", args->overrides, "key.path=value overrides (value parsed as YAML)");
  cmd->add_option("--resume", args->resume,
                  "continue from a checkpoint: 'auto' (the run directory's latest; the newest complete one when "
                  "`latest` is lost; a fresh start when it has none) or a checkpoint directory");
  cmd->add_option("--stop-after", args->stop_after,
                  "stop as if interrupted once this many optimizer steps are done: checkpoint, exit 0")
      ->check([](const std::string& v) {
        std::size_t used = 0;
        try {
          if (std::stoll(v, &used) >= 1 && used == v.size()) return std::string();
        } catch (const std::exception&) {
        }
        std::string why = "must be a positive number of steps, got '";
        return why.append(v).append("'");
      });
  cmd->add_flag("--profile-ops", args->profile_ops,
                "time every op forward and backward (and the optimizer, clipping, data) after the first 5 steps; "
                "prints a table per step at the end and writes op_profile.json to the run directory");
  return [args] { return run_train(*args); };
}

}  // namespace gattn::recipes
