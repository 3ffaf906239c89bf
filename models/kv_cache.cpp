// KVCache allocation, the row copies that append new positions and the row removal of eviction.
#include "models/kv_cache.h"

#include <cstring>
#include <string>

#include "core/tensor/error.h"

namespace gattn::models {

KVCache::KVCache(const ModelConfig& config, std::int64_t batch, const InferenceOptions& options)
    : batch_(batch), capacity_(capacity_for(config, options)), options_(options) {
  if (batch < 1) throw ValueError("KVCache: batch must be >= 1, got " + std::to_string(batch));
  if (capacity_ < 1) throw ValueError("KVCache: the KV budget must be >= 1, got " + std::to_string(capacity_));
  const Shape shape{batch, config.kv_heads(), capacity_, config.head_dim()};
  layers.resize(static_cast<std::size_t>(config.n_layer));
  for (LayerKVCache& l : layers) {
    l.query_heads = config.n_head;
    l.k = Tensor::zeros(shape, config.dtype);
    l.v = Tensor::zeros(shape, config.dtype);
    if (options.bounded()) l.key_positions = Tensor::zeros({batch, config.n_head, capacity_}, DType::i32);
    if (options.policy == KVPolicy::h2o)
      l.key_attention = Tensor::zeros({batch, config.n_head, capacity_}, config.dtype);
  }
}

void KVCache::clear() {
  length_ = 0;
  position_ = 0;
  // The per-row terms need no reset: GatedAttention::forward_cached clears each row it writes. The
  // source's memory (cross) stays: a restart goes on with the same source.
  for (LayerKVCache& l : layers) l.gate_state.clear();
}

void KVCache::start_at(std::int64_t position) {
  if (length_ != 0 || position < 0)
    throw ShapeError("KVCache: can start at position " + std::to_string(position) + " only when empty and >= 0");
  position_ = position;
}

void KVCache::advance(std::int64_t n) {
  if (n < 0 || length_ + n > capacity_)
    throw ShapeError("KVCache: " + std::to_string(length_) + " + " + std::to_string(n) + " rows exceed the capacity " +
                     std::to_string(capacity_) + (options_.bounded() ? " (the KV budget)" : " (model.block_size)"));
  length_ += n;
  position_ += n;
}

void KVCache::shrink(std::int64_t count) {
  if (count < 0 || count > length_)
    throw ShapeError("KVCache: cannot drop " + std::to_string(count) + " of " + std::to_string(length_) + " rows");
  length_ -= count;
}

std::int64_t KVCache::bytes() const {
  std::int64_t total = 0;
  const auto add = [&](const Tensor& t) {
    if (t.defined()) total += t.numel() * static_cast<std::int64_t>(dtype_size(t.dtype()));
  };
  for (const LayerKVCache& l : layers) {
    for (const Tensor* t : l.per_row()) add(*t);
    for (const auto& [kind, t] : l.gate_state) add(t);
  }
  for (const CrossMemory& c : cross)
    for (const Tensor* t : {&c.memory, &c.k, &c.v, &c.terms.col_bias}) add(*t);
  return total;
}

void write_cache_rows(Tensor& dst, const Tensor& src, std::int64_t row) {
  const bool rows_of_vectors = dst.dim() == 4;
  if ((dst.dim() != 3 && dst.dim() != 4) || src.dim() != dst.dim() || src.dtype() != dst.dtype() ||
      src.size(0) != dst.size(0) || src.size(1) != dst.size(1) || (rows_of_vectors && src.size(3) != dst.size(3)))
    throw ShapeError("write_cache_rows: cannot write " + src.str() + " into cache " + dst.str());
  if (dst.device() != Device::cpu || src.device() != Device::cpu)
    throw DeviceError("write_cache_rows: generation runs on the CPU; got " + src.str() + " and cache " + dst.str());
  const std::int64_t n = src.size(2), capacity = dst.size(2);
  if (row < 0 || row + n > capacity)
    throw ShapeError("write_cache_rows: rows " + std::to_string(row) + " … " + std::to_string(row + n - 1) +
                     " exceed the cache capacity " + std::to_string(capacity));
  const std::int64_t width = rows_of_vectors ? dst.size(3) : 1;
  const std::size_t elem = dtype_size(dst.dtype());
  const auto* from = static_cast<const char*>(src.raw_data());
  auto* to = static_cast<char*>(dst.raw_data());
  for (std::int64_t bh = 0; bh < dst.size(0) * dst.size(1); ++bh)
    std::memcpy(to + static_cast<std::size_t>((bh * capacity + row) * width) * elem,
                from + static_cast<std::size_t>(bh * n * width) * elem, static_cast<std::size_t>(n * width) * elem);
}

Tensor& cache_term(Tensor& slot, const LayerKVCache& cache) {
  if (!slot.defined()) slot = Tensor::zeros({cache.k.size(0), cache.query_heads, cache.k.size(2)}, cache.k.dtype());
  return slot;
}

namespace {

// Compacts head bh's rows of `t` [B, H, capacity(, d)]: the rows not in `gone` move up in order.
void remove_tensor_rows(Tensor& t, std::int64_t bh, const std::vector<std::int64_t>& gone, std::int64_t length) {
  if (!t.defined()) return;
  const std::int64_t capacity = t.size(2), width = t.dim() == 4 ? t.size(3) : 1;
  const std::size_t row_bytes = static_cast<std::size_t>(width) * dtype_size(t.dtype());
  auto* base = static_cast<char*>(t.raw_data()) + static_cast<std::size_t>(bh * capacity) * row_bytes;
  std::int64_t to = gone.front();
  std::size_t g = 0;
  for (std::int64_t from = gone.front(); from < length; ++from) {
    if (g < gone.size() && gone[g] == from) {
      ++g;
      continue;
    }
    std::memmove(base + static_cast<std::size_t>(to) * row_bytes, base + static_cast<std::size_t>(from) * row_bytes,
                 row_bytes);
    ++to;
  }
}

}  // namespace

void remove_rows(LayerKVCache& cache, std::int64_t bh, const std::vector<std::int64_t>& gone, std::int64_t length) {
  if (gone.empty()) return;
  // bh indexes the key heads [B, H_kv]; a per-row term has the group's G = H/H_kv query heads.
  const std::int64_t kv_heads = cache.k.size(1), group = cache.query_heads / kv_heads;
  const std::int64_t b = bh / kv_heads, g = bh % kv_heads;
  for (Tensor* t : cache.per_row()) {
    if (!t->defined()) continue;
    if (t == &cache.k || t == &cache.v) {
      remove_tensor_rows(*t, bh, gone, length);
      continue;
    }
    for (std::int64_t h = g * group; h < (g + 1) * group; ++h)
      remove_tensor_rows(*t, b * cache.query_heads + h, gone, length);
  }
}

}  // namespace gattn::models
