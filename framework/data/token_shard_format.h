// The llm.c .bin token shard format, shared by the reader (token_shards.h) and the writer
// (token_shard_writer.h): a header of 256 little-endian int32 (magic, version, token count, then
// zeros), followed by the token ids as little-endian uint16 (version 1, llm.c's), or as uint32
// (version 2, gattn's for vocabularies past 65,536 ids such as Llama 3's and Qwen's; the writer
// uses it only for those, so shards of smaller vocabularies stay llm.c's).
#pragma once
#include <cstddef>
#include <cstdint>

namespace gattn {

inline constexpr std::int32_t kShardMagic = 20240520;
inline constexpr std::int32_t kShardVersion = 1;          // uint16 ids
inline constexpr std::int32_t kShardVersionWide = 2;      // uint32 ids
inline constexpr std::int64_t kShardNarrowVocab = 65536;  // the ids version 1 holds
// Bytes per stored id of a shard version.
inline constexpr std::uint64_t shard_token_bytes(std::int32_t version) { return version == kShardVersionWide ? 4 : 2; }
inline constexpr std::size_t kShardHeaderBytes = 256 * 4;

}  // namespace gattn
