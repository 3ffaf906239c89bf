// Writes token ids as llm.c .bin shards, the format `data.kind: tokens` reads (docs/config.md): a
// 1024-byte header of 256 little-endian int32 (magic 20240520, version, token count, zeros), then
// the ids as little-endian uint16 (version 1), or uint32 (version 2) for a vocabulary past 65,536
// ids (token_shard_format.h). A split's shards are <split>_000000.bin, <split>_000001.bin, …,
// each holding at most shard_tokens ids; their concatenation is the split's token stream.
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace gattn {

struct WrittenShard {
  std::string file;  // file name within the directory
  std::int64_t tokens = 0;
};

class TokenShardWriter {
 public:
  // `split` is "train" or "val" (the loader tells the splits apart by "val" in the file name).
  // `vocab`: the tokenizer's ids; past 65,536 the shards store uint32 ids (version 2), else uint16.
  TokenShardWriter(std::filesystem::path dir, std::string split, std::int64_t shard_tokens, std::int64_t vocab);
  ~TokenShardWriter();
  TokenShardWriter(const TokenShardWriter&) = delete;
  TokenShardWriter& operator=(const TokenShardWriter&) = delete;

  // Appends ids (each must be < the vocabulary the writer was made for).
  void append(const std::vector<std::int32_t>& ids);
  // Completes the last shard's header and closes it; the shards written so far.
  const std::vector<WrittenShard>& finish();
  std::int64_t tokens() const { return total_; }

 private:
  void open_next();
  void close_current();

  std::filesystem::path dir_;
  std::string split_;
  std::int64_t shard_tokens_;
  bool wide_;  // uint32 ids
  std::FILE* file_ = nullptr;
  std::vector<WrittenShard> shards_;
  std::int64_t total_ = 0;
  std::vector<unsigned char> buffer_;
};

}  // namespace gattn
