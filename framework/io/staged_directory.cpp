// StagedDirectory: write beside, rename into place.
#include "framework/io/staged_directory.h"

#include <unistd.h>

#include "framework/io/errors.h"

namespace gattn {

namespace fs = std::filesystem;

namespace {

// A hidden sibling of `final_path` (which has a file name): same file system, so rename is atomic.
fs::path sibling(const fs::path& final_path, const std::string& tag) {
  std::string name = ".";  // built by appends: GCC 12 warns falsely (-Wrestrict) on "." + string
  name.append(final_path.filename().string()).append(".").append(tag).append("-").append(std::to_string(::getpid()));
  return final_path.parent_path() / name;
}

}  // namespace

StagedDirectory::StagedDirectory(const std::string& final_path, bool replace, const std::string& what)
    : final_(final_path) {
  if (final_path.empty()) throw OutputPathError(what + " is empty");
  if (!final_.has_filename()) final_ = final_.parent_path();  // "out/" names "out"
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(final_, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) throw OutputPathError(what + " " + final_.string() + " exists and is not a directory");
    if (!replace && !fs::is_empty(final_, ec))
      throw OutputPathError(what + " " + final_.string() + " already exists; remove it or pass --force to replace it");
  }
  staging_ = sibling(final_, "partial");
  fs::remove_all(staging_, ec);
  fs::create_directories(staging_, ec);
  if (ec) throw CheckpointError("cannot create " + staging_.string() + ": " + ec.message());
}

StagedDirectory::~StagedDirectory() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void StagedDirectory::commit() {
  std::error_code ec;
  fs::path old;
  if (fs::exists(fs::symlink_status(final_, ec))) {
    old = sibling(final_, "old");
    fs::remove_all(old, ec);
    fs::rename(final_, old, ec);
    if (ec) throw CheckpointError("cannot move the previous " + final_.string() + " aside: " + ec.message());
  }
  fs::rename(staging_, final_, ec);
  if (ec) {
    std::error_code restore;
    if (!old.empty()) fs::rename(old, final_, restore);
    throw CheckpointError("cannot rename " + staging_.string() + " to " + final_.string() + ": " + ec.message());
  }
  committed_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace gattn
