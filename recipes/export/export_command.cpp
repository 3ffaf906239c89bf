// `gattn export --hf CKPT --out DIR [--class NAME]`: a gattn checkpoint as a Hugging Face model
// directory that transformers loads with AutoModelForCausalLM.from_pretrained, no remote code
// (docs/export.md: the classes, the name table, what is refused).
#include <iostream>

#include "recipes/common/recipe.h"
#include "recipes/export/hf_export.h"

namespace gattn::recipes {

namespace {

struct ExportArgs {
  std::string checkpoint;
  std::string out;
  std::string hf_class;
};

int run_export(const ExportArgs& args) {
  ExportedHfModel exported = export_hf(args.checkpoint, args.hf_class);
  write_hf_directory(exported, args.out);
  const models::ModelConfig& c = exported.target.config;
  std::cout << "exported " << args.checkpoint << " as " << exported.target.architecture << " ("
            << exported.target.model_type << "): " << c.n_layer << " layers, " << c.n_head << " heads";
  if (c.kv_heads() != c.n_head) std::cout << " (" << c.kv_heads() << " key/value)";
  std::cout << " of width " << c.head_dim() << ", hidden size " << c.n_embd << ", vocab " << c.vocab_size << ", "
            << exported.tensors.size() << " tensors\n"
            << "directory: " << args.out << "\n";
  return 0;
}

}  // namespace

Action add_export(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd =
      app.add_subcommand("export", "write a gattn checkpoint as a Hugging Face model directory (transformers)");
  cmd->add_option("--hf", args->checkpoint,
                  "the checkpoint to export: a checkpoint directory, or a run directory (its latest checkpoint)")
      ->required();
  cmd->add_option("--out", args->out, "the model directory to write (must not exist)")->required();
  cmd->add_option("--class", args->hf_class,
                  "the transformers class, e.g. Qwen3_5ForCausalLM or qwen3_5_text (default: the first that "
                  "computes the model)");
  return [args] { return run_export(*args); };
}

}  // namespace gattn::recipes
