// Generator fills: element i of a draw starting at offset o uses Philox word o + i.
#include "core/tensor/random.h"

#include <cmath>

#include "core/tensor/philox.h"

namespace gattn {

std::uint64_t Generator::reserve(std::uint64_t n) {
  std::uint64_t start = state_.offset;
  state_.offset += (n + 3) / 4 * 4;
  return start;
}

namespace {

template <class Store>
void for_each_word(const GeneratorState& s, std::uint64_t start, std::int64_t n, Store&& store) {
  // Blocks are independent, so the loop parallelises without changing any value.
  std::int64_t blocks = (n + 3) / 4;
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (std::int64_t b = 0; b < blocks; ++b) {
    Philox4 r = philox_block(s.seed, s.stream, start / 4 + static_cast<std::uint64_t>(b));
    store(b * 4, r);
  }
}

template <class T>
void store_value(Tensor& t, std::int64_t i, double v) {
  if constexpr (std::is_same_v<T, bf16>)
    t.data<bf16>()[i] = float_to_bf16(static_cast<float>(v));
  else
    t.data<T>()[i] = static_cast<T>(v);
}

template <class Fn>
void dispatch_storage_float(const Tensor& t, const char* who, Fn&& fn) {
  switch (t.dtype()) {
    case DType::f32:
      fn.template operator()<float>();
      return;
    case DType::f64:
      fn.template operator()<double>();
      return;
    case DType::bf16:
      fn.template operator()<bf16>();
      return;
    default:
      throw DTypeError(std::string(who) + ": expected a floating tensor, got " + t.str());
  }
}

}  // namespace

void Generator::uniform_(Tensor& t, double low, double high) {
  std::int64_t n = t.numel();
  std::uint64_t start = reserve(static_cast<std::uint64_t>(n));
  dispatch_storage_float(t, "uniform_", [&]<class T>() {
    for_each_word(state_, start, n, [&](std::int64_t base, const Philox4& r) {
      for (int w = 0; w < 4 && base + w < n; ++w)
        store_value<T>(t, base + w, low + (high - low) * static_cast<double>(philox_uniform(r.v[w])));
    });
  });
}

void Generator::normal_(Tensor& t, double mean, double std) {
  std::int64_t n = t.numel();
  std::uint64_t start = reserve(static_cast<std::uint64_t>(n));
  dispatch_storage_float(t, "normal_", [&]<class T>() {
    for_each_word(state_, start, n, [&](std::int64_t base, const Philox4& r) {
      float z[4];
      philox_normal_pair(r.v[0], r.v[1], &z[0], &z[1]);
      philox_normal_pair(r.v[2], r.v[3], &z[2], &z[3]);
      for (int w = 0; w < 4 && base + w < n; ++w) store_value<T>(t, base + w, mean + std * static_cast<double>(z[w]));
    });
  });
}

void Generator::logistic_(Tensor& t) {
  std::int64_t n = t.numel();
  std::uint64_t start = reserve(static_cast<std::uint64_t>(n));
  dispatch_storage_float(t, "logistic_", [&]<class T>() {
    for_each_word(state_, start, n, [&](std::int64_t base, const Philox4& r) {
      for (int w = 0; w < 4 && base + w < n; ++w) {
        // Same mapping as the fused pair kernel's in-tile noise: u = (word >> 8 + 0.5) / 2^24.
        double u = (static_cast<double>(r.v[w] >> 8) + 0.5) * (1.0 / 16777216.0);
        store_value<T>(t, base + w, std::log(u) - std::log1p(-u));
      }
    });
  });
}

void Generator::randint_(Tensor& t, std::int64_t n_values) {
  if (t.dtype() != DType::i32) throw DTypeError("randint_: expected an i32 tensor, got " + t.str());
  if (n_values <= 0) throw ValueError("randint_: upper bound must be positive, got " + std::to_string(n_values));
  std::int64_t n = t.numel();
  std::uint64_t start = reserve(static_cast<std::uint64_t>(n));
  std::int32_t* out = t.data<std::int32_t>();
  for_each_word(state_, start, n, [&](std::int64_t base, const Philox4& r) {
    for (int w = 0; w < 4 && base + w < n; ++w)
      out[base + w] =
          static_cast<std::int32_t>((static_cast<std::uint64_t>(r.v[w]) * static_cast<std::uint64_t>(n_values)) >> 32);
  });
}

double Generator::next_uniform() {
  std::uint64_t start = reserve(1);
  Philox4 r = philox_block(state_.seed, state_.stream, start / 4);
  return static_cast<double>(philox_uniform(r.v[0]));
}

}  // namespace gattn
