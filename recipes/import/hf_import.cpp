// A Hugging Face directory → a gattn model and its checkpoint directory.
#include "recipes/import/hf_import.h"

#include <filesystem>
#include <set>

#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_text.h"
#include "framework/io/errors.h"
#include "framework/io/hf_checkpoint.h"
#include "framework/io/module_io.h"
#include "framework/io/safetensors.h"
#include "framework/io/staged_directory.h"
#include "framework/text/tokenizer_directory.h"

namespace gattn::recipes {

namespace {

using nlohmann::json;

// Every parameter of gattn's model is filled and nothing else: the mapping (models/hf/) and the
// model's parameter names must agree.
void check_names(models::GPT& model, const std::vector<std::pair<std::string, Tensor>>& tensors,
                 const models::HfModel& hf) {
  std::set<std::string> mapped;
  for (const auto& [name, t] : tensors) mapped.insert(name);
  std::set<std::string> params;
  for (const auto& [name, t] : model.named_parameters()) {
    params.insert(name);
    if (!mapped.count(name))
      throw ValueError("import --hf: gattn's model for " + hf.architecture + " has parameter '" + name +
                       "', which no Hugging Face tensor fills (this build's model and the import's name table "
                       "disagree)");
  }
  for (const std::string& name : mapped)
    if (!params.count(name))
      throw ValueError("import --hf: the import fills '" + name + "', which gattn's model for " + hf.architecture +
                       " does not have (this build's model and the import's name table disagree)");
}

}  // namespace

ImportedModel import_hf(const std::string& dir, std::int64_t block_size_cap, bool with_tokenizer) {
  const HfDirectory files = open_hf_directory(dir);
  models::HfModel hf = models::hf_model_from_config(files.config, files.config_path, block_size_cap);
  const auto weights =
      read_hf_weights(files, [&hf](const std::string& name) { return models::hf_ignored_tensor(hf, name); });
  const auto tensors = models::hf_to_gattn(hf, dir, weights);

  // The model section as a checkpoint's metadata holds it (models::to_json), so Config builds exactly
  // this model and eval, sample and inspect rebuild it.
  Config config = Config::from_string(json{{"model", models::to_json(hf.config)}}.dump(), {},
                                      "the config imported from " + files.config_path);
  auto model = std::make_unique<models::GPT>(config.model_config(), static_cast<std::uint64_t>(config.get_int("seed")));
  check_names(*model, tensors, hf);
  SafetensorsFile file;
  file.path = dir;
  file.tensors = tensors;
  load_module(file, *model);
  model->eval();

  json origin = {{"from", "huggingface"}, {"architecture", hf.architecture}, {"model_type", hf.model_type}};
  if (auto v = files.config.find("transformers_version"); v != files.config.end() && v->is_string())
    origin["transformers_version"] = *v;
  std::map<std::string, std::string> metadata = {
      {"format", kCheckpointFormat}, {"config", config.to_json().dump()}, {kImportKey, origin.dump()}};
  std::shared_ptr<const Tokenizer> tokenizer;
  if (with_tokenizer && is_hf_tokenizer_directory(dir)) {
    try {
      tokenizer = load_tokenizer(dir);
    } catch (const ValueError& e) {
      throw ValueError(std::string("import --hf: ") + e.what() + " (--no-tokenizer imports the weights without it)");
    }
    if (tokenizer->size() > model->config().vocab_size)
      throw CheckpointError("import --hf: " + dir + "/tokenizer.json has " + std::to_string(tokenizer->size()) +
                            " token ids, more than config.json's vocab_size " +
                            std::to_string(model->config().vocab_size) + ": the files disagree");
    add_tokenizer_metadata(metadata, *tokenizer);
  }
  return ImportedModel{
      dir, std::move(hf), std::move(config), std::move(model), std::move(metadata), std::move(tokenizer)};
}

void write_imported_checkpoint(ImportedModel& imported, const std::string& out) {
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(out, ec)))
    throw OutputPathError("import --out " + out + " already exists; choose a new directory");
  const OutputDirectoryKind kind{"import", {kModelFile}, [](const std::string& name) { return name == kModelFile; }};
  StagedDirectory staged(out, false, "import --out", kind, {{"--hf", imported.source}});
  save_module(staged.file(kModelFile).string(), *imported.model, imported.metadata);
  staged.commit();
}

}  // namespace gattn::recipes
