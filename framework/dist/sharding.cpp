// Shard ranges, batch rows and bucket plans.
#include "framework/dist/sharding.h"

#include <algorithm>

#include "core/tensor/error.h"

namespace gattn::dist {

std::int64_t shard_size(std::int64_t total, int world) {
  if (world < 1 || total < 0) throw ValueError("shard_size: need world >= 1 and total >= 0");
  return (total + world - 1) / world;
}

Range shard_of(std::int64_t total, int world, int rank) {
  if (rank < 0 || rank >= world) {
    std::string msg = "shard_of: rank ";
    msg.append(std::to_string(rank)).append(" outside the world");
    throw ValueError(msg);
  }
  const std::int64_t s = shard_size(total, world);
  const std::int64_t begin = std::min(total, rank * s);
  return {begin, std::min(total, begin + s)};
}

Range overlap_local(const Range& piece, const Range& shard) {
  const std::int64_t begin = std::max(piece.begin, shard.begin), end = std::min(piece.end, shard.end);
  if (begin >= end) return {0, 0};
  return {begin - piece.begin, end - piece.begin};
}

Range batch_rows(std::int64_t per_rank, int rank) { return {rank * per_rank, (rank + 1) * per_rank}; }

std::vector<std::vector<std::size_t>> plan_buckets(const std::vector<std::int64_t>& sizes,
                                                   std::int64_t bucket_elements) {
  if (bucket_elements < 1) throw ValueError("plan_buckets: bucket_elements must be >= 1");
  std::vector<std::vector<std::size_t>> buckets;
  std::vector<std::size_t> open;
  std::int64_t filled = 0;
  for (std::size_t k = sizes.size(); k-- > 0;) {
    open.push_back(k);
    filled += sizes[k];
    if (filled >= bucket_elements) {
      std::reverse(open.begin(), open.end());
      buckets.push_back(std::move(open));
      open.clear();
      filled = 0;
    }
  }
  if (!open.empty()) {
    std::reverse(open.begin(), open.end());
    buckets.push_back(std::move(open));
  }
  return buckets;
}

}  // namespace gattn::dist
