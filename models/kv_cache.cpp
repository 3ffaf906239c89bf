// KVCache allocation and the row copies that append new positions.
#include "models/kv_cache.h"

#include <cstring>
#include <string>

#include "framework/tensor/error.h"

namespace gattn::models {

KVCache::KVCache(const ModelConfig& config, std::int64_t batch) : batch_(batch), capacity_(config.block_size) {
  if (batch < 1) throw ValueError("KVCache: batch must be >= 1, got " + std::to_string(batch));
  const Shape shape{batch, config.n_head, capacity_, config.head_dim()};
  layers.resize(static_cast<std::size_t>(config.n_layer));
  for (LayerKVCache& l : layers) {
    l.k = Tensor::zeros(shape, config.dtype);
    l.v = Tensor::zeros(shape, config.dtype);
  }
}

void KVCache::advance(std::int64_t n) {
  if (n < 0 || length_ + n > capacity_)
    throw ShapeError("KVCache: " + std::to_string(length_) + " + " + std::to_string(n) +
                     " positions exceed the capacity " + std::to_string(capacity_) + " (model.block_size)");
  length_ += n;
}

void write_cache_rows(Tensor& dst, const Tensor& src, std::int64_t pos) {
  const bool rows_of_vectors = dst.dim() == 4;
  if ((dst.dim() != 3 && dst.dim() != 4) || src.dim() != dst.dim() || src.dtype() != dst.dtype() ||
      src.size(0) != dst.size(0) || src.size(1) != dst.size(1) || (rows_of_vectors && src.size(3) != dst.size(3)))
    throw ShapeError("write_cache_rows: cannot write " + src.str() + " into cache " + dst.str());
  if (dst.device() != Device::cpu || src.device() != Device::cpu)
    throw DeviceError("write_cache_rows: generation runs on the CPU; got " + src.str() + " and cache " + dst.str());
  const std::int64_t n = src.size(2), capacity = dst.size(2);
  if (pos < 0 || pos + n > capacity)
    throw ShapeError("write_cache_rows: positions " + std::to_string(pos) + " … " + std::to_string(pos + n - 1) +
                     " exceed the cache capacity " + std::to_string(capacity));
  const std::int64_t row = rows_of_vectors ? dst.size(3) : 1;
  const std::size_t elem = dtype_size(dst.dtype());
  const auto* from = static_cast<const char*>(src.raw_data());
  auto* to = static_cast<char*>(dst.raw_data());
  for (std::int64_t bh = 0; bh < dst.size(0) * dst.size(1); ++bh)
    std::memcpy(to + static_cast<std::size_t>((bh * capacity + pos) * row) * elem,
                from + static_cast<std::size_t>(bh * n * row) * elem, static_cast<std::size_t>(n * row) * elem);
}

Tensor& cache_term(Tensor& slot, const LayerKVCache& cache) {
  if (!slot.defined()) slot = Tensor::zeros({cache.k.size(0), cache.k.size(1), cache.k.size(2)}, cache.k.dtype());
  return slot;
}

}  // namespace gattn::models
