// The pure arithmetic of data parallelism: which contiguous range of the flattened parameters a
// rank owns under ZeRO-1, which rows of the global batch it trains on, and how parameters are
// grouped into gradient buckets. No communication here, so it is unit-tested alone.
#pragma once
#include <cstdint>
#include <vector>

namespace gattn::dist {

// [begin, end) of a flat index space.
struct Range {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
  bool operator==(const Range&) const = default;
};

// ZeRO-1 layout of `total` elements over `world` ranks: every rank gets a block of
// shard_size(total, world) = ⌈total / world⌉ slots (collectives need equal blocks); rank r owns the
// real elements [r·s, min((r+1)·s, total)), which is empty for trailing ranks when total < world·s.
std::int64_t shard_size(std::int64_t total, int world);
Range shard_of(std::int64_t total, int world, int rank);

// The part of `piece` (a parameter's flat range) that falls inside `shard`, in the parameter's own
// element indices ([0, piece.size())); empty when they do not overlap.
Range overlap_local(const Range& piece, const Range& shard);

// Rows [rank·per_rank, (rank+1)·per_rank) of a global batch of world·per_rank rows.
Range batch_rows(std::int64_t per_rank, int rank);

// Gradient buckets: parameters (sizes in elements, in model order) grouped into consecutive runs,
// taken from the last parameter backwards, because backward produces the last layers' gradients
// first; a bucket closes once it holds at least `bucket_elements` (a parameter larger than that is
// a bucket of its own). Each bucket lists parameter indices in ascending order.
std::vector<std::vector<std::size_t>> plan_buckets(const std::vector<std::int64_t>& sizes,
                                                   std::int64_t bucket_elements);

}  // namespace gattn::dist
