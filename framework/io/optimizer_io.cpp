// AdamW state <-> safetensors. Moments are stored as F32 whatever the parameter's dtype (SPEC §3);
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

void save_optimizer(const std::string& path, const optim::AdamW& opt, const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  nlohmann::json steps = nlohmann::json::object(), groups = nlohmann::json::object();
  for (const auto& [name, p] : opt.named_parameters()) {
    const optim::ParamState& s = opt.state(name);
    tensors.emplace_back(name + kExpAvg, s.exp_avg.to(Device::cpu).to(DType::f32));
    tensors.emplace_back(name + kExpAvgSq, s.exp_avg_sq.to(Device::cpu).to(DType::f32));
    steps[name] = s.t;
    groups[name] = opt.group_of(name);
  }
  std::map<std::string, std::string> meta = metadata;
  meta["format"] = kCheckpointFormat;
  meta["optimizer"] = "adamw";
  meta[kStepCountsKey] = steps.dump();
  meta["groups"] = groups.dump();
  meta[kChecksumsKey] = tensor_checksums(tensors);
  save_safetensors(path, tensors, meta);
}

void load_optimizer(const SafetensorsFile& file, optim::AdamW& opt) {
  verify_checksums(file, /*required=*/true);
  auto steps_it = file.metadata.find(kStepCountsKey);
  if (steps_it == file.metadata.end())
    throw CheckpointError(where(file) + ": no \"step_counts\" in the metadata");
  const nlohmann::json steps = nlohmann::json::parse(steps_it->second, nullptr, false);
  if (steps.is_discarded() || !steps.is_object())
    throw CheckpointError(where(file) + ": metadata \"step_counts\" is not a JSON object");

  std::unordered_map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : file.tensors) by_name.emplace(name, &t);
  struct Restore {
    optim::ParamState* state;
    const Tensor *m, *v;
    std::int64_t t;
  };
  std::vector<Restore> restores;
  std::unordered_set<std::string> wanted;
  for (const auto& [name, p] : opt.named_parameters()) {
    const Tensor* moments[2] = {nullptr, nullptr};
    const std::string names[2] = {name + kExpAvg, name + kExpAvgSq};
    for (int k = 0; k < 2; ++k) {
      wanted.insert(names[k]);
      auto it = by_name.find(names[k]);
      if (it == by_name.end())
        throw CheckpointError(where(file) + ": tensor '" + names[k] + "' is missing (the model has parameter '" +
                              name + "')");
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
    restores.push_back({&opt.state(name), moments[0], moments[1], t->get<std::int64_t>()});
  }
  for (const auto& [name, t] : file.tensors)
    if (!wanted.count(name))
      throw CheckpointError(where(file) + ": extra tensor '" + printable_name(name) +
                            "' that the optimizer does not have (a different model config?)");

  for (Restore& r : restores) {
    r.state->exp_avg.copy_from(*r.m);
    r.state->exp_avg_sq.copy_from(*r.v);
    r.state->t = r.t;
  }
}

}  // namespace gattn
