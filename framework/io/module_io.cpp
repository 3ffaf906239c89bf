// Module <-> safetensors: all checks run before the first parameter is overwritten.
#include "framework/io/module_io.h"

#include <unordered_map>
#include <unordered_set>

#include "framework/io/checksums.h"

namespace gattn {

void save_module(const std::string& path, nn::Module& m, const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  m.visit_parameters([&](const std::string& name, Tensor& p) {
    tensors.emplace_back(name, p.detach().to(Device::cpu).to(DType::f32));
  });
  std::map<std::string, std::string> meta = metadata;
  meta[kChecksumsKey] = tensor_checksums(tensors);
  save_safetensors(path, tensors, meta);
}

std::map<std::string, std::string> load_module(const std::string& path, nn::Module& m) {
  SafetensorsFile file = load_safetensors(path);
  verify_checksums(file, /*required=*/false);
  return load_module(file, m);
}

std::map<std::string, std::string> load_module(const SafetensorsFile& file, nn::Module& m) {
  const std::string& path = file.path;
  std::unordered_map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : file.tensors) by_name.emplace(name, &t);

  const std::string where = "checkpoint '" + path + "'";
  std::vector<std::pair<Tensor, const Tensor*>> copies;  // (parameter, source)
  std::vector<std::string> missing;
  std::unordered_set<std::string> wanted;
  m.visit_parameters([&](const std::string& name, Tensor& p) {
    wanted.insert(name);
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      missing.push_back(name);
      return;
    }
    const Tensor& src = *it->second;
    if (src.shape() != p.shape())
      throw CheckpointError(where + ": tensor '" + name + "' has shape " + shape_str(src.shape()) +
                            ", the model expects " + shape_str(p.shape()));
    if (!is_floating(src.dtype()))
      throw CheckpointError(where + ": tensor '" + name + "' is " + dtype_name(src.dtype()) +
                            ", a parameter needs floating-point data");
    copies.emplace_back(p, &src);
  });
  if (!missing.empty()) {
    std::string list;
    for (std::size_t i = 0; i < missing.size() && i < 5; ++i) list += (i ? ", '" : "'") + missing[i] + "'";
    if (missing.size() > 5) list += ", ... (" + std::to_string(missing.size()) + " in all)";
    throw CheckpointError(where + ": missing tensor" + (missing.size() > 1 ? "s " : " ") + list +
                          " that the model has");
  }
  for (const auto& [name, t] : file.tensors)
    if (!wanted.count(name))
      throw CheckpointError(where + ": extra tensor '" + printable_name(name) + "' " + shape_str(t.shape()) +
                            " that the model does not have (a different model config?)");

  for (auto& [param, src] : copies) param.copy_from(*src);
  return file.metadata;
}

}  // namespace gattn
