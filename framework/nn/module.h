// Module: a tree of named parameters. Names are dotted paths (`blocks.0.attn.qkv.weight`, models/README.md)
// built from the registration names; the parameter visitor is what optimizer groups, checkpoints
// and gradient all-reduce walk over.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"

namespace gattn::nn {

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Calls fn(full dotted name, parameter) for every parameter, depth first in registration order.
  void visit_parameters(const std::function<void(const std::string&, Tensor&)>& fn, const std::string& prefix = "");
  std::vector<std::pair<std::string, Tensor>> named_parameters();
  std::vector<Tensor> parameters();
  // The parameter with this dotted name; throws ValueError naming it when absent.
  Tensor parameter(const std::string& name);
  std::int64_t num_parameters();
  void zero_grad();
  // Moves every parameter onto `device` in place (the handles layers keep follow).
  void to_(Device device);

  // Training mode (dropout, gumbel noise) vs evaluation; propagates to children.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

 protected:
  // Registers a parameter (marked requires_grad) and returns the handle the module keeps. The
  // handle and the registry share one tensor, so in-place optimizer updates reach both.
  Tensor register_parameter(const std::string& name, Tensor value);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    check_name(name);
    children_.emplace_back(name, module);
    return module;
  }

 private:
  void check_name(const std::string& name) const;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// An indexed list of modules: children named "0", "1", … as in `blocks.3.ln1.weight`.
template <class M>
class ModuleList : public Module {
 public:
  std::shared_ptr<M> push_back(std::shared_ptr<M> m) {
    items_.push_back(register_module(std::to_string(items_.size()), std::move(m)));
    return items_.back();
  }
  std::size_t size() const { return items_.size(); }
  M& operator[](std::size_t i) { return *items_.at(i); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

}  // namespace gattn::nn
