// Atomic checkpoint directories, retention, and reading them back verified.
#include "framework/io/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "framework/base/input_file.h"
#include "framework/io/checkpoint_verify.h"
#include "framework/io/errors.h"
#include "framework/io/finite_check.h"
#include "framework/io/module_io.h"
#include "framework/io/optimizer_io.h"
#include "framework/io/run_files.h"
#include "ops/reduce.h"

namespace gattn {

namespace fs = std::filesystem;

std::string checkpoint_name(std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08lld", static_cast<long long>(step));
  return buf;
}

std::int64_t checkpoint_step_of(const std::string& name) {
  if (name.rfind("step_", 0) != 0 || name.size() < 13 || name.size() > 23) return -1;
  std::int64_t step = 0;
  for (std::size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

namespace {

// `latest` holds one checkpoint name ("step_00000600\n"): anything much longer is not one.
constexpr std::uint64_t kMaxLatestBytes = 4096;

// Directory entries must be fsynced through the directory itself for a rename to be durable.
void fsync_dir(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    (void)::fsync(fd);
    ::close(fd);
  }
}

// A checkpoint is the state a run can continue from: weights or moments holding NaN or Inf are not
// one, and writing them would push the last good checkpoint out of keep_last. Checked before the
// first byte is written.
void refuse_non_finite(nn::Module& model, const OptimizerSnapshot& optimizer, const std::string& name) {
  std::string bad;
  model.visit_parameters([&](const std::string& param, Tensor& p) {
    if (bad.empty() && !ops::all_finite(p)) bad = "parameter '" + param + "'";
  });
  for (std::size_t i = 0; i < optimizer.size() && bad.empty(); ++i) {
    if (!ops::all_finite(optimizer[i].exp_avg))
      bad = "optimizer moment '" + optimizer[i].name + ".exp_avg'";
    else if (!ops::all_finite(optimizer[i].exp_avg_sq))
      bad = "optimizer moment '" + optimizer[i].name + ".exp_avg_sq'";
  }
  if (!bad.empty())
    throw NumericalError("checkpoint " + name + " not written: " + bad +
                         " holds NaN or Inf (the earlier checkpoints and `latest` are untouched)");
}

void rename_or_throw(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) throw CheckpointError("cannot move " + from.string() + " to " + to.string() + ": " + ec.message());
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text) {
  // The rename would replace a symlink, FIFO or device node at `path` with a plain file: commands
  // refuse such outputs up front (run_files.h), and this is the last guard.
  const std::string kind = non_regular_kind(path);
  if (!kind.empty()) throw CheckpointError("cannot write " + path + ": it is " + kind + ", not a regular file");
  std::string tmp = path + ".tmp";
  // O_NOFOLLOW | O_NONBLOCK: a symlink or FIFO left at the temporary name fails the open instead of
  // redirecting the write or blocking; fstat then refuses anything but a regular file.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  struct stat st {};
  if (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    ::close(fd);
    throw CheckpointError("cannot write " + tmp + ": not a regular file");
  }
  std::FILE* f = fd >= 0 ? ::fdopen(fd, "wb") : nullptr;
  if (!f) {
    const int why = errno;
    if (fd >= 0) ::close(fd);
    throw CheckpointError("cannot write " + tmp + ": " + std::strerror(why));
  }
  // The first failing call's errno is the reason (ENOSPC, EIO, EDQUOT …).
  int why = 0;
  bool ok =
      std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  if (!ok) why = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    why = errno;
  }
  std::error_code ec;
  if (ok) fs::rename(tmp, path, ec);
  if (!ok || ec) {
    const std::string reason = ec ? ec.message() : std::strerror(why);
    fs::remove(tmp, ec);
    throw CheckpointError("cannot write " + path + ": " + reason);
  }
  fsync_dir(fs::path(path).parent_path());
}

CheckpointWritten write_checkpoint_directory(const std::string& run_dir, nn::Module& model,
                                             const OptimizerSnapshot& optimizer,
                                             const std::map<std::string, std::string>& metadata,
                                             const TrainState& state) {
  const auto start = std::chrono::steady_clock::now();
  const fs::path root = fs::path(run_dir) / "checkpoints";
  const std::string name = checkpoint_name(state.step);
  refuse_non_finite(model, optimizer, name);
  const fs::path final_dir = root / name;
  const fs::path tmp_dir = root / (".tmp_" + name);
  const fs::path old_dir = root / (".old_" + name);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw CheckpointError("cannot create " + root.string() + ": " + ec.message());
  fs::remove_all(tmp_dir, ec);  // left by an attempt that died mid-write
  fs::create_directories(tmp_dir, ec);
  if (ec) throw CheckpointError("cannot create " + tmp_dir.string() + ": " + ec.message());

  // Every file is fsynced by its writer; state.json goes last, so a directory holding it is whole
  // even to a reader that ignores the rename protocol.
  std::map<std::string, std::string> model_metadata = metadata;
  model_metadata["format"] = kCheckpointFormat;  // what read_checkpoint requires
  save_module((tmp_dir / kModelFile).string(), model, model_metadata);
  save_optimizer((tmp_dir / kOptimizerFile).string(), optimizer);
  write_file_atomically((tmp_dir / kStateFile).string(), train_state_to_json(state).dump(2) + "\n");
  fsync_dir(tmp_dir);

  // Replacing a directory of the same step: move the old one aside first, so that some complete
  // checkpoint of this step exists at every moment (`latest` may name this step already).
  fs::remove_all(old_dir, ec);
  if (fs::exists(final_dir)) rename_or_throw(final_dir, old_dir);
  rename_or_throw(tmp_dir, final_dir);
  fsync_dir(root);
  fs::remove_all(old_dir, ec);

  CheckpointWritten out;
  out.dir = final_dir.string();
  for (const char* f : {kModelFile, kOptimizerFile, kStateFile}) {
    const std::uintmax_t size = fs::file_size(final_dir / f, ec);
    if (!ec) out.bytes += size;
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

void publish_checkpoint(const std::string& run_dir, std::int64_t step) {
  write_file_atomically((fs::path(run_dir) / "checkpoints" / "latest").string(), checkpoint_name(step) + "\n");
}

CheckpointWritten write_checkpoint(const std::string& run_dir, nn::Module& model, const optim::AdamW& optimizer,
                                   const std::map<std::string, std::string>& metadata, const TrainState& state) {
  const auto start = std::chrono::steady_clock::now();
  CheckpointWritten out = write_checkpoint_directory(run_dir, model, optimizer_snapshot(optimizer), metadata, state);
  publish_checkpoint(run_dir, state.step);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::vector<std::string> prune_checkpoints(const std::string& run_dir, std::int64_t newest_step, std::int64_t keep_last,
                                           std::int64_t keep_every) {
  std::vector<std::string> removed;
  const fs::path root = fs::path(run_dir) / "checkpoints";
  std::vector<std::int64_t> older;
  std::vector<fs::path> stale;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    const std::int64_t step = checkpoint_step_of(name);
    if (step >= 0 && step < newest_step && entry.is_directory(ec)) older.push_back(step);
    // Temporaries of an attempt that was killed mid-write: with a complete write just done, no
    // writer owns them any more.
    if (name.rfind(".tmp_", 0) == 0 || name.rfind(".old_", 0) == 0 || name == "latest.tmp")
      stale.push_back(entry.path());
  }
  if (ec) throw CheckpointError("cannot list " + root.string() + ": " + ec.message());
  for (const fs::path& p : stale) fs::remove_all(p, ec);
  if (keep_last <= 0) return removed;
  std::sort(older.rbegin(), older.rend());  // newest first
  for (std::size_t i = 0; i < older.size(); ++i) {
    const bool recent = static_cast<std::int64_t>(i) < keep_last - 1;
    const bool milestone = keep_every > 0 && older[i] % keep_every == 0;
    if (recent || milestone) continue;
    const std::string name = checkpoint_name(older[i]);
    fs::remove_all(root / name, ec);
    if (ec) throw CheckpointError("cannot remove the old checkpoint " + (root / name).string() + ": " + ec.message());
    removed.push_back(name);
  }
  return removed;
}

std::string latest_checkpoint(const std::string& run_dir) {
  const fs::path root = fs::path(run_dir) / "checkpoints";
  const fs::path latest = root / "latest";
  std::error_code ec;
  // symlink_status: a dangling symlink is a damaged `latest`, not a missing one.
  if (!fs::exists(fs::symlink_status(latest, ec))) return "";
  // Read as an input file: a FIFO or /dev/zero planted as `latest` is refused, not read forever.
  std::istringstream in(read_input_file<CheckpointError>(latest.string(), "the checkpoint pointer", kMaxLatestBytes));
  std::string name;
  if (!std::getline(in, name))
    throw CheckpointError("checkpoint file '" + latest.string() + "': cannot be read (empty or unreadable)");
  // publish_checkpoint writes the name and one newline: anything after them is damage, and a
  // damaged `latest` is not trusted to name the right checkpoint.
  std::string rest;
  if (std::getline(in, rest, '\0'))
    throw CheckpointError("checkpoint file '" + latest.string() + "': holds more than a checkpoint name (" +
                          printable_name(name + "\n" + rest, 40) + "; damaged?)");
  if (checkpoint_step_of(name) < 0)
    throw CheckpointError("checkpoint file '" + latest.string() + "': holds '" + printable_name(name, 40) +
                          "', not a checkpoint name like step_00000600 (damaged?)");
  if (!fs::is_directory(root / name, ec))
    throw CheckpointError("checkpoint file '" + latest.string() + "': names " + name + ", which does not exist");
  return (root / name).string();
}

std::vector<std::string> checkpoint_directories(const std::string& run_dir) {
  const fs::path root = fs::path(run_dir) / "checkpoints";
  std::vector<std::pair<std::int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::int64_t step = checkpoint_step_of(entry.path().filename().string());
    if (step >= 0 && entry.is_directory(ec)) found.emplace_back(step, entry.path().string());
  }
  std::sort(found.rbegin(), found.rend());
  std::vector<std::string> out;
  for (auto& [step, dir] : found) out.push_back(std::move(dir));
  return out;
}

CheckpointFiles read_checkpoint(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw CheckpointError("checkpoint '" + dir + "' is not a directory");
  CheckpointFiles out;
  out.dir = dir;
  out.state = read_train_state((fs::path(dir) / kStateFile).string());
  out.model = load_safetensors((fs::path(dir) / kModelFile).string());
  verify_checkpoint_file(out.model);
  out.optimizer = load_safetensors((fs::path(dir) / kOptimizerFile).string());
  verify_checkpoint_file(out.optimizer);
  return out;
}

}  // namespace gattn
