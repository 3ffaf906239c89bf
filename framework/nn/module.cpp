// Module registry and traversal.
#include "framework/nn/module.h"

#include "core/tensor/error.h"

namespace gattn::nn {

void Module::check_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw ValueError("Module: child or parameter name '" + name + "' must be non-empty and contain no '.'");
  for (const auto& [n, _] : params_)
    if (n == name) throw ValueError("Module: name '" + name + "' registered twice");
  for (const auto& [n, _] : children_)
    if (n == name) throw ValueError("Module: name '" + name + "' registered twice");
}

Tensor Module::register_parameter(const std::string& name, Tensor value) {
  check_name(name);
  value.set_requires_grad(true);
  params_.emplace_back(name, value);
  return value;
}

void Module::visit_parameters(const std::function<void(const std::string&, Tensor&)>& fn, const std::string& prefix) {
  for (auto& [name, p] : params_) fn(prefix + name, p);
  for (auto& [name, child] : children_) child->visit_parameters(fn, prefix + name + ".");
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() {
  std::vector<std::pair<std::string, Tensor>> out;
  visit_parameters([&](const std::string& n, Tensor& p) { out.emplace_back(n, p); });
  return out;
}

std::vector<Tensor> Module::parameters() {
  std::vector<Tensor> out;
  visit_parameters([&](const std::string&, Tensor& p) { out.push_back(p); });
  return out;
}

Tensor Module::parameter(const std::string& name) {
  Tensor found;
  visit_parameters([&](const std::string& n, Tensor& p) {
    if (n == name) found = p;
  });
  if (!found.defined()) throw ValueError("Module: no parameter named '" + name + "'");
  return found;
}

std::int64_t Module::num_parameters() {
  std::int64_t n = 0;
  visit_parameters([&](const std::string&, Tensor& p) { n += p.numel(); });
  return n;
}

void Module::zero_grad() {
  visit_parameters([](const std::string&, Tensor& p) { p.zero_grad(); });
}

void Module::to_(Device device) {
  visit_parameters([device](const std::string&, Tensor& p) { p.move_to_(device); });
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, child] : children_) child->train(on);
}

}  // namespace gattn::nn
