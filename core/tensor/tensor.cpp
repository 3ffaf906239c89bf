// Tensor factories, metadata, conversions and views.
#include "core/tensor/tensor.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <type_traits>

#include "core/autograd/engine.h"
#include "core/cuda/copy.h"
#include "core/cuda/device_elements.h"

namespace gattn {

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

std::int64_t shape_numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

namespace {

void check_shape(const Shape& shape, const char* who) {
  for (auto d : shape)
    if (d < 0) throw ShapeError(std::string(who) + ": negative dimension in shape " + shape_str(shape));
}

// Element conversions through a common path; bf16 goes via float.
template <class T>
double load_as_double(const void* p, std::int64_t i) {
  if constexpr (std::is_same_v<T, bf16>)
    return bf16_to_float(static_cast<const bf16*>(p)[i]);
  else
    return static_cast<double>(static_cast<const T*>(p)[i]);
}
template <class T>
void store_from_double(void* p, std::int64_t i, double v) {
  if constexpr (std::is_same_v<T, bf16>)
    static_cast<bf16*>(p)[i] = float_to_bf16(static_cast<float>(v));
  else
    static_cast<T*>(p)[i] = static_cast<T>(v);
}

template <class Fn>
decltype(auto) dispatch_any(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32:
      return fn.template operator()<float>();
    case DType::f64:
      return fn.template operator()<double>();
    case DType::i32:
      return fn.template operator()<std::int32_t>();
    case DType::bf16:
      return fn.template operator()<bf16>();
  }
  throw DTypeError("unknown dtype");
}

template <class Src, class Dst>
void convert(const void* src, void* dst, std::int64_t n) {
  if constexpr (std::is_same_v<Src, Dst>) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(Src));
  } else if constexpr (std::is_same_v<Src, bf16> && std::is_same_v<Dst, float>) {
    for (std::int64_t i = 0; i < n; ++i) static_cast<float*>(dst)[i] = bf16_to_float(static_cast<const bf16*>(src)[i]);
  } else if constexpr (std::is_same_v<Src, float> && std::is_same_v<Dst, bf16>) {
    for (std::int64_t i = 0; i < n; ++i) static_cast<bf16*>(dst)[i] = float_to_bf16(static_cast<const float*>(src)[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) store_from_double<Dst>(dst, i, load_as_double<Src>(src, i));
  }
}

}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  check_shape(shape, "Tensor::empty");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype), device);
  impl->shape = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  const std::size_t bytes = static_cast<std::size_t>(t.numel()) * dtype_size(dtype);
  if (device == Device::cuda)
    cuda::zero_device_bytes(t.raw_data(), bytes);
  else
    std::memset(t.raw_data(), 0, bytes);
  return t;
}

Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill(value);
  return t;
}

Tensor Tensor::scalar(double value, DType dtype) { return full({}, value, dtype); }

Tensor Tensor::from(const std::vector<double>& values, const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  if (static_cast<std::int64_t>(values.size()) != t.numel())
    throw ShapeError("Tensor::from: " + std::to_string(values.size()) + " values for shape " + shape_str(shape));
  dispatch_any(dtype, [&]<class T>() { convert<double, T>(values.data(), t.raw_data(), t.numel()); });
  return t;
}

Tensor Tensor::from_ints(const std::vector<std::int32_t>& values, const Shape& shape) {
  Tensor t = empty(shape, DType::i32);
  if (static_cast<std::int64_t>(values.size()) != t.numel())
    throw ShapeError("Tensor::from_ints: " + std::to_string(values.size()) + " values for shape " + shape_str(shape));
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(std::int32_t));
  return t;
}

Tensor Tensor::arange(std::int64_t n, DType dtype) {
  Tensor t = empty({n}, dtype);
  dispatch_any(dtype, [&]<class T>() {
    for (std::int64_t i = 0; i < n; ++i) store_from_double<T>(t.raw_data(), i, static_cast<double>(i));
  });
  return t;
}

TensorImpl& Tensor::impl() const {
  if (!impl_) throw Error("use of an undefined Tensor");
  return *impl_;
}

std::int64_t Tensor::size(std::int64_t d) const {
  std::int64_t n = dim();
  if (d < -n || d >= n)
    throw ValueError("Tensor::size: dimension " + std::to_string(d) + " out of range for shape " + shape_str(shape()));
  return shape()[static_cast<std::size_t>(d < 0 ? d + n : d)];
}

std::string Tensor::str() const {
  if (!impl_) return "undefined";
  return std::string(dtype_name(dtype())) + shape_str(shape());
}

void Tensor::check_dtype(DType want) const {
  if (impl().dtype != want)
    throw DTypeError(std::string("Tensor::data: tensor is ") + dtype_name(impl().dtype) + ", accessed as " +
                     dtype_name(want));
}

void Tensor::check_access(DType want) const {
  check_dtype(want);
  if (device() != Device::cpu)
    throw DeviceError("Tensor::data: host access to a " + std::string(device_name(device())) + " tensor");
}

void* Tensor::raw_data() const {
  return static_cast<char*>(impl().storage->data()) +
         impl().offset * static_cast<std::int64_t>(dtype_size(impl().dtype));
}

double Tensor::at(std::int64_t i) const {
  if (i < 0 || i >= numel()) throw ValueError("Tensor::at: index " + std::to_string(i) + " out of range for " + str());
  if (device() != Device::cpu) {
    // Copy just the one element to the host.
    const std::size_t size = dtype_size(dtype());
    alignas(8) unsigned char value[8];
    cuda::copy_bytes(value, Device::cpu, static_cast<const char*>(raw_data()) + static_cast<std::size_t>(i) * size,
                     device(), size);
    return dispatch_any(dtype(), [&]<class T>() { return load_as_double<T>(value, 0); });
  }
  return dispatch_any(dtype(), [&]<class T>() { return load_as_double<T>(raw_data(), i); });
}

double Tensor::item() const {
  if (numel() != 1) throw ShapeError("Tensor::item: tensor " + str() + " does not hold exactly one value");
  return at(0);
}

std::vector<double> Tensor::to_vector() const {
  if (device() != Device::cpu) return to(Device::cpu).to_vector();
  std::vector<double> out(static_cast<std::size_t>(numel()));
  dispatch_any(dtype(), [&]<class T>() { convert<T, double>(raw_data(), out.data(), numel()); });
  return out;
}

Tensor Tensor::to(DType target) const {
  if (target == dtype()) return *this;
  Tensor out = empty(shape(), target, device());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to(Device target) const {
  if (target == device()) return *this;
  Tensor out = empty(shape(), dtype(), target);
  cuda::copy_bytes(out.raw_data(), target, raw_data(), device(),
                   static_cast<std::size_t>(numel()) * dtype_size(dtype()));
  return out;
}

void Tensor::move_to_(Device target) {
  if (target == device()) return;
  if (!is_leaf())
    throw ValueError("move_to_: only a leaf tensor (a parameter, an input) can move in place, got " + str());
  const Tensor moved = to(target);
  impl().storage = moved.impl().storage;
  impl().offset = moved.impl().offset;
  impl().grad.reset();
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), device());
  cuda::copy_bytes(out.raw_data(), device(), raw_data(), device(),
                   static_cast<std::size_t>(numel()) * dtype_size(dtype()));
  return out;
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = this->impl().storage;
  impl->offset = this->impl().offset;
  impl->shape = this->impl().shape;
  impl->dtype = this->impl().dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::alias(const Shape& new_shape) const {
  check_shape(new_shape, "Tensor::alias");
  if (shape_numel(new_shape) != numel())
    throw ShapeError("reshape: cannot view " + shape_str(shape()) + " (" + std::to_string(numel()) + " elements) as " +
                     shape_str(new_shape));
  Tensor out = detach();
  out.impl().shape = new_shape;
  return out;
}

Tensor Tensor::alias_rows(std::int64_t begin, std::int64_t end) const {
  if (dim() == 0) throw ShapeError("alias_rows: tensor " + str() + " has no leading dimension");
  if (begin < 0 || end < begin || end > shape()[0])
    throw ValueError("alias_rows: rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") out of range for " +
                     str());
  std::int64_t row = numel() / std::max<std::int64_t>(shape()[0], 1);
  Tensor out = detach();
  out.impl().offset += begin * row;
  out.impl().shape[0] = end - begin;
  return out;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.shape() != shape())
    throw ShapeError("copy_from: source " + shape_str(src.shape()) + " vs destination " + shape_str(shape()));
  if (src.device() != Device::cpu || device() != Device::cpu) {
    if (src.dtype() == dtype()) {
      cuda::copy_bytes(raw_data(), device(), src.raw_data(), src.device(),
                       static_cast<std::size_t>(numel()) * dtype_size(dtype()));
      return;
    }
    // Converting across devices: move first (in the source type), then convert where the data is.
    const Tensor here = src.device() == device() ? src : src.to(device());
    if (device() == Device::cpu) {
      copy_from(here);
      return;
    }
    cuda::convert_device_elements(raw_data(), dtype(), here.raw_data(), here.dtype(),
                                  static_cast<std::size_t>(numel()));
    return;
  }
  dispatch_any(src.dtype(), [&]<class S>() {
    dispatch_any(dtype(), [&]<class D>() { convert<S, D>(src.raw_data(), raw_data(), numel()); });
  });
}

void Tensor::fill(double value) {
  if (device() != Device::cpu) {
    cuda::fill_device_elements(raw_data(), dtype(), value, static_cast<std::size_t>(numel()));
    return;
  }
  dispatch_any(dtype(), [&]<class T>() {
    void* p = raw_data();
    std::int64_t n = numel();
    if constexpr (std::is_same_v<T, bf16>) {
      bf16 h = float_to_bf16(static_cast<float>(value));
      for (std::int64_t i = 0; i < n; ++i) static_cast<bf16*>(p)[i] = h;
    } else {
      T v = static_cast<T>(value);
      for (std::int64_t i = 0; i < n; ++i) static_cast<T*>(p)[i] = v;
    }
  });
}

bool Tensor::shares_storage_with(const Tensor& other) const { return impl().storage == other.impl().storage; }

Tensor& Tensor::set_requires_grad(bool on) {
  if (on && !is_floating(dtype()))
    throw DTypeError("set_requires_grad: only floating tensors can require grad, got " + str());
  if (!is_leaf()) throw AutogradError("set_requires_grad: only leaves (tensors not produced by an op) can be marked");
  impl().requires_grad = on;
  return *this;
}

Tensor Tensor::grad() const { return impl().grad ? Tensor(impl().grad) : Tensor(); }

void Tensor::set_grad(const Tensor& g) {
  if (g.defined() && g.shape() != shape())
    throw ShapeError("set_grad: gradient " + shape_str(g.shape()) + " for tensor " + shape_str(shape()));
  impl().grad = g.defined() ? g.impl_ptr() : nullptr;
}

void Tensor::backward(bool retain_graph) const {
  if (numel() != 1)
    throw AutogradError("backward: implicit gradient needs a one-element tensor, got " + str() + "; pass a gradient");
  autograd::run_backward(*this, Tensor::ones(shape(), dtype(), device()), retain_graph);
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::run_backward(*this, gradient, retain_graph);
}

}  // namespace gattn
