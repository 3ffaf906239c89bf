// `gattn eval --checkpoint DIR [key.path=value ...]`: the val loss of a checkpoint over the eval
// windows of docs/config.md, printed as one JSON line {"loss":…, "tokens":…} (plus "accuracy" for
// synthetic tasks, exact match for seq2seq data, cross_attn_entropy and encoder_attn_entropy for an
// encoder–decoder and, for models with gates, val_gate_mean, val_gate_std and
// val_gate_mean_by_layer, as on a metrics.jsonl val line). The run's config comes from the
// checkpoint's metadata; overrides such as eval.max_windows=50 or data.path=… apply on top (a text
// with another vocabulary is refused).
#include <iostream>
#include <nlohmann/json.hpp>

#include "recipes/common/checkpoint_model.h"
#include "recipes/common/evaluation.h"
#include "recipes/common/recipe.h"
#include "recipes/common/run_setup.h"
#include "recipes/common/vocabulary_match.h"

namespace gattn::recipes {

namespace {

struct EvalArgs {
  std::string checkpoint;
  std::vector<std::string> overrides;
};

int run_eval(const EvalArgs& args) {
  CheckpointModel ckpt = load_checkpoint_model(args.checkpoint, args.overrides, "eval");
  const Config& cfg = ckpt.config;
  std::unique_ptr<Dataset> data = make_dataset(data_options(cfg), ckpt.model->config().block_size);
  check_same_vocabulary(ckpt.metadata, ckpt.model_path, *data);  // resume refuses the same change
  check_arch_fits_data(cfg, *data);                              // a data.task override may not fit the model
  models::GPT& model = *ckpt.model;
  EvalResult e = evaluate(model, *data, cfg, cfg.get_int("train.batch_size"));
  nlohmann::json line = {{"tokens", e.tokens}};
  add_eval_fields(line, e);  // loss, accuracy and the val gate statistics: a val line's fields
  std::cout << line.dump() << "\n";
  return 0;
}

}  // namespace

Action add_eval(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "print a checkpoint's validation loss as one JSON line");
  cmd->add_option("--checkpoint", args->checkpoint,
                  "checkpoint directory (holds model.safetensors), or a run directory for its latest checkpoint")
      ->required();
  cmd->add_option("overrides", args->overrides, "key.path=value overrides (e.g. eval.max_windows=50)");
  return [args] { return run_eval(*args); };
}

}  // namespace gattn::recipes
