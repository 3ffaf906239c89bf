// A gattn checkpoint → a Hugging Face model directory.
#include "recipes/export/hf_export.h"

#include <filesystem>

#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_text.h"
#include "framework/io/errors.h"
#include "framework/io/hf_checkpoint.h"
#include "framework/io/safetensors.h"
#include "framework/io/staged_directory.h"
#include "models/gating/options.h"
#include "recipes/common/checkpoint_model.h"
#include "recipes/import/hf_import.h"

namespace gattn::recipes {

ExportedHfModel export_hf_model(models::GPT& model, const std::string& wanted_class) {
  ExportedHfModel out;
  // Gates as inference computes them at the checkpoint's step: a ramp that is over is no ramp.
  models::ModelConfig config = model.config();
  config.gate = models::settled_gate(config.gate, model.step());
  for (models::GateConfig& g : config.gates) g = models::settled_gate(g, model.step());
  out.target = models::hf_export_target(config, wanted_class);
  out.tensors = models::gattn_to_hf(out.target, model.named_parameters());
  // Two-space indent, sorted keys and a final newline, as save_pretrained writes it.
  out.files[kHfConfigFile] = models::hf_export_config(out.target).dump(2) + "\n";
  return out;
}

namespace {

// The class a checkpoint `gattn import` wrote came from (its "import" metadata), where that class
// computes the model; "" otherwise.
std::string imported_class(const CheckpointModel& loaded) {
  const auto it = loaded.metadata.find(kImportKey);
  if (it == loaded.metadata.end()) return "";
  const nlohmann::json origin = nlohmann::json::parse(it->second, nullptr, false);
  if (!origin.is_object() || !origin.contains("architecture") || !origin["architecture"].is_string()) return "";
  const std::string architecture = origin["architecture"].get<std::string>();
  try {
    models::hf_export_target(loaded.model->config(), architecture);
  } catch (const ValueError&) {
    return "";
  }
  return architecture;
}

}  // namespace

ExportedHfModel export_hf(const std::string& checkpoint, const std::string& wanted_class) {
  CheckpointModel loaded = load_checkpoint_model(checkpoint, {}, "export --hf");
  // An imported checkpoint goes back to its own class unless another is asked for.
  ExportedHfModel out = export_hf_model(*loaded.model, wanted_class.empty() ? imported_class(loaded) : wanted_class);
  out.source = checkpoint;
  // The tokenizer's files as the checkpoint carries them (a Hugging Face tokenizer byte for byte, or
  // gattn's SentencePiece tokenizer.model), beside config.json and the weights.
  for (auto& [name, bytes] : tokenizer_files(loaded.metadata, "export --hf: " + loaded.model_path))
    out.files.emplace(name, std::move(bytes));
  return out;
}

void write_hf_directory(const ExportedHfModel& exported, const std::string& out) {
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(out, ec)))
    throw OutputPathError("export --out " + out + " already exists; choose a new directory");
  const auto owns = [&exported](const std::string& name) {
    return name == kHfWeightsFile || exported.files.count(name) > 0;
  };
  std::vector<std::pair<std::string, std::string>> inputs;
  if (!exported.source.empty()) inputs.emplace_back("--hf", exported.source);
  StagedDirectory staged(out, false, "export --out", {"export", {kHfConfigFile, kHfWeightsFile}, owns}, inputs);
  save_safetensors(staged.file(kHfWeightsFile).string(), exported.tensors, {{"format", "pt"}});
  for (const auto& [name, bytes] : exported.files) write_file_atomically(staged.file(name).string(), bytes);
  staged.commit();
}

}  // namespace gattn::recipes
