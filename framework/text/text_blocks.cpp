// TextBlocks: buffered reads cut at newlines.
#include "framework/text/text_blocks.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "framework/base/errors.h"
#include "framework/text/text_codec.h"

namespace gattn {

TextBlocks::TextBlocks(const std::string& path, const std::string& what, std::size_t block_bytes, bool strict_cuts)
    : path_(path),
      what_(what),
      file_(std::make_unique<InputFile>(path)),
      block_bytes_(block_bytes),
      strict_cuts_(strict_cuts) {
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

namespace {

// Whether a whitespace character (Unicode White_Space, and U+180E, which PCRE2's \s also takes) ends
// at `end` or starts at `begin` of `s`: ASCII whitespace, or the UTF-8 forms of U+0085, U+00A0,
// U+1680, U+180E, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F and U+3000.
bool ascii_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

bool unicode_space(std::string_view ch) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(ch[i]); };
  if (ch.size() == 2) return b(0) == 0xC2 && (b(1) == 0x85 || b(1) == 0xA0);
  if (ch.size() != 3) return false;
  if (b(0) == 0xE1) return (b(1) == 0x9A && b(2) == 0x80) || (b(1) == 0xA0 && b(2) == 0x8E);
  if (b(0) == 0xE2 && b(1) == 0x80) return b(2) <= 0x8A || b(2) == 0xA8 || b(2) == 0xA9 || b(2) == 0xAF;
  if (b(0) == 0xE2 && b(1) == 0x81) return b(2) == 0x9F;
  return b(0) == 0xE3 && b(1) == 0x80 && b(2) == 0x80;
}

bool space_before(const std::string& s, std::size_t end) {
  if (end == 0) return false;
  if (ascii_space(static_cast<unsigned char>(s[end - 1]))) return true;
  std::size_t begin = end - 1;
  while (begin > 0 && end - begin < 4 && (static_cast<unsigned char>(s[begin]) & 0xC0) == 0x80) --begin;
  return unicode_space(std::string_view(s).substr(begin, end - begin));
}

bool space_after(const std::string& s, std::size_t begin) {
  if (begin >= s.size()) return false;
  const auto c = static_cast<unsigned char>(s[begin]);
  if (ascii_space(c)) return true;
  const std::size_t n = c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  return unicode_space(std::string_view(s).substr(begin, std::min(n, s.size() - begin)));
}

}  // namespace

bool TextBlocks::cut_allowed(std::size_t newline) const {
  if (!strict_cuts_) return true;
  // Past the end of what is read the next character is unknown: not a place to cut, unless the file ends.
  if (newline + 1 >= pending_.size()) return eof_;
  return !space_before(pending_, newline) && !space_after(pending_, newline + 1);
}

std::size_t TextBlocks::last_cut(std::size_t from, std::size_t to) const {
  for (std::size_t end = to; end > from;) {
    const std::size_t newline = pending_.rfind('\n', end - 1);
    if (newline == std::string::npos || newline < from) return std::string::npos;
    if (cut_allowed(newline)) return newline;
    end = newline;
  }
  return std::string::npos;
}

std::size_t TextBlocks::first_cut(std::size_t from, std::size_t to) const {
  for (std::size_t at = from; at < to;) {
    const std::size_t newline = pending_.find('\n', at);
    if (newline == std::string::npos || newline >= to) return std::string::npos;
    if (cut_allowed(newline)) return newline;
    at = newline + 1;
  }
  return std::string::npos;
}

// Where the next block ends in pending_ (0: nothing is left).
std::size_t TextBlocks::block_end() {
  fill(block_bytes_ + 4);  // a few bytes more: what follows a newline decides a strict cut
  if (eof_ && pending_.size() <= block_bytes_) return pending_.size();
  std::size_t newline = last_cut(0, block_bytes_);
  if (newline != std::string::npos) return newline + 1;  // the newline stays with its line
  fill(4 * block_bytes_ + 4);                            // one long line: look further for its end
  newline = first_cut(block_bytes_, std::min(pending_.size(), 4 * block_bytes_));
  if (newline == std::string::npos && strict_cuts_) {
    // No cut between non-space characters in four blocks: any line end will do, the last one in the
    // first block, else the first after it.
    newline = pending_.rfind('\n', block_bytes_ - 1);
    if (newline == std::string::npos) newline = pending_.find('\n', block_bytes_);
    if (newline >= 4 * block_bytes_) newline = std::string::npos;
  }
  if (newline != std::string::npos) return newline + 1;
  if (eof_ && pending_.size() <= 4 * block_bytes_) return pending_.size();
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
                    hex + "); the tokenizer reads UTF-8 only (convert the file, e.g. with iconv)");
  }
  handed_ += end;
  return true;
}

}  // namespace gattn
