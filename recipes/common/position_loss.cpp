// Per-position losses from the logits, bucketed by log2 of the position.
#include "recipes/common/position_loss.h"

#include <algorithm>
#include <cmath>

#include "core/tensor/error.h"

namespace gattn::recipes {

std::vector<PositionBucket> position_buckets(std::int64_t T) {
  std::vector<PositionBucket> out;
  if (T <= 0) return out;
  out.push_back({0, 1});
  for (std::int64_t from = 1; from < T; from *= 2) out.push_back({from, std::min(2 * from, T)});
  return out;
}

void add_position_losses(const Tensor& logits, const Tensor& targets, std::vector<PositionBucket>& buckets) {
  if (logits.dim() != 3 || targets.dim() != 2 || logits.size(0) != targets.size(0) || logits.size(1) != targets.size(1))
    throw ShapeError("add_position_losses: logits " + shape_str(logits.shape()) + " and targets " +
                     shape_str(targets.shape()) + " must be [B, T, V] and [B, T]");
  const std::int64_t B = logits.size(0), T = logits.size(1), V = logits.size(2);
  if (buckets.empty() || buckets.back().to < T)
    throw ShapeError("add_position_losses: the buckets end at " +
                     std::to_string(buckets.empty() ? 0 : buckets.back().to) + ", before T=" + std::to_string(T));
  // Read in place as f32 on the host: a copy as doubles would be 8·B·T·V bytes (gigabytes for an
  // imported model's vocabulary), while each row's sums are taken in double below.
  const Tensor z = logits.to(Device::cpu).to(DType::f32);
  const float* data = z.data<float>();
  const std::vector<double> y = targets.to(Device::cpu).to_vector();
  std::size_t bucket = 0;
  for (std::int64_t t = 0; t < T; ++t) {
    while (buckets[bucket].to <= t) ++bucket;
    for (std::int64_t b = 0; b < B; ++b) {
      const double target = y[static_cast<std::size_t>(b * T + t)];
      if (target < 0) continue;
      const float* row = data + (b * T + t) * V;
      const double top = *std::max_element(row, row + V);
      double sum = 0;
      for (std::int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row[v]) - top);
      buckets[bucket].loss_sum += top + std::log(sum) - static_cast<double>(row[static_cast<std::int64_t>(target)]);
      ++buckets[bucket].tokens;
    }
  }
}

nlohmann::json position_loss_json(const std::vector<PositionBucket>& buckets) {
  nlohmann::json out = nlohmann::json::array();
  for (const PositionBucket& b : buckets)
    if (b.tokens > 0) out.push_back({{"from", b.from}, {"to", b.to}, {"loss", b.loss()}, {"tokens", b.tokens}});
  return out;
}

}  // namespace gattn::recipes
