// Reading a Hugging Face model directory: config.json, the single weights file or the index and its
// shards, each file checked against the others before a tensor is used.
#include "framework/io/hf_checkpoint.h"

#include <filesystem>
#include <set>

#include "framework/base/input_file.h"
#include "framework/io/errors.h"
#include "framework/io/safetensors.h"

namespace gattn {

namespace fs = std::filesystem;

namespace {

// config.json and the index are a few kilobytes (a large model's index lists some thousand tensors).
constexpr std::uint64_t kMaxJsonBytes = 64u << 20;

nlohmann::json read_json_object(const std::string& path, const std::string& what) {
  const std::string text = read_input_file<CheckpointError>(path, what, kMaxJsonBytes);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw CheckpointError(what + " " + path + ": not valid JSON");
  if (!j.is_object()) throw CheckpointError(what + " " + path + ": not a JSON object");
  return j;
}

// A shard is a file beside the index, named without a directory: an index cannot point elsewhere.
bool plain_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos && s.find('\0') == std::string::npos;
}

void read_index(HfDirectory& d) {
  const nlohmann::json index = read_json_object(d.index_path, "the weights index");
  const auto map = index.find("weight_map");
  if (map == index.end() || !map->is_object())
    throw CheckpointError("the weights index " + d.index_path + ": no \"weight_map\" object of tensor names to files");
  std::set<std::string> files;
  for (const auto& [name, file] : map->items()) {
    if (!file.is_string() || !plain_file_name(file.get<std::string>()))
      throw CheckpointError("the weights index " + d.index_path + ": tensor '" + printable_name(name) +
                            "' is mapped to " + printable_name(file.dump()) + ", not a file name in the directory");
    const std::string f = file.get<std::string>();
    d.index[name] = f;
    if (files.insert(f).second) d.weight_files.push_back((fs::path(d.dir) / f).string());
  }
  if (d.index.empty()) throw CheckpointError("the weights index " + d.index_path + ": its weight_map is empty");
  for (const std::string& f : d.weight_files) {
    std::error_code ec;
    if (!fs::exists(f, ec))
      throw CheckpointError("the weights index " + d.index_path + ": shard " + fs::path(f).filename().string() +
                            " is missing from " + d.dir);
  }
}

}  // namespace

HfDirectory open_hf_directory(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw CheckpointError("import --hf: " + dir + " is not a directory (expected a Hugging Face model directory)");
  HfDirectory d;
  d.dir = dir;
  d.config_path = (fs::path(dir) / kHfConfigFile).string();
  d.config = read_json_object(d.config_path, "the model config");
  const std::string single = (fs::path(dir) / kHfWeightsFile).string();
  const std::string index = (fs::path(dir) / kHfIndexFile).string();
  const bool has_single = fs::exists(single, ec), has_index = fs::exists(index, ec);
  if (has_single && has_index)
    throw CheckpointError(dir + ": holds both " + kHfWeightsFile + " and " + kHfIndexFile +
                          ", so which weights are meant is unclear (remove the stale one)");
  if (has_single) {
    d.weight_files.push_back(single);
  } else if (has_index) {
    d.index_path = index;
    read_index(d);
  } else {
    const bool pickle = fs::exists(fs::path(dir) / "pytorch_model.bin", ec) ||
                        fs::exists(fs::path(dir) / "pytorch_model.bin.index.json", ec);
    throw CheckpointError(dir + ": no " + kHfWeightsFile + " or " + kHfIndexFile +
                          (pickle
                               ? " (only PyTorch pickles, pytorch_model.bin: gattn reads safetensors; save the model "
                                 "again with save_pretrained(..., safe_serialization=True))"
                               : ""));
  }
  return d;
}

std::map<std::string, HfTensor> read_hf_weights(const HfDirectory& d,
                                                const std::function<bool(const std::string&)>& skip) {
  SafetensorsReadOptions options;
  options.widen_f16 = true;
  options.skip = skip;
  std::map<std::string, HfTensor> out;
  for (const std::string& path : d.weight_files) {
    SafetensorsFile file = load_safetensors(path, options);
    const std::string shard = fs::path(path).filename().string();
    for (auto& [name, t] : file.tensors) {
      if (t.dtype() == DType::i32)
        throw CheckpointError("safetensors file '" + path + "': tensor '" + printable_name(name) +
                              "': dtype I32, not floating-point weights");
      if (!d.index_path.empty()) {
        auto it = d.index.find(name);
        if (it == d.index.end() || it->second != shard)
          throw CheckpointError("safetensors file '" + path + "': tensor '" + printable_name(name) +
                                "' is not listed " + (it == d.index.end() ? "in " : "for this shard in ") +
                                d.index_path + (it == d.index.end() ? "" : " (it names " + it->second + ")"));
      }
      auto [it, fresh] = out.try_emplace(name, HfTensor{std::move(t), path});
      if (!fresh)
        throw CheckpointError("safetensors file '" + path + "': tensor '" + printable_name(name) + "' is also in " +
                              it->second.file);
    }
  }
  // Every tensor the index lists must be where it says (skipped ones were checked in their shard's
  // header, and are not in `out`).
  for (const auto& [name, shard] : d.index) {
    if (out.count(name) || (skip && skip(name))) continue;
    throw CheckpointError("safetensors file '" + (fs::path(d.dir) / shard).string() + "': tensor '" +
                          printable_name(name) + "' is missing (" + d.index_path + " lists it there)");
  }
  return out;
}

}  // namespace gattn
