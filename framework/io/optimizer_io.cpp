// AdamW state <-> safetensors. Moments are stored as F32 whatever the parameter's dtype (docs/checkpoint-format.md);
// f64 parameters exist only in tests, which then get f32-rounded moments back.
#include "framework/io/optimizer_io.h"

#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "framework/io/checksums.h"

namespace gattn {

namespace {

constexpr const char* kStepCountsKey = "step_counts";
constexpr const char* kExpAvg = ".exp_avg";
constexpr const char* kExpAvgSq = ".exp_avg_sq";

std::string where(const SafetensorsFile& file) { return "checkpoint file '" + file.path + "'"; }

}  // namespace

OptimizerSnapshot optimizer_snapshot(const optim::AdamW& opt) {
  OptimizerSnapshot out;
  for (const auto& [name, p] : opt.named_parameters()) {
    const optim::ParamState& s = opt.state(name);
    out.push_back({name, opt.group_of(name), s.exp_avg, s.exp_avg_sq, s.t});
  }
  return out;
}

void save_optimizer(const std::string& path, const OptimizerSnapshot& state,
                    const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  nlohmann::json steps = nlohmann::json::object(), groups = nlohmann::json::object();
  for (const ParamMoments& m : state) {
    tensors.emplace_back(m.name + kExpAvg, m.exp_avg.to(Device::cpu).to(DType::f32));
    tensors.emplace_back(m.name + kExpAvgSq, m.exp_avg_sq.to(Device::cpu).to(DType::f32));
    steps[m.name] = m.t;
    groups[m.name] = m.group;
  }
  std::map<std::string, std::string> meta = metadata;
  meta["format"] = kCheckpointFormat;
  meta["optimizer"] = "adamw";
  meta[kStepCountsKey] = steps.dump();
  meta["groups"] = groups.dump();
  meta[kChecksumsKey] = tensor_checksums(tensors);
  save_safetensors(path, tensors, meta);
}

void save_optimizer(const std::string& path, const optim::AdamW& opt,
                    const std::map<std::string, std::string>& metadata) {
  save_optimizer(path, optimizer_snapshot(opt), metadata);
}

OptimizerSnapshot read_optimizer(const SafetensorsFile& file, const optim::AdamW::NamedParameters& params) {
  verify_checksums(file, /*required=*/true);
  auto steps_it = file.metadata.find(kStepCountsKey);
  if (steps_it == file.metadata.end()) throw CheckpointError(where(file) + ": no \"step_counts\" in the metadata");
  const nlohmann::json steps = nlohmann::json::parse(steps_it->second, nullptr, false);
  if (steps.is_discarded() || !steps.is_object())
    throw CheckpointError(where(file) + ": metadata \"step_counts\" is not a JSON object");

  std::unordered_map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : file.tensors) by_name.emplace(name, &t);
  OptimizerSnapshot out;
  std::unordered_set<std::string> wanted;
  for (const auto& [name, p] : params) {
    const Tensor* moments[2] = {nullptr, nullptr};
    const std::string names[2] = {name + kExpAvg, name + kExpAvgSq};
    for (int k = 0; k < 2; ++k) {
      wanted.insert(names[k]);
      auto it = by_name.find(names[k]);
      if (it == by_name.end())
        throw CheckpointError(where(file) + ": tensor '" + names[k] + "' is missing (the model has parameter '" + name +
                              "')");
      if (it->second->shape() != p.shape())
        throw CheckpointError(where(file) + ": tensor '" + names[k] + "' has shape " + shape_str(it->second->shape()) +
                              ", the parameter has " + shape_str(p.shape()));
      if (!is_floating(it->second->dtype()))
        throw CheckpointError(where(file) + ": tensor '" + names[k] + "' is " + dtype_name(it->second->dtype()) +
                              ", optimizer moments need floating-point data");
      moments[k] = it->second;
    }
    auto t = steps.find(name);
    if (t == steps.end() || !t->is_number_integer() || t->get<std::int64_t>() < 0)
      throw CheckpointError(where(file) + ": parameter '" + name + "' has no valid step count in \"step_counts\"");
    out.push_back({name, "", *moments[0], *moments[1], t->get<std::int64_t>()});
  }
  for (const auto& [name, t] : file.tensors)
    if (!wanted.count(name))
      throw CheckpointError(where(file) + ": extra tensor '" + printable_name(name) +
                            "' that the optimizer does not have (a different model config?)");
  return out;
}

void load_optimizer(const SafetensorsFile& file, optim::AdamW& opt) {
  const OptimizerSnapshot state = read_optimizer(file, opt.named_parameters());
  for (const ParamMoments& m : state) {
    optim::ParamState& s = opt.state(m.name);
    s.exp_avg.copy_from(m.exp_avg);
    s.exp_avg_sq.copy_from(m.exp_avg_sq);
    s.t = m.t;
  }
}

}  // namespace gattn
