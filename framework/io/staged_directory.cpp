// StagedDirectory: write beside, rename into place without replacing what is not ours.
#include "framework/io/staged_directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "framework/io/errors.h"

namespace gattn {

namespace fs = std::filesystem;

namespace {

// A hidden sibling of `final_path` (which has a file name): same file system, so rename is atomic.
std::string sibling_name(const fs::path& final_path, const std::string& tag, long pid) {
  std::string name = ".";  // built by appends: GCC 12 warns falsely (-Wrestrict) on "." + string
  name.append(final_path.filename().string()).append(".").append(tag).append("-").append(std::to_string(pid));
  return name;
}

// renameat2 without glibc's wrapper (older C libraries lack it). Returns 0 or errno.
int rename_with_flags(int dir_fd, const char* from, const char* to, unsigned flags) {
#ifdef SYS_renameat2
  if (::syscall(SYS_renameat2, dir_fd, from, dir_fd, to, flags) == 0) return 0;
  return errno;
#else
  (void)dir_fd, (void)from, (void)to, (void)flags;
  return ENOSYS;
#endif
}

// The file system (or kernel) has no renameat2 flags: NFS, some FUSE and overlay file systems.
bool unsupported(int err) { return err == EINVAL || err == ENOSYS || err == EOPNOTSUPP; }

// Renames a directory without replacing anything but an empty directory. RENAME_NOREPLACE where the
// file system has it; otherwise plain rename(2), which for a directory source replaces only an empty
// directory (ENOTEMPTY/EEXIST for a non-empty one, ENOTDIR for a file), atomically — so even the
// fallback never replaces data, it only may take the place of an empty directory that appeared.
int rename_no_replace(int dir_fd, const char* from, const char* to) {
  const int err = rename_with_flags(dir_fd, from, to, RENAME_NOREPLACE);
  if (err == 0) return 0;
  if (!unsupported(err) && err != EEXIST) return err;
  // EEXIST: an empty directory may be taken (the user made it for us); rename(2) checks that
  // atomically. Unsupported flags: the same rename(2).
  if (::renameat(dir_fd, from, dir_fd, to) == 0) return 0;
  return errno;
}

// Slots for the exit-on-signal handler: the parent directory (an open descriptor) and the name of
// each live staging directory of this process. Plain atomics and a char array: the handler may
// read them at any moment.
struct SignalSlot {
  std::atomic<int> parent_fd{-1};  // -1: free; -2: being filled
  char name[512] = {};
};
constexpr int kSignalSlots = 8;
SignalSlot g_slots[kSignalSlots];

int register_for_signal(int parent_fd, const std::string& name) {
  if (name.size() >= sizeof g_slots[0].name) return -1;
  for (int i = 0; i < kSignalSlots; ++i) {
    int expected = -1;
    if (!g_slots[i].parent_fd.compare_exchange_strong(expected, -2)) continue;
    std::memcpy(g_slots[i].name, name.c_str(), name.size() + 1);
    g_slots[i].parent_fd.store(parent_fd);
    return i;
  }
  return -1;  // more staging directories at once than slots: the start-up sweep removes the rest
}

void unregister_for_signal(int slot) {
  if (slot >= 0) g_slots[slot].parent_fd.store(-1);
}

// Removes directory `name` in `parent_fd` and the files in it, with async-signal-safe calls only
// (openat, getdents64, unlinkat, close). Staging directories hold files only.
void remove_flat_directory(int parent_fd, const char* name) noexcept {
  for (int attempt = 0; attempt < 3; ++attempt) {  // deleting while listing may skip entries
    const int dir = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0) return;
    alignas(8) char buf[4096];
    for (;;) {
      const long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
      if (n <= 0) break;
      for (long at = 0; at < n;) {
        // struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, char name[].
        unsigned short reclen;
        std::memcpy(&reclen, buf + at + 16, sizeof reclen);
        const char* entry = buf + at + 19;
        if (std::strcmp(entry, ".") != 0 && std::strcmp(entry, "..") != 0)
          if (::unlinkat(dir, entry, 0) != 0 && errno == EISDIR) ::unlinkat(dir, entry, AT_REMOVEDIR);
        at += reclen;
      }
    }
    ::close(dir);
    if (::unlinkat(parent_fd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return;
  }
}

// Whether `name` is a staging directory of `final_name` (".NAME.partial-PID"), and its PID.
bool staging_pid(const std::string& name, const std::string& prefix, long& pid) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  const std::string digits = name.substr(prefix.size());
  if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  pid = std::stol(digits);
  return pid > 0;
}

// Removes the staging directories of `final_path` left by processes that are gone (SIGKILL, a
// crash, a power cut). A directory is taken only when its PID names no process and no process holds
// its lock: the lock covers a live writer in another PID namespace (a container sharing the
// directory) or one whose PID was reused.
void sweep_dead_staging(const fs::path& final_path) {
  std::string prefix = sibling_name(final_path, "partial", 0);
  prefix.pop_back();  // ".NAME.partial-"
  const fs::path parent = final_path.parent_path().empty() ? fs::path(".") : final_path.parent_path();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    long pid = 0;
    const std::string name = entry.path().filename().string();
    if (!staging_pid(name, prefix, pid) || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    const int fd = ::open(entry.path().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (free) {
      std::error_code rm;
      fs::remove_all(entry.path(), rm);
    }
    ::close(fd);
  }
}

// `path` absolute with its existing directories resolved (it need not exist), to compare locations.
fs::path resolved(const fs::path& path) {
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  if (ec) abs = path;
  const fs::path r = fs::weakly_canonical(abs, ec);
  fs::path out = ec ? abs.lexically_normal() : r;
  if (!out.has_filename() && out.has_parent_path() && out != out.root_path()) out = out.parent_path();
  return out;
}

// Whether `inner` is `outer` or lies below it.
bool is_within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

// The entries of `dir` that are not `kind`'s regular files ("" names missing markers first).
std::vector<std::string> foreign_entries(const fs::path& dir, const OutputDirectoryKind& kind, std::error_code& ec) {
  std::vector<std::string> foreign;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::error_code st;
    if (!kind.owns || !kind.owns(name) || !fs::is_regular_file(fs::symlink_status(entry.path(), st)))
      foreign.push_back(name);
  }
  std::sort(foreign.begin(), foreign.end());
  return foreign;
}

bool has_markers(const fs::path& dir, const OutputDirectoryKind& kind) {
  if (kind.markers.empty()) return false;
  std::error_code ec;
  for (const auto& m : kind.markers)
    if (!fs::is_regular_file(fs::symlink_status(dir / m, ec))) return false;
  return true;
}

std::string listing(const std::vector<std::string>& names) {
  std::string list;
  for (std::size_t i = 0; i < names.size() && i < 3; ++i) list += (i ? ", " : "") + names[i];
  if (names.size() > 3) list += ", ... (" + std::to_string(names.size()) + " entries)";
  return list;
}

// Why `dir` (an existing directory) may not be replaced, or "" when it may: it is empty, or an
// earlier output of `kind` (its markers, and no file it does not write).
std::string why_not_replaceable(const fs::path& dir, const OutputDirectoryKind& kind) {
  std::error_code ec;
  const std::vector<std::string> foreign = foreign_entries(dir, kind, ec);
  if (ec) return "it cannot be listed (" + ec.message() + ")";
  if (fs::is_empty(dir, ec)) return "";
  if (foreign.empty() && has_markers(dir, kind)) return "";
  const std::string what = kind.command.empty() ? "an earlier output of this command" : "a " + kind.command + " output";
  if (!foreign.empty()) return "it holds files that are not " + what + " (" + listing(foreign) + ")";
  return "it is not " + what + " (" + listing(kind.markers) + " missing)";
}

// Removes `dir`'s files that `kind` writes, then `dir` if that empties it; anything else stays.
void remove_own_output(const fs::path& dir, const OutputDirectoryKind& kind) {
  std::error_code ec;
  std::vector<fs::path> own;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::error_code st;
    if (kind.owns && kind.owns(entry.path().filename().string()) &&
        fs::is_regular_file(fs::symlink_status(entry.path(), st)))
      own.push_back(entry.path());
  }
  for (const fs::path& f : own) fs::remove(f, ec);
  if (!fs::remove(dir, ec) && ec && fs::exists(dir))
    std::cerr << "gattn: warning: the previous output, moved to " << dir.string()
              << ", holds files that are not its own; they were kept there\n";
}

}  // namespace

StagedDirectory::StagedDirectory(const std::string& final_path, bool replace, const std::string& what,
                                 OutputDirectoryKind kind,
                                 const std::vector<std::pair<std::string, std::string>>& inputs)
    : final_(final_path), replace_(replace), what_(what), kind_(std::move(kind)) {
  if (final_path.empty()) throw OutputPathError(what + " is empty");
  if (!final_.has_filename()) final_ = final_.parent_path();  // "out/" names "out"
  if (final_.filename() == "." || final_.filename() == "..")
    throw OutputPathError(what + " " + final_path + " names a directory by '" + final_.filename().string() +
                          "'; give the output directory's own name");
  // Before anything else: an output over an input would be written into, or replace, the input.
  const fs::path out = resolved(final_);
  for (const auto& [option, input] : inputs) {
    if (input.empty()) continue;
    const fs::path in = resolved(input);
    std::string relation;
    if (in == out)
      relation = "is the " + option + " " + input;
    else if (is_within(in, out))
      relation = "contains the " + option + " " + input;
    else if (is_within(out, in))
      relation = "lies inside the " + option + " " + input;
    if (!relation.empty())
      throw OutputPathError(what + " " + final_path + " " + relation +
                            "; refusing to write over an input (choose an output directory apart from the inputs)");
  }
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(final_, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) throw OutputPathError(what + " " + final_.string() + " exists and is not a directory");
    if (!replace && !fs::is_empty(final_, ec))
      throw OutputPathError(what + " " + final_.string() + " already exists; remove it or pass --force to replace it");
    if (replace) {
      const std::string why = why_not_replaceable(final_, kind_);
      if (!why.empty())
        throw OutputPathError(
            what + " " + final_.string() + ": " + why + "; --force replaces only an empty directory or " +
            (kind_.command.empty() ? "an earlier output" : "an earlier " + kind_.command + " output") +
            ", so choose another directory");
    }
  }
  const fs::path parent = final_.parent_path().empty() ? fs::path(".") : final_.parent_path();
  fs::create_directories(parent, ec);
  sweep_dead_staging(final_);
  staging_ = parent / sibling_name(final_, "partial", ::getpid());
  if (final_.parent_path().empty()) staging_ = fs::path(sibling_name(final_, "partial", ::getpid()));
  fs::remove_all(staging_, ec);
  ec.clear();
  fs::create_directory(staging_, ec);
  if (ec) throw CheckpointError("cannot create " + staging_.string() + ": " + ec.message());
  // Held until the process ends: the start-up sweep of another process leaves a locked one alone.
  lock_fd_ = ::open(staging_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_fd_ >= 0) (void)::flock(lock_fd_, LOCK_EX | LOCK_NB);
  parent_fd_ = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd_ < 0) {
    const int e = errno;
    fs::remove_all(staging_, ec);
    if (lock_fd_ >= 0) ::close(lock_fd_);
    throw CheckpointError("cannot open " + parent.string() + ": " + std::strerror(e));
  }
  signal_slot_ = register_for_signal(parent_fd_, staging_.filename().string());
}

StagedDirectory::~StagedDirectory() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
  unregister_for_signal(signal_slot_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (parent_fd_ >= 0) ::close(parent_fd_);
}

void StagedDirectory::commit() {
  const std::string staged = staging_.filename().string(), name = final_.filename().string();
  // From here a signal leaves the staging directory to the next start-up's sweep: after the rename
  // below its name may hold the previous output, which the handler must not empty.
  unregister_for_signal(signal_slot_);
  signal_slot_ = -1;
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(final_, ec);
  if (replace_ && fs::is_directory(st)) {
    // What is there now, not what was there at start-up, decides.
    const std::string why = why_not_replaceable(final_, kind_);
    if (!why.empty())
      throw OutputPathError(what_ + " " + final_.string() + " changed while the command ran: " + why +
                            "; refusing to replace it (nothing was written)");
    // One atomic swap: --out is never missing, and the previous output then sits at the staging name.
    int err = rename_with_flags(parent_fd_, staged.c_str(), name.c_str(), RENAME_EXCHANGE);
    fs::path previous = staging_;
    if (unsupported(err)) {
      // No exchange: move the previous output aside, then the new one in; put it back on failure.
      previous = staging_.parent_path() / sibling_name(final_, "old", ::getpid());
      fs::remove_all(previous, ec);
      err = rename_no_replace(parent_fd_, name.c_str(), previous.filename().c_str());
      if (err != 0)
        throw CheckpointError("cannot move the previous " + final_.string() + " aside: " + std::strerror(err));
      err = rename_no_replace(parent_fd_, staged.c_str(), name.c_str());
      if (err != 0) {
        (void)rename_no_replace(parent_fd_, previous.filename().c_str(), name.c_str());
        throw CheckpointError("cannot rename " + staging_.string() + " to " + final_.string() + ": " +
                              std::strerror(err));
      }
    } else if (err != 0) {
      throw CheckpointError("cannot replace " + final_.string() + " by " + staging_.string() + ": " +
                            std::strerror(err));
    }
    committed_ = true;
    remove_own_output(previous, kind_);
    return;
  }
  const int err = rename_no_replace(parent_fd_, staged.c_str(), name.c_str());
  if (err == EEXIST || err == ENOTEMPTY || err == ENOTDIR || err == EISDIR)
    throw OutputPathError(what_ + " " + final_.string() +
                          " appeared while the command ran (another command writing the same output?); refusing to "
                          "replace it, nothing was written" +
                          (replace_ ? "" : " (pass --force to replace an earlier output)"));
  if (err != 0)
    throw CheckpointError("cannot rename " + staging_.string() + " to " + final_.string() + ": " + std::strerror(err));
  committed_ = true;
}

void remove_staging_directories_on_signal() noexcept {
  for (SignalSlot& slot : g_slots) {
    const int fd = slot.parent_fd.load();
    if (fd >= 0) remove_flat_directory(fd, slot.name);
  }
}

}  // namespace gattn
