// Resume: every check runs on the files read into memory before the model or optimizer change.
#include "recipes/resume.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "framework/io/checkpoint.h"
#include "framework/io/errors.h"
#include "framework/io/module_io.h"
#include "framework/io/optimizer_io.h"

namespace gattn::recipes {

namespace {

namespace fs = std::filesystem;

// A text run's token ids mean bytes through the vocabulary: continuing with a file whose byte set
// differs would silently retrain the embeddings on other characters.
void check_vocab(const SafetensorsFile& model, const Dataset& data) {
  auto it = model.metadata.find("vocab");
  if (it == model.metadata.end() || data.vocab_json().empty()) return;
  const nlohmann::json saved = nlohmann::json::parse(it->second, nullptr, false);
  const nlohmann::json now = nlohmann::json::parse(data.vocab_json(), nullptr, false);
  if (saved != now)
    throw CheckpointError("checkpoint file '" + model.path +
                          "': its vocabulary differs from the data's (data.path names another text?)");
}

// A shell word for `s`: as is when it is plain, else single-quoted.
std::string shell_quote(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                       "0123456789_./=:,+-@%") == std::string::npos;
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string resume_command(const std::string& config, const std::vector<std::string>& overrides) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::string cmd = shell_quote(ec ? std::string("gattn") : exe.string());
  cmd += " train --config ";
  cmd += shell_quote(config);
  for (const std::string& o : overrides) cmd.append(" ").append(shell_quote(o));
  return cmd + " --resume auto";
}

std::optional<Resumed> resume_run(const std::string& resume, RunSetup& run,
                                  const std::function<void(const OptimizerSnapshot&)>& restore_optimizer) {
  std::string dir = resume;
  if (resume == "auto") {
    dir = latest_checkpoint(run.dir);
    if (dir.empty()) return std::nullopt;
  } else if (!fs::exists(dir)) {
    throw CheckpointError("--resume: checkpoint directory '" + dir + "' does not exist");
  }
  CheckpointFiles files = read_checkpoint(dir);
  const std::string state_path = (fs::path(dir) / kStateFile).string();
  const nlohmann::json now = run.config.to_json();
  check_resume_config(files.state, now, state_path);
  for (const char* name : {kDataRng, kModelNoiseRng})
    if (!files.state.rng.count(name))
      throw CheckpointError("checkpoint file '" + state_path + "': field 'rng." + name + "' is missing");
  check_vocab(files.model, *run.data);

  // Both files are validated whole before anything changes: the optimizer's here, the model's by
  // load_module before it copies. Should either refuse, the run is abandoned (exit 3) with nothing
  // on disk changed yet.
  const OptimizerSnapshot optimizer_state = read_optimizer(files.optimizer, run.model->named_parameters());
  load_module(files.model, *run.model);
  restore_optimizer(optimizer_state);
  run.model->noise_generator().set_state(files.state.rng.at(kModelNoiseRng));

  Resumed out;
  out.dir = dir;
  out.state = std::move(files.state);
  out.config_changes = config_differences(out.state.config, now);
  return out;
}

}  // namespace gattn::recipes
