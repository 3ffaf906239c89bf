// TokenShardWriter: the header is written as zeros first and filled in when the shard is complete,
// so a shard is only ever read (inside a staged output directory) once its count is right.
#include "framework/data/token_shard_writer.h"

#include <cerrno>
#include <cstring>

#include "framework/base/errors.h"
#include "framework/data/token_shard_format.h"

namespace gattn {

namespace {

void put_le32(unsigned char* p, std::int32_t v) {
  const auto u = static_cast<std::uint32_t>(v);
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(u >> (8 * i));
}

}  // namespace

TokenShardWriter::TokenShardWriter(std::filesystem::path dir, std::string split, std::int64_t shard_tokens,
                                   std::int64_t vocab)
    : dir_(std::move(dir)), split_(std::move(split)), shard_tokens_(shard_tokens), wide_(vocab > kShardNarrowVocab) {}

TokenShardWriter::~TokenShardWriter() {
  if (file_) std::fclose(file_);  // an unfinished writer: its directory is staged and gets removed
}

void TokenShardWriter::open_next() {
  char name[64];
  std::snprintf(name, sizeof name, "%s_%06zu.bin", split_.c_str(), shards_.size());
  const std::filesystem::path path = dir_ / name;
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) throw DataError("cannot create token shard " + path.string() + ": " + std::strerror(errno));
  const std::vector<unsigned char> zeros(kShardHeaderBytes, 0);
  if (std::fwrite(zeros.data(), 1, zeros.size(), file_) != zeros.size())
    throw DataError("cannot write token shard " + path.string() + ": " + std::strerror(errno));
  shards_.push_back({name, 0});
}

void TokenShardWriter::close_current() {
  if (!file_) return;
  unsigned char header[12];
  put_le32(header, kShardMagic);
  put_le32(header + 4, wide_ ? kShardVersionWide : kShardVersion);
  put_le32(header + 8, static_cast<std::int32_t>(shards_.back().tokens));
  const std::string path = (dir_ / shards_.back().file).string();
  const bool ok = std::fseek(file_, 0, SEEK_SET) == 0 && std::fwrite(header, 1, sizeof header, file_) == sizeof header;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed) throw DataError("cannot write token shard " + path + ": " + std::strerror(errno));
}

void TokenShardWriter::append(const std::vector<std::int32_t>& ids) {
  std::size_t at = 0;
  while (at < ids.size()) {
    if (!file_) open_next();
    const auto room = static_cast<std::size_t>(shard_tokens_ - shards_.back().tokens);
    const std::size_t n = std::min(room, ids.size() - at);
    const std::size_t width = wide_ ? 4 : 2;
    buffer_.resize(width * n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto id = static_cast<std::uint32_t>(ids[at + i]);
      for (std::size_t b = 0; b < width; ++b) buffer_[width * i + b] = static_cast<unsigned char>(id >> (8 * b));
    }
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
      throw DataError("cannot write token shard " + (dir_ / shards_.back().file).string() + ": " +
                      std::strerror(errno));
    shards_.back().tokens += static_cast<std::int64_t>(n);
    total_ += static_cast<std::int64_t>(n);
    at += n;
    if (shards_.back().tokens == shard_tokens_) close_current();
  }
}

const std::vector<WrittenShard>& TokenShardWriter::finish() {
  close_current();
  return shards_;
}

}  // namespace gattn
