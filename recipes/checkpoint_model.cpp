// Loading a checkpoint's model and config for eval and sample.
#include "recipes/checkpoint_model.h"

#include <filesystem>

#include "framework/io/checkpoint.h"
#include "framework/io/errors.h"
#include "framework/io/module_io.h"
#include "framework/io/safetensors.h"
#include "recipes/memory_check.h"
#include "recipes/run_setup.h"

namespace gattn::recipes {

namespace fs = std::filesystem;

namespace {

// A checkpoint directory as given, or the one a run directory's checkpoints/latest names
// (latest_checkpoint refuses a damaged or dangling `latest`).
fs::path resolve_checkpoint(const std::string& dir, const std::string& who) {
  const fs::path p(dir);
  if (fs::exists(p / "model.safetensors")) return p;
  const std::string latest = fs::exists(p / "checkpoints") ? latest_checkpoint(dir) : "";
  if (!latest.empty()) return latest;
  throw CheckpointError(who + ": " + dir +
                        " is neither a checkpoint directory (no model.safetensors) nor a run directory with a "
                        "checkpoint (no checkpoints/latest)");
}

}  // namespace

CheckpointModel load_checkpoint_model(const std::string& dir, const std::vector<std::string>& overrides,
                                      const std::string& who) {
  const std::string model_path = (resolve_checkpoint(dir, who) / "model.safetensors").string();
  SafetensorsFile file = load_safetensors(model_path);
  auto config_it = file.metadata.find("config");
  if (config_it == file.metadata.end())
    throw CheckpointError(who + ": " + model_path + " has no 'config' metadata to rebuild the run from");
  // The metadata holds the resolved config as JSON, which is also valid YAML.
  CheckpointModel out{model_path, Config::from_string(config_it->second, overrides, model_path + " (config metadata)"),
                      nullptr, ""};
  apply_thread_setting(out.config);
  check_model_memory(out.config, ModelUse::inference, Device::cpu);
  out.model = std::make_unique<models::GPT>(out.config.model_config(), static_cast<std::uint64_t>(out.config.get_int("seed")));
  load_module(out.model_path, *out.model);
  auto vocab_it = file.metadata.find("vocab");
  if (vocab_it != file.metadata.end()) out.vocab_json = vocab_it->second;
  return out;
}

}  // namespace gattn::recipes
