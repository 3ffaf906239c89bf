// Row-major f32 copies: every value moves, none is computed.
#include "models/hf/hf_layout.h"

#include <cstring>

namespace gattn::models::hf_layout {

Tensor transposed(const Tensor& t) {
  const std::int64_t r = t.size(0), c = t.size(1);
  Tensor out = Tensor::empty({c, r}, DType::f32);
  const float* src = t.data<float>();
  float* dst = out.data<float>();
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < c; ++j) dst[j * r + i] = src[i * c + j];
  return out;
}

Tensor rows(const Tensor& t, std::int64_t first, std::int64_t count) {
  Shape shape = t.shape();
  const std::int64_t width = t.numel() / shape[0];
  shape[0] = count;
  Tensor out = Tensor::empty(shape, DType::f32);
  std::memcpy(out.data<float>(), t.data<float>() + first * width, static_cast<std::size_t>(count * width) * 4);
  return out;
}

Tensor stacked(const std::vector<Tensor>& parts) {
  Shape shape = parts.front().shape();
  shape[0] = 0;
  for (const Tensor& p : parts) shape[0] += p.size(0);
  Tensor out = Tensor::empty(shape, DType::f32);
  float* dst = out.data<float>();
  for (const Tensor& p : parts) {
    std::memcpy(dst, p.data<float>(), static_cast<std::size_t>(p.numel()) * 4);
    dst += p.numel();
  }
  return out;
}

}  // namespace gattn::models::hf_layout
