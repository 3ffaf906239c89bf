// An output directory that appears whole or not at all: its files are written into a hidden
// sibling (.NAME.partial-PID) and the sibling is renamed to NAME once the last file is written. A
// command that fails, or is killed, halfway leaves NAME as it was (absent, or the previous
// complete output when replacing), never a directory with some of the files.
//
// What may be replaced is decided by what is there, not by the flag alone: `--force` replaces an
// empty directory or an earlier output of the same command (recognised by its own file names), and
// nothing else, so a mistyped --out cannot delete a corpus, a run or a home directory. The output may
// not be, contain or lie inside one of the command's inputs either. The final rename does not
// replace without `replace`: an output that appeared while the command ran (another writer, a user)
// is kept and the command fails, so of concurrent writers exactly one wins.
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace gattn {

// The files a command writes into its output directory, to recognise an earlier output of it.
struct OutputDirectoryKind {
  std::string command;                           // "tokenize train", for messages
  std::vector<std::string> markers;              // present in every complete output
  std::function<bool(const std::string&)> owns;  // a file name the command writes
};

class StagedDirectory {
 public:
  // Refuses (OutputPathError, exit 2) a `final_path` that exists as anything but a directory; an
  // existing non-empty directory unless `replace` is set, and with `replace` one that is not an
  // earlier output of `kind`; and a `final_path` that is, contains or lies inside one of `inputs`
  // (option name, path). `what` names the option for messages ("tokenize train --out"). Removes the
  // staging directories of processes that died before they could (killed by SIGKILL, say).
  StagedDirectory(const std::string& final_path, bool replace, const std::string& what, OutputDirectoryKind kind = {},
                  const std::vector<std::pair<std::string, std::string>>& inputs = {});
  ~StagedDirectory();  // removes the staging directory unless committed
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  // Where the files go until commit().
  const std::filesystem::path& path() const { return staging_; }
  std::filesystem::path file(const std::string& name) const { return staging_ / name; }
  // Renames the staged directory to its final name. Without `replace` the rename never replaces
  // anything but an empty directory: an output that appeared meanwhile is an OutputPathError (exit
  // 2). With it, the previous output is swapped out and only its own files are removed. Other
  // refusals of the file system are a CheckpointError (exit 3).
  void commit();

 private:
  std::filesystem::path final_, staging_;
  bool replace_;
  std::string what_;
  OutputDirectoryKind kind_;
  int parent_fd_ = -1;  // the directory of both names: the renames are relative to it
  int signal_slot_ = -1;
  int lock_fd_ = -1;  // the staging directory, flock()ed: a live writer's staging is never swept
  bool committed_ = false;
};

// Removes the staging directories of this process (their files, then the directory) with
// async-signal-safe calls only: the exit-on-signal handler calls it before _exit, so a command
// stopped by SIGINT or SIGTERM leaves no .NAME.partial-PID behind.
void remove_staging_directories_on_signal() noexcept;

}  // namespace gattn
