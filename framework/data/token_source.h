// Internal to framework/data: one split's tokens as a single stream, whether they sit in memory (text
// data) or in memory-mapped llm.c shards (token_shards.h). WindowedDataset cuts every window through
// this interface, so a window is the same tokens whichever holds them.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/error.h"

namespace gattn::data_detail {

class TokenSource {
 public:
  virtual ~TokenSource() = default;

  // The number of tokens in the stream.
  virtual std::int64_t size() const = 0;
  // Writes tokens [start, start + n) of the stream to out; [start, start + n) must lie in [0, size()].
  virtual void copy(std::int64_t start, std::int64_t n, std::int32_t* out) const = 0;

 protected:
  // Throws ValueError unless [start, start + n) lies in [0, size()]: a caller's bug, never bad data.
  void check_range(std::int64_t start, std::int64_t n) const {
    if (start < 0 || n < 0 || start > size() - n)
      throw ValueError("token stream: [" + std::to_string(start) + ", " + std::to_string(start) + " + " +
                       std::to_string(n) + ") is outside its " + std::to_string(size()) + " tokens");
  }
};

// Tokens held in memory.
class TokenVector final : public TokenSource {
 public:
  explicit TokenVector(std::vector<std::uint16_t> tokens) : tokens_(std::move(tokens)) {}

  std::int64_t size() const override { return static_cast<std::int64_t>(tokens_.size()); }
  void copy(std::int64_t start, std::int64_t n, std::int32_t* out) const override {
    check_range(start, n);
    const std::uint16_t* src = tokens_.data() + start;
    for (std::int64_t i = 0; i < n; ++i) out[i] = src[i];
  }

 private:
  std::vector<std::uint16_t> tokens_;
};

}  // namespace gattn::data_detail
