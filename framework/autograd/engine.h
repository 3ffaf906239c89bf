// The backward engine: walks the graph from a root in dependency order and accumulates gradients.
#pragma once
#include <functional>

#include "framework/tensor/tensor.h"

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

}  // namespace gattn::autograd
