// Every file gattn reads as input goes through here: a config or ablation file, text data and
// token shards, checkpoints/latest, a checkpoint's files, a run's metrics. A hostile path must not
// hang the reader or make it read forever, so the file is opened non-blocking (a FIFO cannot block
// the open) and anything but a regular file (a FIFO, a device such as /dev/zero, a socket, a
// directory) is refused before a byte is read; /dev/null reads as an empty file. Readers that take
// a file whole give a size limit.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

namespace gattn {

inline constexpr std::uint64_t kNoSizeLimit = std::numeric_limits<std::uint64_t>::max();
// What a config (or an ablation file) may be: a hand-written YAML file is kilobytes.
inline constexpr std::uint64_t kMaxConfigBytes = 4u << 20;

// An input file opened for reading (read-only, close-on-exec), closed by the destructor.
class InputFile {
 public:
  // Opens `path`; on failure problem() says why ("it does not exist", "it is a FIFO (named pipe),
  // not a regular file", …) and fd() is -1.
  explicit InputFile(const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }
  const std::string& problem() const { return problem_; }
  // Hands the descriptor to the caller (e.g. to fdopen it), which then closes it.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

  // Reads the whole file into `out`, or returns why not ("" on success): larger than max_bytes,
  // more than memory holds, a read error or a file that changed size while read.
  std::string read_all(std::uint64_t max_bytes, std::string& out);

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string problem_;
};

// The whole of `path` into `out`; returns why not ("" on success), for readers that word their
// own messages.
std::string read_whole_file(const std::string& path, std::uint64_t max_bytes, std::string& out);

// "cannot read <what> <path>: <why>", the wording of read_input_file's refusals.
std::string input_file_message(const std::string& what, const std::string& path, const std::string& why);

// The whole of `path`, or an E (the caller's error type: ConfigError exits 2, DataError and
// CheckpointError exit 3) whose message names `what` and the path.
template <class E>
std::string read_input_file(const std::string& path, const std::string& what, std::uint64_t max_bytes = kNoSizeLimit) {
  std::string bytes;
  const std::string why = read_whole_file(path, max_bytes, bytes);
  if (!why.empty()) throw E(input_file_message(what, path, why));
  return bytes;
}

}  // namespace gattn
