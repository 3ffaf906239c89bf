// A node of the backward graph: one per recorded op output. It holds the edges to its inputs'
// producers (or to leaf tensors) and a backward function that captured what it needs.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"

namespace gattn::autograd {

class Node;

// Where an input's gradient goes: output `output_nr` of the node that produced it, or the leaf
// that accumulates it. Both empty means the input needs no gradient.
struct Edge {
  std::shared_ptr<Node> fn;
  int output_nr = 0;
  std::shared_ptr<TensorImpl> leaf;
  bool needs_grad() const { return fn || leaf; }
};

// Gradient w.r.t. the op's output -> gradients w.r.t. each input (same order as the inputs;
// an undefined Tensor where needs[i] is false or the input has no gradient).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output, const std::vector<bool>& needs)>;
// The same for ops with several outputs: grad_outputs[k] is undefined when nothing downstream of
// output k needed a gradient (treat it as zero).
using MultiBackwardFn =
    std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs, const std::vector<bool>& needs)>;

struct OutputMeta {
  Shape shape;
  DType dtype;
  Device device;  // where a missing gradient's zeros must live
};

class Node {
 public:
  Node(std::string name, std::vector<Edge> inputs, MultiBackwardFn fn, std::vector<OutputMeta> outputs)
      : name_(std::move(name)), inputs_(std::move(inputs)), fn_(std::move(fn)), outputs_(std::move(outputs)) {}

  const std::string& name() const { return name_; }
  const std::vector<Edge>& inputs() const { return inputs_; }
  const std::vector<OutputMeta>& outputs() const { return outputs_; }

  // Runs the backward function. Throws AutogradError when the buffers were already released.
  std::vector<Tensor> apply(const std::vector<Tensor>& grad_outputs);
  // Frees the saved buffers (the captured state of the backward function) and the edges.
  void release();

 private:
  std::string name_;
  std::vector<Edge> inputs_;
  MultiBackwardFn fn_;
  std::vector<OutputMeta> outputs_;
  bool released_ = false;
};

// Attaches history to `output` when grad mode is on and any input requires grad; otherwise returns
// `output` untouched. The backward function must capture only detached tensors (x.detach()):
// capturing the output itself with its history would make a reference cycle.
Tensor record(const char* op_name, Tensor output, const std::vector<Tensor>& inputs, BackwardFn fn);
// The same for an op with several outputs (e.g. attention's output and its entropy): one node, each
// returned tensor refers to its own output slot.
std::vector<Tensor> record_multi(const char* op_name, const std::vector<Tensor>& outputs,
                                 const std::vector<Tensor>& inputs, MultiBackwardFn fn);

// True when `t` will receive a gradient (it is a leaf requiring grad or has history).
inline bool needs_grad(const Tensor& t) { return t.defined() && (t.requires_grad() || !t.is_leaf()); }

}  // namespace gattn::autograd
