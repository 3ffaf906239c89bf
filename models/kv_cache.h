// The key/value cache of generation: per layer, the keys and values of every position so far, the
// per-key attention terms (score's log σ(f_j) or forget's −c_j as the column bias, pair's k_j·wk as
// the modulation's column term) and forget's prefix sums c_j, so a new token costs O(context)
// instead of re-running the whole context. Capacity is model.block_size (the learned positions end
// there).
#pragma once
#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"
#include "models/config.h"

namespace gattn::models {

struct LayerKVCache {
  Tensor k, v;  // [B, H, capacity, d]
  // Per-key terms [B, H, capacity]; each gate allocates what it needs (cache_term).
  Tensor col_bias, modulation_col;
  Tensor prefix_sum;  // a per-position running sum the next positions continue (the forget gate's c_j)
};

class KVCache {
 public:
  KVCache(const ModelConfig& config, std::int64_t batch);

  std::int64_t batch() const { return batch_; }
  std::int64_t capacity() const { return capacity_; }
  std::int64_t length() const { return length_; }  // positions cached so far
  // Forgets every position (buffers are kept for reuse).
  void clear() { length_ = 0; }
  // Marks n more positions as cached (after every layer has written them).
  void advance(std::int64_t n);

  std::vector<LayerKVCache> layers;

 private:
  std::int64_t batch_, capacity_, length_ = 0;
};

// Copies src [B, H, n] or [B, H, n, d] into positions pos … pos+n−1 of dst [B, H, capacity(, d)].
void write_cache_rows(Tensor& dst, const Tensor& src, std::int64_t pos);

// The per-key term `slot` of a layer cache, allocated [B, H, capacity] on first use.
Tensor& cache_term(Tensor& slot, const LayerKVCache& cache);

}  // namespace gattn::models
