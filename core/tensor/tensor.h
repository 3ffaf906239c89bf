// Tensor: a shape, a dtype and a device over ref-counted contiguous storage, plus the autograd
// state (requires_grad, .grad, the node that produced it). Tensors are always contiguous; views
// (reshape, detach, a slice of leading rows) share storage, everything else copies.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor/dtype.h"
#include "core/tensor/storage.h"

namespace gattn {

using Shape = std::vector<std::int64_t>;

std::string shape_str(const Shape& s);  // "[2, 3, 4]"
std::int64_t shape_numel(const Shape& s);

namespace autograd {
class Node;
}

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  std::int64_t offset = 0;  // in elements
  Shape shape;
  DType dtype = DType::f32;
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;         // accumulated gradient of a leaf
  std::shared_ptr<autograd::Node> grad_fn;  // producer of a non-leaf
  int output_nr = 0;                        // which of grad_fn's outputs this is
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- factories (no autograd history) ----
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor scalar(double value, DType dtype = DType::f32);  // shape []
  // Copies values (converted to dtype) into a new tensor; throws ShapeError if counts differ.
  static Tensor from(const std::vector<double>& values, const Shape& shape, DType dtype = DType::f32);
  static Tensor from_ints(const std::vector<std::int32_t>& values, const Shape& shape);
  // arange(n) as i32 or float.
  static Tensor arange(std::int64_t n, DType dtype = DType::i32);

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  std::int64_t dim() const { return static_cast<std::int64_t>(impl().shape.size()); }
  std::int64_t size(std::int64_t d) const;  // negative d counts from the end
  std::int64_t numel() const { return shape_numel(impl().shape); }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  std::string str() const;  // "f32[2, 3]"

  // ---- data access (CPU; raw_data() is also the device pointer of a CUDA tensor, for kernels) ----
  template <class T>
  T* data() {
    check_access(dtype_of<T>());
    return static_cast<T*>(impl().storage->data()) + impl().offset;
  }
  template <class T>
  const T* data() const {
    check_access(dtype_of<T>());
    return static_cast<const T*>(impl().storage->data()) + impl().offset;
  }
  void* raw_data() const;
  // The typed pointer a kernel takes, wherever the data lives: dispatch code hands it to CUDA (or
  // CPU) kernels. Checks the dtype only; the host must never dereference it for a CUDA tensor
  // (data<T>() is the host's accessor, and refuses CUDA tensors).
  template <class T>
  T* kernel_data() const {
    check_dtype(dtype_of<T>());
    return static_cast<T*>(raw_data());
  }
  // These three read CUDA tensors too, by copying to the host (a synchronising copy: not for hot loops).
  double item() const;                       // the single value, converted to double
  std::vector<double> to_vector() const;     // all values converted to double
  double at(std::int64_t flat_index) const;  // one value converted to double

  // ---- copies and views (none of these record autograd history) ----
  Tensor to(DType dtype) const;  // converting copy (a plain alias when dtype is unchanged)
  // Copy onto `device` (a plain alias when already there), on the compute stream. Reaching the host
  // waits for the data; reaching the device returns once the source may be reused.
  Tensor to(Device device) const;
  Tensor clone() const;   // deep copy
  Tensor detach() const;  // shares storage, no history, requires_grad false
  // Same storage, new shape with equal numel (a view; no history). Autograd-aware reshape is ops::reshape.
  Tensor alias(const Shape& shape) const;
  // Rows [begin, end) of the leading dimension, as a view sharing storage (no history).
  Tensor alias_rows(std::int64_t begin, std::int64_t end) const;
  void copy_from(const Tensor& src);  // elementwise copy of equal shape, converting dtype, across devices
  // Moves this tensor's data onto `device` in place: every handle sharing it (a module's member and
  // its registry entry) sees the new storage. For leaves such as parameters; the gradient is dropped.
  void move_to_(Device device);
  void fill(double value);
  bool shares_storage_with(const Tensor& other) const;

  // ---- autograd ----
  bool requires_grad() const { return impl().requires_grad; }
  // Marks a leaf as a parameter/input whose gradient is accumulated into grad(). Returns *this.
  Tensor& set_requires_grad(bool on);
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  Tensor grad() const;             // undefined until a backward reaches this leaf
  void set_grad(const Tensor& g);  // replaces .grad (undefined clears it)
  void zero_grad() { impl().grad.reset(); }
  const std::shared_ptr<autograd::Node>& grad_fn() const { return impl().grad_fn; }
  // Runs the backward pass from this tensor. Without an argument the tensor must hold one element
  // (gradient 1). retain_graph keeps saved buffers so the graph can be walked again.
  void backward(bool retain_graph = false) const;
  void backward(const Tensor& gradient, bool retain_graph = false) const;

  TensorImpl& impl() const;
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  void check_access(DType want) const;
  void check_dtype(DType want) const;
  std::shared_ptr<TensorImpl> impl_;
};

}  // namespace gattn
