// Backward engine: dependency counting over the node graph, then a ready-queue walk so every
// node runs once, after all gradients w.r.t. its output have been summed.
#include "framework/autograd/engine.h"

#include <unordered_map>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/node.h"
#include "ops/elementwise.h"

namespace gattn::autograd {

namespace {
thread_local bool g_grad_enabled = true;

// Adds g into leaf->grad. The first gradient is copied: it may be the caller's tensor or share
// storage with another gradient (views), and later accumulation writes into .grad in place.
void accumulate_into_leaf(TensorImpl& leaf, const Tensor& g) {
  if (g.shape() != leaf.shape)
    throw AutogradError("backward: gradient " + shape_str(g.shape()) + " for a leaf of shape " + shape_str(leaf.shape));
  Tensor grad = g.dtype() == leaf.dtype ? g : g.to(leaf.dtype);
  if (!leaf.grad) {
    leaf.grad = (grad.dtype() == g.dtype() ? grad.clone() : grad).impl_ptr();
    return;
  }
  Tensor acc(leaf.grad);
  ops::add_(acc, grad);
}
}  // namespace

bool grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool on) { g_grad_enabled = on; }

std::vector<Tensor> Node::apply(const Tensor& grad_output) {
  if (released_)
    throw AutogradError("backward: the graph through '" + name_ +
                        "' was already freed by an earlier backward; pass retain_graph=true to walk it twice");
  std::vector<bool> needs(inputs_.size());
  for (std::size_t i = 0; i < inputs_.size(); ++i) needs[i] = inputs_[i].needs_grad();
  std::vector<Tensor> grads = fn_(grad_output, needs);
  if (grads.size() != inputs_.size())
    throw AutogradError("backward of '" + name_ + "' returned " + std::to_string(grads.size()) + " gradients for " +
                        std::to_string(inputs_.size()) + " inputs");
  return grads;
}

void Node::release() {
  fn_ = nullptr;
  inputs_.clear();
  released_ = true;
}

Tensor record(const char* op_name, Tensor output, const std::vector<Tensor>& inputs, BackwardFn fn) {
  if (!grad_enabled()) return output;
  std::vector<Edge> edges(inputs.size());
  bool any = false;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined()) continue;
    if (x.grad_fn()) edges[i].fn = x.grad_fn();
    else if (x.requires_grad()) edges[i].leaf = x.impl_ptr();
    any = any || edges[i].needs_grad();
  }
  if (!any) return output;
  // The output may alias an input's storage (views); it still gets its own impl and history.
  Tensor result = output.detach();
  result.impl().grad_fn = std::make_shared<Node>(op_name, std::move(edges), std::move(fn), output.shape(), output.dtype());
  return result;
}

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  if (!gradient.defined() || gradient.shape() != root.shape())
    throw AutogradError("backward: gradient " + (gradient.defined() ? shape_str(gradient.shape()) : std::string("undefined")) +
                        " does not match the root's shape " + shape_str(root.shape()));
  NoGradGuard no_grad;  // gradients are plain tensors: no higher-order graphs
  if (!root.grad_fn()) {
    if (!root.requires_grad()) throw AutogradError("backward: tensor " + root.str() + " does not require grad and has no history");
    accumulate_into_leaf(root.impl(), gradient);
    return;
  }

  // Count, for every node reachable from the root, how many edges point at it.
  std::unordered_map<Node*, int> pending;
  std::vector<Node*> stack{root.grad_fn().get()};
  pending[root.grad_fn().get()] = 0;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->inputs()) {
      if (!e.fn) continue;
      auto [it, inserted] = pending.try_emplace(e.fn.get(), 0);
      ++it->second;
      if (inserted) stack.push_back(e.fn.get());
    }
  }

  // Keep every node alive while we walk, even after release() drops the edges that owned them.
  std::unordered_map<Node*, std::shared_ptr<Node>> alive;
  std::unordered_map<Node*, Tensor> grads;
  grads[root.grad_fn().get()] = gradient;
  alive[root.grad_fn().get()] = root.grad_fn();
  std::vector<Node*> ready{root.grad_fn().get()};
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    Tensor g = std::move(grads[n]);
    grads.erase(n);
    std::vector<Tensor> input_grads = n->apply(g);
    g = Tensor();
    const std::vector<Edge> edges = n->inputs();
    if (!retain_graph) n->release();
    for (std::size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      const Tensor& gi = input_grads[i];
      if (e.leaf) {
        if (gi.defined()) accumulate_into_leaf(*e.leaf, gi);
      } else if (e.fn) {
        Node* next = e.fn.get();
        if (gi.defined()) {
          if (gi.shape() != next->output_shape())
            throw AutogradError("backward of '" + n->name() + "': gradient " + shape_str(gi.shape()) + " for input " +
                                std::to_string(i) + " of shape " + shape_str(next->output_shape()));
          auto it = grads.find(next);
          if (it == grads.end()) grads.emplace(next, gi);
          else it->second = ops::add(it->second, gi);
        }
        alive.try_emplace(next, e.fn);
        if (--pending[next] == 0) {
          // A node none of whose consumers produced a gradient still runs with zeros, so that
          // its own inputs are reached consistently; this is rare (integer-valued branches).
          if (!grads.count(next)) grads.emplace(next, Tensor::zeros(next->output_shape(), next->output_dtype()));
          ready.push_back(next);
        }
      }
    }
  }
}

}  // namespace gattn::autograd
