// Internal to framework/data: llm.c token shards (a 256-int32 little-endian header: magic 20240520,
// version, token count; then uint16 ids, or uint32 under version 2) mapped read-only into memory and read as one
// stream, in the order of the files given. Nothing is read into a buffer of the process: a window's tokens are copied
// out of the page cache, so the process's own memory does not grow with the data set.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/data/token_source.h"

namespace gattn::data_detail {

class TokenShards final : public TokenSource {
 public:
  // How the windows will read the shards, passed to the kernel as a madvise hint.
  enum class Access { random, sequential };

  // Opens and maps every file after checking its header against its size; DataError naming the file
  // for one that cannot be read or mapped or whose header is bad. Reads no token.
  TokenShards(const std::vector<std::string>& files, Access access);
  ~TokenShards() override;
  TokenShards(const TokenShards&) = delete;
  TokenShards& operator=(const TokenShards&) = delete;

  std::int64_t size() const override { return starts_.back(); }
  // Gathers across shard boundaries: the stream is the shards' tokens end to end.
  void copy(std::int64_t start, std::int64_t n, std::int32_t* out) const override;

  // Reads every token once and returns the largest id (-1 when there are none). With vocab > 0 an id
  // >= vocab is a DataError naming the shard and the token's index and byte offset in it. The pages
  // behind the scan are dropped from the mapping as it goes, so resident memory stays flat.
  std::int64_t scan_ids(std::int64_t vocab) const;

  std::size_t shard_count() const { return shards_.size(); }
  // Shard i's file and its token count (from its checked header).
  const std::string& shard_path(std::size_t i) const { return shards_[i].path; }
  std::int64_t shard_tokens(std::size_t i) const { return shards_[i].count; }

 private:
  struct Shard {
    std::string path;
    const void* tokens = nullptr;  // little-endian uint16 or uint32 (`wide`), inside the mapping
    bool wide = false;             // version 2: uint32 ids
    std::int64_t count = 0;
    void* map = nullptr;  // the whole file; null for a shard without tokens
    std::size_t map_bytes = 0;
  };

  // The shard's largest id; throws the DataError of scan_ids.
  std::int64_t scan_shard(const Shard& shard, std::int64_t vocab) const;

  std::vector<Shard> shards_;
  std::vector<std::int64_t> starts_{0};  // starts_[i]: shard i's first token in the stream; back(): size()
  int advice_;                           // the madvise hint for windows
};

}  // namespace gattn::data_detail
