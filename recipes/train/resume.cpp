// Resume: every check runs on the files read into memory before the model or optimizer change.
#include "recipes/train/resume.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "framework/io/checkpoint.h"
#include "framework/io/errors.h"
#include "framework/io/module_io.h"
#include "framework/io/optimizer_io.h"
#include "framework/io/run_files.h"
#include "recipes/common/vocabulary_match.h"

namespace gattn::recipes {

namespace {

namespace fs = std::filesystem;

// `latest` is missing while step directories exist: it is written after the directory is renamed
// into place, so a crash in between (or a lost `latest`) leaves the newest complete directory as
// where the run stood. Directories that do not verify are skipped and named; when none verifies the
// run is refused naming each, never started over. `note` gets the line that says what was done.
CheckpointFiles newest_complete_checkpoint(const std::string& run_dir, const std::vector<std::string>& dirs,
                                           std::string& note) {
  const std::string latest = (fs::path(run_dir) / "checkpoints" / "latest").string();
  std::string skipped, newest_error;
  for (const std::string& dir : dirs) {
    try {
      CheckpointFiles files = read_checkpoint(dir);
      note = "--resume auto: " + latest + " is missing; resuming from the newest complete checkpoint, " +
             fs::path(dir).filename().string();
      if (!skipped.empty()) note += " (skipped, damaged: " + skipped + ")";
      return files;
    } catch (const CheckpointError& e) {
      skipped += (skipped.empty() ? "" : ", ") + fs::path(dir).filename().string();
      if (newest_error.empty()) newest_error = e.what();
    }
  }
  throw CheckpointError("--resume auto: " + latest + " is missing and none of the " + std::to_string(dirs.size()) +
                        " checkpoint directories (" + skipped + ") verifies; the newest: " + newest_error);
}

// A shell word for `s`: as is when it is plain, else single-quoted.
std::string shell_quote(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of(
                                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
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
  std::string dir = resume, note;
  std::optional<CheckpointFiles> found;
  if (resume == "auto") {
    dir = latest_checkpoint(run.dir);
    if (dir.empty()) {
      const std::vector<std::string> dirs = checkpoint_directories(run.dir);
      if (dirs.empty()) return std::nullopt;  // nothing to continue: a fresh start loses nothing
      found = newest_complete_checkpoint(run.dir, dirs, note);
      dir = found->dir;
    }
  } else if (!fs::exists(dir)) {
    throw CheckpointError("--resume: checkpoint directory '" + dir + "' does not exist");
  } else if (!fs::exists(fs::path(dir) / kStateFile) && holds_run(dir)) {
    // A run directory given where a checkpoint is wanted: say which to give instead.
    const std::string latest = latest_checkpoint(dir);
    throw CheckpointError("--resume: " + dir + " is a run directory, not a checkpoint; give one of its checkpoints (" +
                          (latest.empty() ? dir + "/checkpoints/step_N" : latest) +
                          "), or --resume auto with run.dir=" + dir);
  }
  CheckpointFiles files = found ? std::move(*found) : read_checkpoint(dir);
  const std::string state_path = (fs::path(dir) / kStateFile).string();
  const nlohmann::json now = run.config.to_json();
  check_resume_config(files.state, now, state_path, Config::defaults().to_json());
  for (const char* name : {kDataRng, kModelNoiseRng})
    if (!files.state.rng.count(name))
      throw CheckpointError("checkpoint file '" + state_path + "': field 'rng." + name + "' is missing");
  check_same_vocabulary(files.model.metadata, files.model.path, *run.data);

  // Both files are validated whole before anything changes: the optimizer's here, the model's by
  // load_module before it copies. Should either refuse, the run is abandoned (exit 3) with nothing
  // on disk changed yet.
  const OptimizerSnapshot optimizer_state = read_optimizer(files.optimizer, run.model->named_parameters());
  load_module(files.model, *run.model);
  restore_optimizer(optimizer_state);
  run.model->noise_generator().set_state(files.state.rng.at(kModelNoiseRng));

  Resumed out;
  out.dir = dir;
  out.note = note;
  out.state = std::move(files.state);
  out.config_changes = config_differences(out.state.config, now);
  return out;
}

}  // namespace gattn::recipes
