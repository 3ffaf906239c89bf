// The loss by position of a long-context evaluation: the predicted tokens grouped by their position
// in the window into log-spaced buckets [0, 1), [1, 2), [2, 4), … [2^k, T), so a length
// extrapolation curve (loss against position, FoX's Figure 2 form) shows where a model stops
// using its context or starts to break down past the length it trained at.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/tensor/tensor.h"

namespace gattn::recipes {

struct PositionBucket {
  std::int64_t from = 0, to = 0;  // target positions from ≤ t < to (t = 0: the first token's target)
  double loss_sum = 0;            // Σ −log p(target) over the bucket's predicted tokens
  std::int64_t tokens = 0;        // predicted tokens (targets ≥ 0) in the bucket
  double loss() const { return tokens ? loss_sum / static_cast<double>(tokens) : 0.0; }
};

// The buckets of a window of T positions: [0, 1), then [2^k, 2^(k+1)) clipped at T.
std::vector<PositionBucket> position_buckets(std::int64_t T);

// Adds each predicted token's loss (log-sum-exp of its logits minus its target's logit, in f64)
// to its bucket. logits [B, T, V] (any float dtype, any device), targets i32 [B, T] (−1: not
// predicted), buckets from position_buckets(T).
void add_position_losses(const Tensor& logits, const Tensor& targets, std::vector<PositionBucket>& buckets);

// [{"from": 0, "to": 1, "loss": …, "tokens": …}, …], the buckets that hold tokens.
nlohmann::json position_loss_json(const std::vector<PositionBucket>& buckets);

}  // namespace gattn::recipes
