// The llm.c .bin token shard format, shared by the reader (token_shards.h) and the writer
// (token_shard_writer.h): a header of 256 little-endian int32 (magic, version, token count, then
// zeros), followed by the token ids as little-endian uint16.
#pragma once
#include <cstddef>
#include <cstdint>

namespace gattn {

inline constexpr std::int32_t kShardMagic = 20240520;
inline constexpr std::int32_t kShardVersion = 1;
inline constexpr std::size_t kShardHeaderBytes = 256 * 4;

}  // namespace gattn
