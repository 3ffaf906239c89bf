// `gattn eval --checkpoint DIR [key.path=value ...]`: the val loss of a checkpoint over the eval
// windows of docs/config.md, printed as one JSON line {"loss":…, "tokens":…} (plus "accuracy" for
// synthetic tasks, exact match for seq2seq data, cross_attn_entropy and encoder_attn_entropy for an
// encoder–decoder and, for models with gates, val_gate_mean, val_gate_std and
// val_gate_mean_by_layer, as on a metrics.jsonl val line). The run's config comes from the
// checkpoint's metadata; overrides such as eval.max_windows=50 or data.path=… apply on top (a text
// with another vocabulary is refused). `--gate-int8` evaluates with the gate weights rounded to int8
// per output channel, and the line says what that saved (gate_bytes_f32, gate_bytes_int8, …).
//
// `--context N` evaluates windows of N tokens instead of the block size: any N for a rope or none
// model, at most the block size for learned positions. The line then carries "context_length" and
// "loss_by_position", the loss in log-spaced position buckets, so a model's length extrapolation
// shows position by position; the windows are evaluated as many at a time as keep a batch near
// train.batch_size windows of the block.
#include <iostream>
#include <nlohmann/json.hpp>

#include "recipes/common/checkpoint_model.h"
#include "recipes/common/context_model.h"
#include "recipes/common/evaluation.h"
#include "recipes/common/gate_int8.h"
#include "recipes/common/recipe.h"
#include "recipes/common/run_setup.h"
#include "recipes/common/vocabulary_match.h"

namespace gattn::recipes {

namespace {

struct EvalArgs {
  std::string checkpoint;
  std::vector<std::string> overrides;
  std::int64_t context = 0;
  bool context_given = false;
  bool gate_int8 = false;
};

int run_eval(const EvalArgs& args) {
  CheckpointModel ckpt = load_checkpoint_model(args.checkpoint, args.overrides, "eval");
  const Config& cfg = ckpt.config;
  const std::int64_t block = ckpt.model->config().block_size;
  const std::int64_t context = args.context_given ? args.context : block;
  std::int64_t rows = cfg.get_int("train.batch_size");
  if (args.context_given) {
    rows = rows_at_context(rows, block, context);
    fit_model_to_context(ckpt, context, rows, "eval --context");
  }
  std::unique_ptr<Dataset> data = make_dataset(data_options(cfg), context);
  check_same_vocabulary(ckpt.metadata, ckpt.model_path, *data);  // resume refuses the same change
  check_arch_fits_data(cfg, *data);                              // a data.task override may not fit the model
  models::GPT& model = *ckpt.model;
  const std::optional<models::GateQuantization> int8 = apply_gate_int8(args.gate_int8, model);
  EvalOptions options;
  options.context = context;
  options.by_position = !model.config().encoder_decoder();  // a decoder's positions are its own
  EvalResult e = evaluate(model, *data, cfg, rows, nullptr, options);
  nlohmann::json line = {{"tokens", e.tokens}};
  if (args.context_given) line["context_length"] = context;
  add_eval_fields(line, e);  // loss, accuracy and the val gate statistics: a val line's fields
  if (int8) add_gate_int8_fields(line, *int8);
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
  CLI::Option* context =
      cmd->add_option("--context", args->context,
                      "evaluate windows of N tokens (default: model.block_size; beyond it only for model.position "
                      "rope or none) and add the loss by position bucket");
  add_gate_int8_option(*cmd, args->gate_int8);
  cmd->add_option("overrides", args->overrides, "key.path=value overrides (e.g. eval.max_windows=50)");
  return [args, context] {
    args->context_given = context->count() > 0;
    return run_eval(*args);
  };
}

}  // namespace gattn::recipes
