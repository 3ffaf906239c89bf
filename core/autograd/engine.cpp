// Backward engine: dependency counting over the node graph, then a ready-queue walk so every
// node runs once, after all gradients w.r.t. its outputs have been summed.
#include "core/autograd/engine.h"

#include <unordered_map>

#include "core/autograd/grad_mode.h"
#include "core/autograd/gradient_sum.h"
#include "core/autograd/node.h"
#include "core/autograd/op_profile.h"

namespace gattn::autograd {

namespace {
thread_local bool g_grad_enabled = true;
thread_local LeafGradReadyHook g_leaf_ready_hook;
thread_local LeafGradSink* g_leaf_sink = nullptr;

// Whether g's buffer may become a .grad as it is, without a copy: nothing but the engine's one
// local handle holds g or any view of its storage, so accumulating into it in place later can reach
// no other tensor. True of most gradients a backward computes; false for a gradient one op hands to
// several inputs, and for views. (The caller's own root gradient is never offered: see `adopt`.)
bool sole_owner(const Tensor& g) {
  const std::shared_ptr<TensorImpl>& impl = g.impl_ptr();
  return impl.use_count() == 1 && impl->storage && impl->storage.use_count() == 1;
}

// Adds g into a leaf's gradient slot (its .grad, or a sink's entry for it), in the leaf's dtype. The
// first gradient is kept as a tensor nothing else writes: with `adopt` (g is the engine's own
// handle) g itself where it is its buffer's sole owner, else a copy (it may share storage with
// another gradient, and later accumulation writes into the slot in place).
void accumulate_gradient(std::shared_ptr<TensorImpl>& slot, const TensorImpl& leaf, const Tensor& g, bool adopt) {
  if (g.shape() != leaf.shape)
    throw AutogradError("backward: gradient " + shape_str(g.shape()) + " for a leaf of shape " + shape_str(leaf.shape));
  if (!slot) {
    if (g.dtype() != leaf.dtype)
      slot = g.to(leaf.dtype).impl_ptr();  // a new tensor already
    else
      slot = (adopt && sole_owner(g) ? g : g.clone()).impl_ptr();
    return;
  }
  Tensor acc(slot);
  add_gradient_into(acc, g.dtype() == leaf.dtype ? g : g.to(leaf.dtype), "backward");
}

// A leaf's gradient from one pass: into this thread's sink when it has one, else into .grad.
// `adopt`: g is the engine's own handle, so its buffer may be kept (accumulate_gradient).
void deliver_to_leaf(const std::shared_ptr<TensorImpl>& leaf, const Tensor& g, bool adopt) {
  if (g_leaf_sink)
    g_leaf_sink->accumulate(leaf, g, adopt);
  else
    accumulate_gradient(leaf->grad, *leaf, g, adopt);
}

Edge edge_to(const Tensor& x) {
  Edge e;
  if (!x.defined()) return e;
  if (x.grad_fn()) {
    e.fn = x.grad_fn();
    e.output_nr = x.impl().output_nr;
  } else if (x.requires_grad()) {
    e.leaf = x.impl_ptr();
  }
  return e;
}
}  // namespace

void set_leaf_grad_ready_hook(LeafGradReadyHook hook) { g_leaf_ready_hook = std::move(hook); }

void set_leaf_grad_sink(LeafGradSink* sink) { g_leaf_sink = sink; }

void LeafGradSink::accumulate(const std::shared_ptr<TensorImpl>& leaf, const Tensor& g, bool adopt) {
  const auto [it, first] = index_.try_emplace(leaf.get(), grads_.size());
  if (first) grads_.emplace_back(leaf, nullptr);
  accumulate_gradient(grads_[it->second].second, *leaf, g, adopt);
}

void LeafGradSink::add_into_leaves() {
  const auto n = static_cast<std::int64_t>(grads_.size());
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t i = 0; i < n; ++i) {
    auto& [leaf, g] = grads_[static_cast<std::size_t>(i)];
    if (!leaf->grad) {
      leaf->grad = std::move(g);  // the sink's own buffer: nothing else holds it
    } else {
      Tensor acc(leaf->grad);
      add_gradient_into(acc, Tensor(g), "backward");
    }
  }
  grads_.clear();
  index_.clear();
}

bool grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool on) { g_grad_enabled = on; }

std::vector<Tensor> Node::apply(const std::vector<Tensor>& grad_outputs) {
  if (released_)
    throw AutogradError("backward: the graph through '" + name_ +
                        "' was already freed by an earlier backward; pass retain_graph=true to walk it twice");
  std::vector<bool> needs(inputs_.size());
  for (std::size_t i = 0; i < inputs_.size(); ++i) needs[i] = inputs_[i].needs_grad();
  std::vector<Tensor> grads = fn_(grad_outputs, needs);
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

std::vector<Tensor> record_multi(const char* op_name, const std::vector<Tensor>& outputs,
                                 const std::vector<Tensor>& inputs, MultiBackwardFn fn) {
  if (!grad_enabled()) return outputs;
  profile::forward_recorded(op_name);
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  bool any = false;
  for (const Tensor& x : inputs) {
    edges.push_back(edge_to(x));
    any = any || edges.back().needs_grad();
  }
  if (!any) return outputs;
  std::vector<OutputMeta> meta;
  for (const Tensor& y : outputs) meta.push_back({y.shape(), y.dtype(), y.device()});
  auto node = std::make_shared<Node>(op_name, std::move(edges), std::move(fn), std::move(meta));
  std::vector<Tensor> results;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    // The output may alias an input's storage (views); it still gets its own impl and history.
    Tensor r = outputs[k].detach();
    r.impl().grad_fn = node;
    r.impl().output_nr = static_cast<int>(k);
    results.push_back(std::move(r));
  }
  return results;
}

Tensor record(const char* op_name, Tensor output, const std::vector<Tensor>& inputs, BackwardFn fn) {
  if (!grad_enabled()) return output;
  Shape shape = output.shape();
  DType dtype = output.dtype();
  Device device = output.device();
  auto multi = [fn = std::move(fn), shape, dtype, device](const std::vector<Tensor>& g,
                                                          const std::vector<bool>& needs) {
    return fn(g[0].defined() ? g[0] : Tensor::zeros(shape, dtype, device), needs);
  };
  return record_multi(op_name, {output}, inputs, std::move(multi))[0];
}

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  if (!gradient.defined() || gradient.shape() != root.shape())
    throw AutogradError("backward: gradient " +
                        (gradient.defined() ? shape_str(gradient.shape()) : std::string("undefined")) +
                        " does not match the root's shape " + shape_str(root.shape()));
  NoGradGuard no_grad;  // gradients are plain tensors: no higher-order graphs
  if (!root.grad_fn()) {
    if (!root.requires_grad())
      throw AutogradError("backward: tensor " + root.str() + " does not require grad and has no history");
    deliver_to_leaf(root.impl_ptr(), gradient, false);  // the caller's tensor: copied
    if (g_leaf_ready_hook) g_leaf_ready_hook(root.impl());
    return;
  }

  // Count, for every node reachable from the root, how many edges point at it.
  Node* root_node = root.grad_fn().get();
  std::unordered_map<Node*, int> pending;
  // With a leaf-ready hook: how many edges point at each leaf, so it fires after the last one.
  const bool track_leaves = static_cast<bool>(g_leaf_ready_hook);
  std::unordered_map<TensorImpl*, int> leaf_pending;
  std::vector<Node*> stack{root_node};
  pending[root_node] = 0;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->inputs()) {
      if (track_leaves && e.leaf) ++leaf_pending[e.leaf.get()];
      if (!e.fn) continue;
      auto [it, inserted] = pending.try_emplace(e.fn.get(), 0);
      ++it->second;
      if (inserted) stack.push_back(e.fn.get());
    }
  }

  // Keep every node alive while we walk, even after release() drops the edges that owned them.
  std::unordered_map<Node*, std::shared_ptr<Node>> alive;
  std::unordered_map<Node*, std::vector<Tensor>> grads;
  grads[root_node].resize(root_node->outputs().size());
  grads[root_node][static_cast<std::size_t>(root.impl().output_nr)] = gradient;
  alive[root_node] = root.grad_fn();
  std::vector<Node*> ready{root_node};
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    std::vector<Tensor> g = std::move(grads[n]);
    grads.erase(n);
    bool any_grad = false;
    for (const Tensor& t : g) any_grad = any_grad || t.defined();
    // A node none of whose consumers produced a gradient (e.g. only an integer-valued branch used
    // it) is skipped; its inputs are still released from its count below.
    std::vector<Tensor> input_grads;
    if (any_grad) {
      g.resize(n->outputs().size());
      const profile::BackwardTimer timer(n->name().c_str());
      input_grads = n->apply(g);
    }
    g.clear();
    const std::vector<Edge> edges = n->inputs();
    if (!retain_graph) n->release();
    for (std::size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      // Moved out, so a gradient nothing else holds can become a leaf's .grad without a copy.
      Tensor gi = any_grad ? std::move(input_grads[i]) : Tensor();
      if (e.leaf) {
        if (gi.defined()) {
          const profile::BackwardTimer timer("(leaf accumulate)");
          deliver_to_leaf(e.leaf, gi, true);
        }
        if (track_leaves && --leaf_pending[e.leaf.get()] == 0) g_leaf_ready_hook(*e.leaf);
      } else if (e.fn) {
        Node* next = e.fn.get();
        std::vector<Tensor>& slot = grads[next];
        slot.resize(next->outputs().size());
        if (gi.defined()) {
          const Shape& want = next->outputs()[static_cast<std::size_t>(e.output_nr)].shape;
          if (gi.shape() != want)
            throw AutogradError("backward of '" + n->name() + "': gradient " + shape_str(gi.shape()) + " for input " +
                                std::to_string(i) + " of shape " + shape_str(want));
          Tensor& acc = slot[static_cast<std::size_t>(e.output_nr)];
          if (acc.defined()) {
            const profile::BackwardTimer timer("(gradient sum)");
            acc = sum_gradients(acc, gi, "backward");
          } else {
            acc = gi;
          }
        }
        alive.try_emplace(next, e.fn);
        if (--pending[next] == 0) ready.push_back(next);
      }
    }
  }
}

}  // namespace gattn::autograd
