// A node of the backward graph: one per recorded op output. It holds the edges to its inputs'
// producers (or to leaf tensors) and a backward function that captured what it needs.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/tensor/tensor.h"

namespace gattn::autograd {

class Node;

// Where an input's gradient goes: the node that produced it, or the leaf that accumulates it.
// Both empty means the input needs no gradient.
struct Edge {
  std::shared_ptr<Node> fn;
  std::shared_ptr<TensorImpl> leaf;
  bool needs_grad() const { return fn || leaf; }
};

// Gradient w.r.t. the op's output -> gradients w.r.t. each input (same order as the inputs;
// an undefined Tensor where needs[i] is false or the input has no gradient).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output, const std::vector<bool>& needs)>;

class Node {
 public:
  Node(std::string name, std::vector<Edge> inputs, BackwardFn fn, Shape output_shape, DType output_dtype)
      : name_(std::move(name)), inputs_(std::move(inputs)), fn_(std::move(fn)),
        output_shape_(std::move(output_shape)), output_dtype_(output_dtype) {}

  const std::string& name() const { return name_; }
  const std::vector<Edge>& inputs() const { return inputs_; }
  const Shape& output_shape() const { return output_shape_; }
  DType output_dtype() const { return output_dtype_; }

  // Runs the backward function. Throws AutogradError when the buffers were already released.
  std::vector<Tensor> apply(const Tensor& grad_output);
  // Frees the saved buffers (the captured state of the backward function) and the edges.
  void release();

 private:
  std::string name_;
  std::vector<Edge> inputs_;
  BackwardFn fn_;
  Shape output_shape_;
  DType output_dtype_;
  bool released_ = false;
};

// Attaches history to `output` when grad mode is on and any input requires grad; otherwise returns
// `output` untouched. The backward function must capture only detached tensors (x.detach()):
// capturing the output itself with its history would make a reference cycle.
Tensor record(const char* op_name, Tensor output, const std::vector<Tensor>& inputs, BackwardFn fn);

// True when `t` will receive a gradient (it is a leaf requiring grad or has history).
inline bool needs_grad(const Tensor& t) { return t.defined() && (t.requires_grad() || !t.is_leaf()); }

}  // namespace gattn::autograd
