// TextBlocks: buffered reads cut at newlines.
#include "framework/text/text_blocks.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "framework/base/errors.h"

namespace gattn {

TextBlocks::TextBlocks(const std::string& path, const std::string& what, std::size_t block_bytes)
    : path_(path), file_(std::make_unique<InputFile>(path)), block_bytes_(block_bytes) {
  if (!file_->is_open()) throw DataError(input_file_message(what, path, file_->problem()));
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
    eof_ = n == 0;
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
  return true;
}

}  // namespace gattn
