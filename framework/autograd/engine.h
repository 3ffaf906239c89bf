// The backward engine: walks the graph from a root in dependency order and accumulates gradients.
#pragma once
#include "framework/tensor/tensor.h"

namespace gattn::autograd {

// Propagates `gradient` (same shape as `root`) back through root's history. Leaves that require
// grad accumulate into .grad. Unless retain_graph, each node's buffers are freed right after its
// backward ran, so a second call through the same graph throws AutogradError.
void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

}  // namespace gattn::autograd
