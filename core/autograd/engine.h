// The backward engine: walks the graph from a root in dependency order and accumulates gradients.
#pragma once
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"

namespace gattn::autograd {

// Propagates `gradient` (same shape as `root`) back through root's history. Leaves that require
// grad accumulate into .grad. Unless retain_graph, each node's buffers are freed right after its
// backward ran, so a second call through the same graph throws AutogradError.
void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

// Called during run_backward with each leaf right after its last gradient contribution of that
// pass was accumulated (a leaf used twice fires once, after both), while the rest of backward still
// runs: data parallelism launches a gradient bucket's all-reduce from here. Per thread; an empty
// function (the default) turns it off and costs nothing.
using LeafGradReadyHook = std::function<void(const TensorImpl& leaf)>;
void set_leaf_grad_ready_hook(LeafGradReadyHook hook);

// Leaf gradients kept apart from the leaves' .grad, for threads that run backward passes through one
// set of parameters side by side (row-parallel training): while a thread has a sink installed, its
// passes add every leaf gradient into the sink instead of the leaf, so no two threads write one
// .grad; the owner then adds each sink into the leaves, in an order it fixes, so the sums do not
// depend on which thread finished first.
class LeafGradSink {
 public:
  // Adds g into this sink's gradient of `leaf`, the first one taken as .grad takes it: g's own
  // buffer when `adopt` (g is the engine's handle) and nothing else holds it, else a copy.
  void accumulate(const std::shared_ptr<TensorImpl>& leaf, const Tensor& g, bool adopt);
  // leaf.grad += each collected gradient (a leaf without a .grad takes it as it is), then empties
  // the sink. The leaves are independent: OpenMP threads take them in dynamic pieces.
  void add_into_leaves();
  bool empty() const { return grads_.empty(); }

 private:
  // (leaf, its gradient so far) in first-gradient order; the gradient slot works as .grad does.
  std::vector<std::pair<std::shared_ptr<TensorImpl>, std::shared_ptr<TensorImpl>>> grads_;
  std::unordered_map<const TensorImpl*, std::size_t> index_;
};

// Per thread: where this thread's backward passes put leaf gradients. Null (the default): .grad.
void set_leaf_grad_sink(LeafGradSink* sink);

}  // namespace gattn::autograd
