// A Hugging Face model directory as transformers' save_pretrained writes it: config.json and the
// weights, in model.safetensors or in shards that model.safetensors.index.json lists. This layer
// reads the files and checks that they agree with each other; what the config and the tensor names
// mean is the models layer's (models/hf/), and `gattn import` (docs/import.md) puts the two together.
#pragma once
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"

namespace gattn {

inline constexpr const char* kHfConfigFile = "config.json";
inline constexpr const char* kHfWeightsFile = "model.safetensors";
inline constexpr const char* kHfIndexFile = "model.safetensors.index.json";

struct HfDirectory {
  std::string dir;
  std::string config_path;  // dir/config.json, for messages
  nlohmann::json config;    // config.json, a JSON object
  // The safetensors files: model.safetensors, or the index's shards in the order the index names
  // them first; with an index, which file each tensor is in.
  std::vector<std::string> weight_files;
  std::string index_path;  // "" without an index
  std::map<std::string, std::string> index;
};

// Reads config.json and finds the weight files. Throws CheckpointError (exit 3) naming the file for
// a directory that is not one, a missing or unreadable config.json or one that is not a JSON
// object, no safetensors weights (only PyTorch pickles, or nothing), both a single file and an
// index, and an index that is not a weight_map of tensor names to shard file names in the directory
// or names a shard that is missing.
HfDirectory open_hf_directory(const std::string& dir);

// One tensor of the weights and the file it came from (for messages).
struct HfTensor {
  Tensor value;  // f32, f64 or bf16: F16 is read widened to f32, other dtypes are refused
  std::string file;
};

// Every tensor of the weight files by name, except those `skip` names (checked, not read: the
// known buffers a model class ignores). Throws CheckpointError naming the file and the tensor for
// a damaged file, a dtype other than F32, F64, BF16 and F16, a tensor in two files, and with an
// index a tensor the index does not list in that shard or a listed one its shard lacks.
std::map<std::string, HfTensor> read_hf_weights(const HfDirectory& d,
                                                const std::function<bool(const std::string&)>& skip = {});

}  // namespace gattn
