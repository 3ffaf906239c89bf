// `gattn import --hf DIR --out CKPT [--block-size N]`: a Hugging Face model directory (config.json
// and safetensors weights) as a gattn checkpoint that eval, sample, inspect and bench generate take
// (docs/import.md: the classes, the name table, what is refused).
#include <iostream>

#include "recipes/common/recipe.h"
#include "recipes/import/hf_import.h"

namespace gattn::recipes {

namespace {

struct ImportArgs {
  std::string hf;
  std::string out;
  std::int64_t block_size = 0;
  bool no_tokenizer = false;
};

int run_import(const ImportArgs& args) {
  if (args.block_size < 0)
    throw ValueError("import --block-size must be > 0 (or left out: max_position_embeddings), got " +
                     std::to_string(args.block_size));
  ImportedModel imported = import_hf(args.hf, args.block_size, !args.no_tokenizer);
  write_imported_checkpoint(imported, args.out);
  const models::ModelConfig& c = imported.model->config();
  std::cout << "imported " << imported.hf.architecture << " (" << imported.hf.model_type << ") from " << args.hf << ": "
            << c.n_layer << " layers, " << c.n_head << " heads";
  if (c.kv_heads() != c.n_head) std::cout << " (" << c.kv_heads() << " key/value)";
  std::cout << " of width " << c.head_dim() << ", n_embd " << c.n_embd << ", vocab " << c.vocab_size << ", block size "
            << c.block_size << ", " << imported.model->num_parameters() << " parameters\n"
            << "checkpoint: " << args.out << "\n";
  if (imported.tokenizer)
    std::cout << "tokenizer: " << imported.tokenizer->kind() << ", " << imported.tokenizer->size() << " ids, sha256 "
              << imported.tokenizer->sha256().substr(0, 12) << "…\n";
  return 0;
}

}  // namespace

Action add_import(CLI::App& app) {
  auto args = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand("import", "convert a Hugging Face model directory into a gattn checkpoint");
  cmd->add_option("--hf", args->hf,
                  "the model directory: config.json and model.safetensors (or shards and their index)")
      ->required();
  cmd->add_option("--out", args->out, "the checkpoint directory to write (must not exist)")->required();
  cmd->add_option("--block-size", args->block_size,
                  "the model's context length, at most max_position_embeddings (default: that)");
  cmd->add_flag("--no-tokenizer", args->no_tokenizer,
                "leave the directory's tokenizer.json out of the checkpoint (sampling then takes token ids)");
  return [args] { return run_import(*args); };
}

}  // namespace gattn::recipes
