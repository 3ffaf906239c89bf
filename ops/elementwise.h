// Broadcasting arithmetic: add, sub, mul, div (autograd-aware), scalar variants, and in-place
// updates for optimizers and gradient accumulation (these record no history).
#pragma once
#include "core/tensor/tensor.h"

namespace gattn::ops {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& a);
Tensor add_scalar(const Tensor& a, double s);
Tensor mul_scalar(const Tensor& a, double s);

// The sum of g over broadcast dimensions so that the result has `shape` (no history).
Tensor sum_to(const Tensor& g, const Shape& shape);

// In place, no history: a += b (b broadcast to a), a += alpha * b (same shape), a *= s.
void add_(Tensor& a, const Tensor& b);
void axpy_(Tensor& a, double alpha, const Tensor& b);
void scale_(Tensor& a, double s);

}  // namespace gattn::ops

namespace gattn {
inline Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return ops::sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return ops::mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return ops::div(a, b); }
inline Tensor operator-(const Tensor& a) { return ops::neg(a); }
inline Tensor operator*(const Tensor& a, double s) { return ops::mul_scalar(a, s); }
inline Tensor operator*(double s, const Tensor& a) { return ops::mul_scalar(a, s); }
inline Tensor operator+(const Tensor& a, double s) { return ops::add_scalar(a, s); }
}  // namespace gattn
