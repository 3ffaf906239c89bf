// The output-path checks every writer runs first.
#include "framework/io/run_files.h"

#include <algorithm>
#include <vector>

#include "framework/io/checkpoint.h"
#include "framework/io/errors.h"

namespace gattn {

namespace fs = std::filesystem;

namespace {

// The files gattn itself writes at the top of a run directory.
constexpr const char* kRunFiles[] = {"config.yaml", "metrics.jsonl", ".lock", "checkpoints"};

bool is_run_file_name(const std::string& name) {
  return std::find(std::begin(kRunFiles), std::end(kRunFiles), name) != std::end(kRunFiles);
}

// A training checkpoint directory: what write_checkpoint_directory leaves, wherever it was copied.
bool is_checkpoint_directory(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kStateFile, ec) && fs::is_regular_file(dir / kModelFile, ec);
}

// `path` with the directories above it resolved (it need not exist), for comparing locations.
fs::path resolved(const std::string& path) {
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec);
  if (ec) return fs::path(path);
  const fs::path parent = fs::weakly_canonical(abs.parent_path(), ec);
  return ec ? abs.lexically_normal() : parent / abs.filename();
}

}  // namespace

std::string non_regular_kind(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  switch (st.type()) {
    case fs::file_type::not_found:
    case fs::file_type::none:
    case fs::file_type::regular:
      return "";
    case fs::file_type::symlink:
      return "a symbolic link";
    case fs::file_type::directory:
      return "a directory";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

bool holds_run(const std::string& dir) {
  std::error_code ec;
  const fs::path d(dir);
  if (fs::exists(fs::symlink_status(d / ".lock", ec)) || fs::exists(fs::symlink_status(d / "metrics.jsonl", ec)))
    return true;
  if (!fs::is_directory(d / "checkpoints", ec)) return false;
  return fs::exists(fs::symlink_status(d / "checkpoints" / "latest", ec)) || !checkpoint_directories(dir).empty();
}

std::string run_file_of(const std::string& path) {
  const fs::path p = resolved(path);
  const fs::path parent = p.parent_path();
  if (is_run_file_name(p.filename().string()) && holds_run(parent.string()))
    return "the " + p.filename().string() + " of the run in " + parent.string();
  // The run first: it is what the user knows the path by.
  for (fs::path a = parent; !a.empty(); a = a.parent_path()) {
    if (a.filename() == "checkpoints" && holds_run(a.parent_path().string()))
      return "inside the checkpoints of the run in " + a.parent_path().string();
    if (a == a.parent_path()) break;
  }
  for (fs::path a = parent; !a.empty(); a = a.parent_path()) {
    if (is_checkpoint_directory(a)) return "inside the checkpoint directory " + a.string();
    if (a == a.parent_path()) break;
  }
  return "";
}

void check_output_file(const std::string& path, const std::string& what) {
  const std::string kind = non_regular_kind(path);
  if (!kind.empty())
    throw OutputPathError(what + ": " + path + " is " + kind +
                          ", not a regular file; refusing to replace it (give the path of a new or regular file)");
  const std::string owner = run_file_of(path);
  if (!owner.empty())
    throw OutputPathError(what + ": " + path + " is " + owner +
                          "; refusing to overwrite a run's files (choose another path)");
}

void check_run_directory(const std::string& dir, const std::string& what) {
  const std::string owner = run_file_of(dir);  // e.g. a folder inside another run's checkpoints/
  if (!owner.empty()) throw OutputPathError(what + ": " + dir + " is " + owner + "; choose a directory of its own");
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);  // a symlink to a directory is that directory
  if (!fs::exists(st)) return;                     // new: created when the run starts
  if (!fs::is_directory(st)) throw OutputPathError(what + ": " + dir + " exists and is not a directory");
  if (holds_run(dir)) {
    for (const fs::path& f : {fs::path("config.yaml"), fs::path("metrics.jsonl"), fs::path(".lock")}) {
      const std::string kind = non_regular_kind(fs::path(dir) / f);
      if (!kind.empty())
        throw OutputPathError(what + ": " + (fs::path(dir) / f).string() + " is " + kind +
                              ", not the regular file a gattn run writes there; refusing to write into " + dir);
    }
    // The checkpoint pointer is read before anything is written: a non-regular one is a damaged
    // checkpoint (exit 3), as every reader of it says, not a bad output path.
    const fs::path latest = fs::path(dir) / "checkpoints" / "latest";
    if (const std::string kind = non_regular_kind(latest); !kind.empty())
      throw CheckpointError("checkpoint pointer " + latest.string() + ": it is " + kind +
                            ", not the regular file a gattn run writes there (damaged?)");
    return;
  }
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) found.push_back(entry.path().filename().string());
  if (ec) throw CheckpointError(what + ": cannot list " + dir + ": " + ec.message());  // an I/O error: exit 3
  if (found.empty()) return;
  std::sort(found.begin(), found.end());
  std::string list;
  for (std::size_t i = 0; i < found.size() && i < 3; ++i) list += (i ? ", " : "") + found[i];
  if (found.size() > 3) list += ", ... (" + std::to_string(found.size()) + " entries)";
  throw OutputPathError(what + ": " + dir + " is not empty (" + list +
                        ") and holds no gattn run; refusing to write a run into it (choose a new or empty directory)");
}

}  // namespace gattn
