// The key/value cache of generation: per layer, the keys and values of every position so far and
// the per-key terms of the fused attention (the summed column bias and the modulation's column
// term), plus any state a gate keeps to extend its terms (a running prefix sum), so a new token
// costs O(context) instead of re-running the whole context. Capacity is model.block_size (the
// learned positions end there).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "framework/tensor/tensor.h"
#include "models/config.h"

namespace gattn::models {

struct LayerKVCache {
  Tensor k, v;  // [B, H, capacity, d]
  // Per-key terms [B, H, capacity] of ops::cached_attention, allocated on first use (cache_term).
  Tensor col_bias, modulation_col;
  // Per-gate state, keyed by the gate's kind (each gate reads and writes only its own slot).
  std::map<std::string, Tensor> gate_state;
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
