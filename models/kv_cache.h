// The key/value cache of generation: per layer, the keys and values of the positions kept so far
// and the per-key terms of the fused attention (the summed column bias and the modulation's column
// term), plus any state a gate keeps to extend its terms (a running prefix sum), so a new token
// costs O(context) instead of re-running the whole context.
//
// Rows are not positions: the cache holds `length()` rows of the `position()` tokens seen, in
// position order, the newest last. Exact generation (policy full) keeps every position, so row j is
// position j and the capacity is model.block_size. Under a KV budget (models/inference_options.h)
// the capacity is the budget, every row records its position (key_positions), and
// models/kv_policy.h evicts rows to make room; each head evicts its own rows.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"
#include "models/config.h"
#include "models/inference_options.h"
#include "ops/attention/attention.h"

namespace gattn::models {

struct LayerKVCache {
  Tensor k, v;                   // [B, H_kv, capacity, d]: one row per key and value head (H_kv = H without grouping)
  std::int64_t query_heads = 0;  // H: the per-row terms below hold one row per query head
  // Per-key terms [B, H, capacity] of ops::cached_attention, allocated on first use (cache_term). With
  // grouped-query attention the query heads of a group hold the same rows as their key head (each
  // its own values): eviction removes a row from the key head and from all of its query heads.
  Tensor col_bias, modulation_col;
  // Under a KV budget: i32 [B, H, capacity], the position each row holds.
  Tensor key_positions;
  // Policy h2o: [B, H, capacity], the attention each row has received so far (Σ over queries).
  Tensor key_attention;
  // Per-gate state that is not per row, keyed by the gate's kind (each gate reads and writes only
  // its own slot).
  std::map<std::string, Tensor> gate_state;

  // The tensors above that hold one entry per row (undefined ones included): what eviction moves.
  std::array<Tensor*, 6> per_row() { return {&k, &v, &col_bias, &modulation_col, &key_positions, &key_attention}; }
  std::array<const Tensor*, 6> per_row() const {
    return {&k, &v, &col_bias, &modulation_col, &key_positions, &key_attention};
  }
};

// Encoder–decoder generation: what one decoder block's cross-attention reads at every step, made
// once from the source (CrossAttention::prepare, GPT::encode_source).
struct CrossMemory {
  Tensor memory;              // the encoder output [B, S, C]
  Tensor k, v;                // [B, H, S, d]
  ops::AttentionTerms terms;  // column terms [B, H, S]: the source padding and the key gates' terms
};

class KVCache {
 public:
  KVCache(const ModelConfig& config, std::int64_t batch, const InferenceOptions& options = {});
  // The rows per head a cache for `config` under `options` holds: the budget, or block_size.
  static std::int64_t capacity_for(const ModelConfig& config, const InferenceOptions& options) {
    return options.bounded() ? options.budget : config.block_size;
  }

  std::int64_t batch() const { return batch_; }
  std::int64_t capacity() const { return capacity_; }
  std::int64_t length() const { return length_; }      // rows held (each head holds as many)
  std::int64_t position() const { return position_; }  // tokens seen: the next token's position
  const InferenceOptions& options() const { return options_; }
  // Forgets every position (buffers are kept for reuse); the next token is position 0.
  void clear();
  // An empty cache's next token is at `position` (a sequence picked up past its start).
  void start_at(std::int64_t position);
  // Marks n more positions as cached in n new rows (after every layer has written them).
  void advance(std::int64_t n);
  // Drops `count` rows from every head of every layer (models/kv_policy.h chose them).
  void shrink(std::int64_t count);
  // Bytes held by the cache's tensors (keys, values, per-row terms and positions, gate state).
  std::int64_t bytes() const;

  std::vector<LayerKVCache> layers;
  // Encoder–decoder models: one per decoder block, set by GPT::encode_source (empty otherwise).
  std::vector<CrossMemory> cross;
  InferenceCounters counters;

 private:
  std::int64_t batch_, capacity_, length_ = 0, position_ = 0;
  InferenceOptions options_;
};

// Where one cached forward's new positions go and what it may skip (GPT::forward_cached fills it).
struct CachedStep {
  std::int64_t row = 0;                       // the first cache row they take (KVCache::length())
  std::int64_t position = 0;                  // the first one's token position (KVCache::position())
  std::int64_t step = 0;                      // GPT::step(): where the scheduled gate options stand
  const InferenceOptions* options = nullptr;  // null: exact
  InferenceCounters* counters = nullptr;      // null: nothing counted
};

// Copies src [B, H, n] or [B, H, n, d] into rows row … row+n−1 of dst [B, H, capacity(, d)].
void write_cache_rows(Tensor& dst, const Tensor& src, std::int64_t row);

// The per-key term `slot` of a layer cache, allocated [B, H, capacity] on first use.
Tensor& cache_term(Tensor& slot, const LayerKVCache& cache);

// Removes the rows `gone` (ascending, all < length) of head `bh` from every per-row tensor of
// `cache`, moving the later rows up so the rest stay in position order; rows past length − |gone|
// are left as they were.
void remove_rows(LayerKVCache& cache, std::int64_t bh, const std::vector<std::int64_t>& gone, std::int64_t length);

}  // namespace gattn::models
