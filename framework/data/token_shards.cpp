// Mapped llm.c shards: header checks, the mapping, gathering across shards and the id scan.
#include "framework/data/token_shards.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "framework/base/errors.h"
#include "framework/base/input_file.h"
#include "framework/data/token_shard_format.h"

namespace gattn::data_detail {
namespace {

// The scan reads this many tokens (1 MiB) between checks and releases of the pages behind it.
constexpr std::int64_t kScanChunk = std::int64_t{1} << 19;

std::int32_t read_le_i32(const unsigned char* p) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
                                   (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24));
}

// A token as stored (little-endian) to its id on this machine.
inline std::uint32_t le(std::uint16_t v) {
  if constexpr (std::endian::native == std::endian::little) return v;
  return static_cast<std::uint16_t>((v >> 8) | (v << 8));
}
inline std::uint32_t le(std::uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) return v;
  return (v >> 24) | ((v >> 8) & 0xFF00u) | ((v << 8) & 0xFF0000u) | (v << 24);
}

// Reads exactly n bytes at offset, or returns why not.
std::string pread_exact(int fd, void* buf, std::size_t n, off_t offset) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return std::string("read error: ") + std::strerror(errno);
    if (got == 0) return "it ended early";
    p += got;
    offset += got;
    n -= static_cast<std::size_t>(got);
  }
  return "";
}

// A shard that shrinks while it is mapped (truncated, rewritten in place, a network file system
// that lost it) turns every read of a page past its new end into SIGBUS, which would kill the process
// without a word (exit 135). A size check before each read cannot prevent that: the file can shrink
// between the check and the read. So the mapped reads run under a SIGBUS handler instead: a read
// records where to return (sigsetjmp) in a thread-local slot, and the handler, for a fault taken
// while that slot is set, jumps back there; the read then reports failure and the caller throws a
// DataError naming the shard (exit 3). The jump only leaves the reading loop, whose frames hold no
// object with a destructor. A SIGBUS outside a mapped read goes to the previous handler, or, with
// none, kills the process as before. SA_NODEFER leaves SIGBUS unblocked after the jump, so no
// signal-mask syscall is needed per read.
thread_local sigjmp_buf* t_fault_return = nullptr;
struct sigaction g_previous_bus;

extern "C" void on_mapped_read_fault(int signo, siginfo_t* info, void* context) {
  if (sigjmp_buf* back = t_fault_return) {
    t_fault_return = nullptr;
    siglongjmp(*back, 1);
  }
  if (g_previous_bus.sa_flags & SA_SIGINFO) {
    g_previous_bus.sa_sigaction(signo, info, context);
    return;
  }
  if (g_previous_bus.sa_handler != SIG_DFL && g_previous_bus.sa_handler != SIG_IGN) {
    g_previous_bus.sa_handler(signo);
    return;
  }
  // Not a shard read: restore the default action; returning re-runs the faulting access, which
  // then ends the process by SIGBUS as it would have without this handler.
  ::signal(SIGBUS, SIG_DFL);
}

void install_fault_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_mapped_read_fault;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    ::sigaction(SIGBUS, &sa, &g_previous_bus);
  });
}

// Runs `read` (a loop over mapped tokens) and returns true, or false when a page it touched could
// not be read (SIGBUS). `read` must hold no object with a destructor: a fault leaves it by a jump.
template <class Read>
bool read_mapped(const Read& read) noexcept {
  sigjmp_buf back;
  if (sigsetjmp(back, 0) != 0) return false;  // the handler jumped here (and cleared the slot)
  t_fault_return = &back;
  // Compiler fences: the reads must happen while the slot is set, not be moved around its stores.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  read();
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_fault_return = nullptr;
  return true;
}

// The DataError for a shard whose pages could not be read.
[[noreturn]] void throw_unreadable(const std::string& path, std::size_t mapped_bytes) {
  struct stat st {};
  std::string now = ::stat(path.c_str(), &st) == 0 ? std::to_string(st.st_size) + " bytes now"
                                                   : std::string("now: ") + std::strerror(errno);
  throw DataError("token shard " + path + " could not be read while in use: it was " + std::to_string(mapped_bytes) +
                  " bytes when opened, " + now +
                  " (truncated or replaced in place?); restore the shard and resume from the last checkpoint");
}

struct Header {
  std::int64_t count = 0;
  bool wide = false;
};

// The token count and id width of the shard open as file, after checking its header against its size.
Header read_header(const InputFile& file, const std::string& path) {
  const std::uint64_t file_size = file.size();
  if (file_size < kShardHeaderBytes)
    throw DataError("token shard " + path + " is truncated: " + std::to_string(file_size) +
                    " bytes, shorter than the 1024-byte header");
  unsigned char header[kShardHeaderBytes];
  const std::string why = pread_exact(file.fd(), header, kShardHeaderBytes, 0);
  if (!why.empty()) throw DataError(input_file_message("the token shard", path, why));
  const std::int32_t magic = read_le_i32(header), version = read_le_i32(header + 4), count = read_le_i32(header + 8);
  if (magic != kShardMagic)
    throw DataError("token shard " + path + " has bad magic " + std::to_string(magic) + " (expected 20240520)");
  if (version != kShardVersion && version != kShardVersionWide)
    throw DataError("token shard " + path + " has unsupported version " + std::to_string(version) +
                    " (expected 1, uint16 ids, or 2, uint32 ids)");
  if (count < 0) throw DataError("token shard " + path + " has a negative token count " + std::to_string(count));
  const std::uint64_t expected = kShardHeaderBytes + shard_token_bytes(version) * static_cast<std::uint64_t>(count);
  if (file_size != expected)
    throw DataError("token shard " + path + " is " + std::to_string(file_size) + " bytes but its header promises " +
                    std::to_string(count) + " tokens (" + std::to_string(expected) + " bytes)");
  return {count, version == kShardVersionWide};
}

// The ids [begin, end) of a shard's stored tokens into out (as int32).
template <class Stored>
void convert(const void* tokens, std::int64_t begin, std::int64_t end, std::int32_t* out) {
  const Stored* src = static_cast<const Stored*>(tokens);
  for (std::int64_t i = begin; i < end; ++i) out[i - begin] = static_cast<std::int32_t>(le(src[i]));
}

// The largest id of a shard's stored tokens [begin, end).
template <class Stored>
std::uint32_t max_of(const void* tokens, std::int64_t begin, std::int64_t end) {
  const Stored* src = static_cast<const Stored*>(tokens);
  std::uint32_t m = 0;
  for (std::int64_t i = begin; i < end; ++i) m = std::max(m, le(src[i]));
  return m;
}

std::uint32_t id_at(const void* tokens, bool wide, std::int64_t i) {
  return wide ? le(static_cast<const std::uint32_t*>(tokens)[i]) : le(static_cast<const std::uint16_t*>(tokens)[i]);
}

}  // namespace

// Training windows start anywhere: MADV_RANDOM turns off the read-ahead around a fault, which would
// mostly load pages no window reads. Eval windows run front to back, where read-ahead helps.
TokenShards::TokenShards(const std::vector<std::string>& files, Access access)
    : advice_(access == Access::random ? MADV_RANDOM : MADV_NORMAL) {
  install_fault_handler();
  shards_.reserve(files.size());  // push_back cannot throw and leave a mapping unowned
  try {
    for (const auto& path : files) {
      InputFile file(path);
      if (!file.is_open()) throw DataError(input_file_message("the token shard", path, file.problem()));
      Shard shard;
      shard.path = path;
      const Header header = read_header(file, path);
      shard.count = header.count;
      shard.wide = header.wide;
      if (shard.count > 0) {
        // The mapping outlives the descriptor, which is closed at once: a run over thousands of
        // shards holds no file open.
        shard.map_bytes = static_cast<std::size_t>(file.size());
        void* map = ::mmap(nullptr, shard.map_bytes, PROT_READ, MAP_SHARED, file.fd(), 0);
        if (map == MAP_FAILED) {
          const int e = errno;
          // Mappings take address space, not memory: ENOMEM here is nearly always `ulimit -v`.
          throw DataError("cannot map token shard " + path + " (" + std::to_string(shard.map_bytes) +
                          " bytes) into memory: " + std::strerror(e) +
                          (e == ENOMEM ? " (the shards need as much address space as their size: ulimit -v?)" : ""));
        }
        shard.map = map;
        shard.tokens = static_cast<const char*>(map) + kShardHeaderBytes;
        ::madvise(map, shard.map_bytes, advice_);
      }
      shards_.push_back(shard);
      starts_.push_back(starts_.back() + shard.count);
    }
  } catch (...) {
    for (const Shard& s : shards_)
      if (s.map) ::munmap(s.map, s.map_bytes);
    throw;
  }
}

TokenShards::~TokenShards() {
  for (const Shard& s : shards_)
    if (s.map) ::munmap(s.map, s.map_bytes);
}

void TokenShards::copy(std::int64_t start, std::int64_t n, std::int32_t* out) const {
  check_range(start, n);
  // The last shard starting at or before `start`: empty shards share their start with the next one,
  // so this is the shard that holds token `start` whenever n > 0.
  std::size_t s =
      static_cast<std::size_t>(std::upper_bound(starts_.begin(), starts_.end(), start) - starts_.begin()) - 1;
  while (n > 0) {
    const Shard& shard = shards_[s];
    const std::int64_t offset = start - starts_[s];
    const std::int64_t take = std::min(n, shard.count - offset);
    const void* src = shard.tokens;
    const bool wide = shard.wide;
    std::int32_t* dst = out;
    if (!read_mapped([src, wide, offset, take, dst] {
          if (wide)
            convert<std::uint32_t>(src, offset, offset + take, dst);
          else
            convert<std::uint16_t>(src, offset, offset + take, dst);
        }))
      throw_unreadable(shard.path, shard.map_bytes);
    out += take;
    start += take;
    n -= take;
    ++s;
  }
}

std::int64_t TokenShards::scan_ids(std::int64_t vocab) const {
  std::int64_t max_id = -1;
  for (const Shard& shard : shards_) max_id = std::max(max_id, scan_shard(shard, vocab));
  return max_id;
}

std::int64_t TokenShards::scan_shard(const Shard& shard, std::int64_t vocab) const {
  if (shard.count == 0) return -1;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  auto* base = static_cast<char*>(shard.map);
  ::madvise(base, shard.map_bytes, MADV_SEQUENTIAL);  // one pass front to back: read ahead far
  std::size_t released = 0;                           // bytes of the mapping already dropped
  const std::uint64_t width = shard.wide ? 4 : 2;
  std::uint32_t max_id = 0;
  for (std::int64_t begin = 0; begin < shard.count; begin += kScanChunk) {
    const std::int64_t end = std::min(shard.count, begin + kScanChunk);
    std::uint32_t chunk_max = 0;
    const void* tokens = shard.tokens;
    const bool wide = shard.wide;
    std::uint32_t* max_out = &chunk_max;
    if (!read_mapped([tokens, wide, begin, end, max_out] {
          *max_out = wide ? max_of<std::uint32_t>(tokens, begin, end) : max_of<std::uint16_t>(tokens, begin, end);
        }))
      throw_unreadable(shard.path, shard.map_bytes);
    if (vocab > 0 && chunk_max >= vocab) {
      std::int64_t i = begin;
      std::int64_t* at = &i;
      if (!read_mapped([tokens, wide, at, vocab] {
            while (id_at(tokens, wide, *at) < vocab) ++*at;
          }))
        throw_unreadable(shard.path, shard.map_bytes);
      throw DataError("token shard " + shard.path + " holds token id " +
                      std::to_string(id_at(shard.tokens, shard.wide, i)) + " at token " + std::to_string(i) +
                      " (byte offset " + std::to_string(kShardHeaderBytes + width * static_cast<std::uint64_t>(i)) +
                      ") of the shard, outside the model's vocabulary (model.vocab_size " + std::to_string(vocab) +
                      ")");
    }
    max_id = std::max(max_id, chunk_max);
    // Drop the whole pages read so far: the page cache keeps them, but they leave this process's
    // resident set, which otherwise would grow by the size of the data set.
    const std::size_t done = (kShardHeaderBytes + width * static_cast<std::size_t>(end)) / page * page;
    if (done > released) {
      ::madvise(base + released, done - released, MADV_DONTNEED);
      released = done;
    }
  }
  if (released < shard.map_bytes) ::madvise(base + released, shard.map_bytes - released, MADV_DONTNEED);
  ::madvise(base, shard.map_bytes, advice_);
  return max_id;
}

}  // namespace gattn::data_detail
