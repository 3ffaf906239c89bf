// `gattn eval --checkpoint DIR [key.path=value ...]`: the val loss of a checkpoint over the eval
// windows of SPEC §5, printed as one JSON line {"loss":…, "tokens":…} (plus "accuracy" for
// synthetic tasks). The run's config comes from the checkpoint's metadata; overrides such as
// eval.max_windows=50 or data.path=… apply on top.
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "framework/io/errors.h"
#include "framework/io/module_io.h"
#include "framework/io/safetensors.h"
#include "framework/runtime/threads.h"
#include "recipes/recipe.h"
#include "recipes/run_setup.h"

namespace gattn::recipes {

namespace {

struct EvalArgs {
  std::string checkpoint;
  std::vector<std::string> overrides;
};

int run_eval(const EvalArgs& args) {
  const std::string model_path = (std::filesystem::path(args.checkpoint) / "model.safetensors").string();
  if (!std::filesystem::exists(model_path)) throw CheckpointError("eval: " + model_path + " does not exist");
  SafetensorsFile file = load_safetensors(model_path);
  auto config_it = file.metadata.find("config");
  if (config_it == file.metadata.end())
    throw CheckpointError("eval: " + model_path + " has no 'config' metadata to rebuild the run from");
  // The metadata holds the resolved config as JSON, which is also valid YAML.
  Config cfg = Config::from_string(config_it->second, args.overrides, model_path + " (config metadata)");
  set_num_threads(static_cast<int>(cfg.get_int("train.threads")));
  models::ModelConfig mc = cfg.model_config();
  std::unique_ptr<Dataset> data = make_dataset(data_options(cfg), mc.block_size);
  models::GPT model(mc, static_cast<std::uint64_t>(cfg.get_int("seed")));
  load_module(model_path, model);
  EvalResult e = evaluate(model, *data, cfg, cfg.get_int("train.batch_size"));
  nlohmann::json line = {{"loss", e.loss}, {"tokens", e.tokens}};
  if (e.accuracy) line["accuracy"] = *e.accuracy;
  std::cout << line.dump() << "\n";
  return 0;
}

}  // namespace

Action add_eval(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "print a checkpoint's validation loss as one JSON line");
  cmd->add_option("--checkpoint", args->checkpoint, "checkpoint directory (holds model.safetensors)")->required();
  cmd->add_option("overrides", args->overrides, "key.path=value overrides (e.g. eval.max_windows=50)");
  return [args] { return run_eval(*args); };
}

}  // namespace gattn::recipes
