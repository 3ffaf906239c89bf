// TextBlocks: buffered reads cut at newlines.
#include "framework/text/text_blocks.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "framework/base/errors.h"
#include "framework/text/text_codec.h"

namespace gattn {

TextBlocks::TextBlocks(const std::string& path, const std::string& what, std::size_t block_bytes)
    : path_(path), what_(what), file_(std::make_unique<InputFile>(path)), block_bytes_(block_bytes) {
  if (!file_->is_open()) throw DataError(input_file_message(what, path, file_->problem()));
  struct stat st {};
  if (::fstat(file_->fd(), &st) == 0) mtime_ns_ = std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

void TextBlocks::check_unchanged() const {
  struct stat st {};
  if (::fstat(file_->fd(), &st) != 0) throw DataError("cannot stat " + path_ + ": " + std::strerror(errno));
  const std::int64_t mtime_ns = std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  const auto now = static_cast<std::uint64_t>(st.st_size);
  if (read_ == size() && now == size() && mtime_ns == mtime_ns_) return;
  throw DataError(what_ + " " + path_ + " changed while it was read: " + std::to_string(size()) +
                  " bytes when opened, " + std::to_string(read_) + " bytes read, " + std::to_string(now) +
                  " bytes now" + (mtime_ns != mtime_ns_ ? ", modified meanwhile" : "") +
                  "; run the command again once the file no longer changes");
}

void TextBlocks::fill(std::size_t want) {
  while (!eof_ && pending_.size() < want) {
    const std::size_t old = pending_.size();
    pending_.resize(want);
    const ssize_t n = ::read(file_->fd(), pending_.data() + old, want - old);
    if (n < 0 && errno == EINTR) {
      pending_.resize(old);
      continue;
    }
    if (n < 0) throw DataError("cannot read " + path_ + ": " + std::strerror(errno));
    pending_.resize(old + static_cast<std::size_t>(n));
    read_ += static_cast<std::uint64_t>(n);
    eof_ = n == 0;
    if (eof_) check_unchanged();
  }
}

// Where the next block ends in pending_ (0: nothing is left).
std::size_t TextBlocks::block_end() {
  fill(block_bytes_);
  if (eof_ && pending_.size() <= block_bytes_) return pending_.size();
  std::size_t newline = pending_.rfind('\n', block_bytes_ - 1);
  if (newline != std::string::npos) return newline + 1;  // the newline stays with its line
  fill(4 * block_bytes_);                                // one long line: look further for its end
  newline = pending_.find('\n', block_bytes_);
  if (newline != std::string::npos) return newline + 1;
  if (eof_) return pending_.size();
  // No newline in four blocks: cut before the lead byte of a UTF-8 character (or anywhere, if the
  // bytes are not UTF-8).
  std::size_t cut = 4 * block_bytes_;
  while (cut > 3 * block_bytes_ && (static_cast<unsigned char>(pending_[cut]) & 0xC0) == 0x80) --cut;
  return cut > 3 * block_bytes_ ? cut : 4 * block_bytes_;
}

bool TextBlocks::next(std::string& block) {
  const std::size_t end = block_end();
  if (end == 0) return false;
  block.assign(pending_, 0, end);
  pending_.erase(0, end);
  // Blocks end at line ends or before a character's lead byte, so a valid character never spans two.
  if (const std::size_t bad = invalid_utf8_offset(block); bad != std::string::npos) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(block[bad]));
    throw DataError(what_ + " " + path_ + " is not valid UTF-8 at byte offset " + std::to_string(handed_ + bad) + " (" +
                    hex + "); the subword tokenizer reads UTF-8 only (convert the file, e.g. with iconv)");
  }
  handed_ += end;
  return true;
}

}  // namespace gattn
