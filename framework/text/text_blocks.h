// A text file read in blocks that end at line ends, so a large corpus never sits in memory whole
// and each block can be tokenized on its own: the tokenizers gattn trains never learn a piece that
// spans a newline, so encoding block by block gives the same tokens as encoding the file at once
// (Hugging Face tokenizers need the stricter cuts below). A line longer than the block limit is cut
// at a UTF-8 character boundary instead.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "framework/base/input_file.h"

namespace gattn {

class TextBlocks {
 public:
  // Opens `path` through InputFile (no FIFOs or devices); DataError naming `what` and the path
  // when it cannot be read.
  // `strict_cuts`: end blocks only after a newline with no whitespace on either side where there is
  // one (Hugging Face tokenizers: their pre-tokenizers keep whitespace runs across newlines together),
  // else after any newline.
  TextBlocks(const std::string& path, const std::string& what, std::size_t block_bytes = 1 << 20,
             bool strict_cuts = false);

  std::uint64_t size() const { return file_->size(); }
  // The next block: about block_bytes, ending just after a newline when the file has one within
  // four times that, else at a character boundary; false at the end of the file. At the end, a
  // file that changed while it was read (its size or modification time differs from when it was
  // opened, or a different number of bytes was read) is a DataError naming it: its blocks are then
  // no snapshot of any one version of it, and sizes recorded from it (meta.json's) would not agree.
  // A block that is not valid UTF-8 is a DataError naming the file and the byte's offset: the
  // subword tokenizer would turn the byte into U+FFFD and lose it.
  bool next(std::string& block);

 private:
  void fill(std::size_t want);  // reads until pending_ holds `want` bytes or the file ends
  std::size_t block_end();
  // The last newline in pending_[from, to) after which a block may end, or npos.
  std::size_t last_cut(std::size_t from, std::size_t to) const;
  std::size_t first_cut(std::size_t from, std::size_t to) const;
  bool cut_allowed(std::size_t newline) const;

  void check_unchanged() const;

  std::string path_, what_;
  std::uint64_t read_ = 0;     // bytes read from the file so far
  std::uint64_t handed_ = 0;   // bytes handed out in blocks so far: the next block's offset
  std::int64_t mtime_ns_ = 0;  // its modification time when opened
  std::unique_ptr<InputFile> file_;
  std::size_t block_bytes_;
  bool strict_cuts_;
  std::string pending_;  // read from the file, not yet handed out
  bool eof_ = false;
};

}  // namespace gattn
