// An output directory that appears whole or not at all: its files are written into a hidden
// sibling (.NAME.partial-PID) and the sibling is renamed to NAME once the last file is written. A
// command that fails, or is killed, halfway leaves NAME as it was (absent, or the previous
// complete output when replacing), never a directory with some of the files.
#pragma once
#include <filesystem>
#include <string>

namespace gattn {

class StagedDirectory {
 public:
  // Refuses (OutputPathError, exit 2) a `final_path` that exists as anything but a directory, and
  // an existing directory unless `replace` is set. `what` names the option for messages ("--out").
  StagedDirectory(const std::string& final_path, bool replace, const std::string& what);
  ~StagedDirectory();  // removes the staging directory unless committed
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  // Where the files go until commit().
  const std::filesystem::path& path() const { return staging_; }
  std::filesystem::path file(const std::string& name) const { return staging_ / name; }
  // Moves the staged directory to its final name (the previous one, when replacing, is moved aside
  // first and removed after). CheckpointError (exit 3) when the file system refuses.
  void commit();

 private:
  std::filesystem::path final_, staging_;
  bool committed_ = false;
};

}  // namespace gattn
