// Input files: a non-blocking open, then fstat decides before any read.
#include "framework/base/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>

namespace gattn {

namespace {

// Why a file of this mode is not an input, "" for a regular file.
std::string not_regular(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "it is a directory, not a regular file";
  if (S_ISFIFO(mode)) return "it is a FIFO (named pipe), not a regular file";
  if (S_ISCHR(mode)) return "it is a character device, not a regular file";
  if (S_ISBLK(mode)) return "it is a block device, not a regular file";
  if (S_ISSOCK(mode)) return "it is a socket, not a regular file";
  return "it is not a regular file";
}

// /dev/null reads as an empty file and is the usual way to say "no config, only overrides"
// (`gattn train --config /dev/null key=value ...`): the one device accepted.
bool is_dev_null(const struct stat& st) {
  struct stat null_st {};
  return S_ISCHR(st.st_mode) && ::stat("/dev/null", &null_st) == 0 && S_ISCHR(null_st.st_mode) &&
         st.st_rdev == null_st.st_rdev;
}

std::string errno_reason(int e) {
  if (e == ENOENT) return "it does not exist";
  if (e == ELOOP) return "too many levels of symbolic links (a symlink loop?)";
  return std::strerror(e);
}

}  // namespace

InputFile::InputFile(const std::string& path) {
  if (path.empty()) {
    problem_ = "no path given";
    return;
  }
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. It changes
  // nothing for the regular files that pass the check below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    problem_ = errno_reason(errno);
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    problem_ = errno_reason(errno);
    ::close(fd);
    return;
  }
  problem_ = is_dev_null(st) ? "" : not_regular(st.st_mode);
  if (!problem_.empty()) {
    ::close(fd);
    return;
  }
  fd_ = fd;
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string InputFile::read_all(std::uint64_t max_bytes, std::string& out) {
  if (fd_ < 0) return problem_;
  if (size_ > max_bytes)
    return "it is " + std::to_string(size_) + " bytes, more than the " + std::to_string(max_bytes) +
           " such a file may be";
  try {
    out.assign(static_cast<std::size_t>(size_), '\0');
  } catch (const std::bad_alloc&) {
    return "it is " + std::to_string(size_) + " bytes, more than this machine's memory holds";
  } catch (const std::length_error&) {
    return "it is " + std::to_string(size_) + " bytes, more than this machine's memory holds";
  }
  std::uint64_t done = 0;
  while (done < size_) {
    const ssize_t n = ::read(fd_, out.data() + done, static_cast<std::size_t>(size_ - done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::string("read error: ") + std::strerror(errno);
    if (n == 0) return "it shrank to " + std::to_string(done) + " bytes while being read";
    done += static_cast<std::uint64_t>(n);
  }
  return "";
}

std::string read_whole_file(const std::string& path, std::uint64_t max_bytes, std::string& out) {
  InputFile file(path);
  return file.is_open() ? file.read_all(max_bytes, out) : file.problem();
}

std::string input_file_message(const std::string& what, const std::string& path, const std::string& why) {
  return "cannot read " + what + " " + path + ": " + why;
}

}  // namespace gattn
