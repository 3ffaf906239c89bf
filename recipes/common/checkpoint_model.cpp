// Loading a checkpoint's model and config for eval and sample.
#include "recipes/common/checkpoint_model.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "framework/config/errors.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_text.h"
#include "framework/io/checkpoint_verify.h"
#include "framework/io/errors.h"
#include "framework/io/module_io.h"
#include "framework/io/safetensors.h"
#include "framework/io/train_state.h"
#include "recipes/common/memory_check.h"
#include "recipes/common/run_setup.h"

namespace gattn::recipes {

namespace fs = std::filesystem;

fs::path checkpoint_directory(const std::string& dir, const std::string& who) {
  const fs::path p(dir);
  if (fs::exists(p / "model.safetensors")) return p;
  const std::string latest = fs::exists(p / "checkpoints") ? latest_checkpoint(dir) : "";
  if (!latest.empty()) return latest;
  throw CheckpointError(who + ": " + dir +
                        " is neither a checkpoint directory (no model.safetensors) nor a run directory with a "
                        "checkpoint (no checkpoints/latest)");
}

std::int64_t checkpoint_step(const std::filesystem::path& dir) {
  if (fs::exists(dir / kStateFile)) return read_train_state((dir / kStateFile).string()).step;
  return std::max<std::int64_t>(checkpoint_step_of(dir.filename().string()), 0);  // −1: not a step name
}

namespace {

// "model.n_layer=2 (the checkpoint has 4), …": the model.* keys whose value `now` changed from `stored`.
std::string changed_model_keys(const Config& stored, const Config& now) {
  std::string out;
  for (const config::KeySpec& s : now.schema().keys()) {
    if (s.key.rfind("model.", 0) != 0 || now.value(s.key) == stored.value(s.key)) continue;
    if (!out.empty()) out += ", ";
    out += s.key + "=" + now.value(s.key).dump() + " (the checkpoint has " + stored.value(s.key).dump() + ")";
  }
  return out;
}

}  // namespace

CheckpointModel load_checkpoint_model(const std::string& dir, const std::vector<std::string>& overrides,
                                      const std::string& who) {
  const fs::path checkpoint_dir = checkpoint_directory(dir, who);
  const std::string model_path = (checkpoint_dir / "model.safetensors").string();
  const SafetensorsFile file = load_safetensors(model_path);
  verify_checkpoint_file(file);
  auto config_it = file.metadata.find("config");
  if (config_it == file.metadata.end())
    throw CheckpointError(who + ": " + model_path + " has no 'config' metadata to rebuild the run from");
  // The metadata holds the resolved config as JSON, which is also valid YAML. It is read alone
  // first: a config that does not parse or validate is a damaged checkpoint (exit 3), while a bad
  // override stays the user's config error (exit 2).
  const std::string origin = model_path + " (config metadata)";
  try {
    if (Config::from_string(config_it->second, {}, origin).model_config().vocab_size <= 0)
      throw ConfigError(origin + ": model.vocab_size is not set");
  } catch (const Error& e) {  // ConfigError from parsing and validation, ValueError from the model's rules
    throw CheckpointError(who + ": " + model_path +
                          ": its 'config' metadata is not a valid gattn config (damaged?): " + e.what());
  }
  CheckpointModel out{model_path, Config::from_string(config_it->second, overrides, origin), nullptr, file.metadata,
                      nullptr};
  apply_thread_setting(out.config);
  check_model_memory(out.config, ModelUse::inference, Device::cpu);
  out.model =
      std::make_unique<models::GPT>(out.config.model_config(), static_cast<std::uint64_t>(out.config.get_int("seed")));
  try {
    load_module(file, *out.model);
  } catch (const CheckpointError& e) {
    // A tensor the model lacks or shapes otherwise: when an override changed the model, that is the
    // user's override (exit 2), not a damaged checkpoint.
    const std::string changed = changed_model_keys(Config::from_string(config_it->second, {}, origin), out.config);
    if (!changed.empty())
      throw ConfigError(who + ": " + changed + ": the checkpoint's model was trained otherwise, and an override " +
                        "cannot change the shape of a trained model (drop it) — " + e.what());
    throw;
  }
  out.model->set_step(checkpoint_step(checkpoint_dir));
  // Every token id of the vocabulary must be one the model embeds (verify_checkpoint_file checked its form).
  out.codec = text_codec_from_metadata(file.metadata, who + ": " + model_path);
  if (out.codec && out.codec->size() > out.model->config().vocab_size)
    throw CheckpointError(who + ": " + model_path + ": its " +
                          (file.metadata.count(kTokenizerKey)     ? "\"tokenizer\""
                           : file.metadata.count(kHfTokenizerKey) ? "\"hf_tokenizer\""
                                                                  : "\"vocab\"") +
                          " metadata has " + std::to_string(out.codec->size()) +
                          " tokens, more than the model's vocab_size " +
                          std::to_string(out.model->config().vocab_size) + " (damaged?)");
  return out;
}

}  // namespace gattn::recipes
