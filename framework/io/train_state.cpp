// state.json: writing, strict reading, and the config hash.
#include "framework/io/train_state.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "framework/base/input_file.h"
#include "framework/io/checksums.h"
#include "framework/io/errors.h"
#include "framework/io/safetensors.h"

namespace gattn {

namespace {

// state.json holds the step, the RNG states and the resolved config: kilobytes, never megabytes.
constexpr std::uint64_t kMaxStateBytes = 16u << 20;

using json = nlohmann::json;

std::string where(const std::string& path) { return "checkpoint file '" + path + "'"; }

[[noreturn]] void bad_field(const std::string& path, const std::string& field, const std::string& what) {
  throw CheckpointError(where(path) + ": field '" + field + "' " + what);
}

// The CRC of the object without its "crc32" field, over compact JSON: parse(dump(x)) dumps to the
// same text (nlohmann writes the shortest round-tripping doubles), so the reader can recompute it.
std::string state_crc(json j) {
  j.erase("crc32");
  const std::string text = j.dump();
  return crc32_hex(crc32(text.data(), text.size()));
}

const json& field(const json& j, const std::string& key, const std::string& path, const std::string& prefix = "") {
  auto it = j.find(key);
  if (it == j.end()) bad_field(path, prefix + key, "is missing");
  return *it;
}

std::int64_t int_field(const json& j, const std::string& key, const std::string& path, std::int64_t min,
                       const std::string& prefix = "") {
  const json& v = field(j, key, path, prefix);
  if (!v.is_number_integer()) bad_field(path, prefix + key, "is not an integer");
  if (v.is_number_unsigned() &&
      v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    bad_field(path, prefix + key, "is out of range");
  const std::int64_t x = v.get<std::int64_t>();
  if (x < min) bad_field(path, prefix + key, "must be >= " + std::to_string(min));
  return x;
}

std::uint64_t uint_field(const json& j, const std::string& key, const std::string& path, const std::string& prefix) {
  const json& v = field(j, key, path, prefix);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    bad_field(path, prefix + key, "is not a non-negative integer");
  return v.get<std::uint64_t>();
}

double number_field(const json& j, const std::string& key, const std::string& path, const std::string& prefix = "") {
  const json& v = field(j, key, path, prefix);
  if (!v.is_number() || !std::isfinite(v.get<double>())) bad_field(path, prefix + key, "is not a finite number");
  return v.get<double>();
}

std::uint64_t fnv1a64(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

void collect_differences(const json& a, const json& b, const std::string& prefix, std::vector<std::string>& out) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items()) {
      const std::string key = prefix.empty() ? k : prefix + "." + k;
      auto it = b.find(k);
      if (it == b.end())
        out.push_back(key + ": " + v.dump() + " -> (absent)");
      else
        collect_differences(v, *it, key, out);
    }
    for (const auto& [k, v] : b.items())
      if (!a.contains(k)) out.push_back((prefix.empty() ? k : prefix + "." + k) + ": (absent) -> " + v.dump());
    return;
  }
  if (a != b) out.push_back(prefix + ": " + a.dump() + " -> " + b.dump());
}

}  // namespace

json train_state_to_json(const TrainState& s) {
  json rng = json::object();
  for (const auto& [name, g] : s.rng) rng[name] = {{"seed", g.seed}, {"stream", g.stream}, {"offset", g.offset}};
  json j = {{"format", kCheckpointFormat},
            {"step", s.step},
            {"world_size", s.world_size},
            {"rng", rng},
            {"bad_steps_in_a_row", s.bad_steps_in_a_row},
            {"elapsed_s", s.elapsed_s},
            {"lr", s.lr},
            {"config", s.config},
            {"config_hash", s.config_hash}};
  j["crc32"] = state_crc(j);
  return j;
}

TrainState train_state_from_json(const json& j, const std::string& path) {
  if (!j.is_object()) throw CheckpointError(where(path) + ": not a JSON object");
  const json& crc = field(j, "crc32", path);
  if (!crc.is_string()) bad_field(path, "crc32", "is not a string");
  if (crc.get<std::string>() != state_crc(j))
    throw CheckpointError(where(path) + ": checksum mismatch (stored crc32 " +
                          printable_name(crc.get<std::string>(), 16) + ", contents have " + state_crc(j) +
                          "): the file is damaged");
  const json& format = field(j, "format", path);
  if (format != kCheckpointFormat) bad_field(path, "format", "is " + format.dump() + ", expected \"gattn/1\"");

  TrainState s;
  s.step = int_field(j, "step", path, 0);
  s.world_size = int_field(j, "world_size", path, 1);
  s.bad_steps_in_a_row = int_field(j, "bad_steps_in_a_row", path, 0);
  s.elapsed_s = number_field(j, "elapsed_s", path);
  const json& rng = field(j, "rng", path);
  if (!rng.is_object()) bad_field(path, "rng", "is not an object");
  for (const auto& [name, g] : rng.items()) {
    const std::string prefix = "rng." + name + ".";
    if (!g.is_object()) bad_field(path, "rng." + name, "is not an object");
    GeneratorState st{uint_field(g, "seed", path, prefix), uint_field(g, "stream", path, prefix),
                      uint_field(g, "offset", path, prefix)};
    if (st.offset % 4 != 0) bad_field(path, prefix + "offset", "is not a multiple of 4 (whole Philox blocks)");
    s.rng.emplace(name, st);
  }
  const json& lr = field(j, "lr", path);
  if (!lr.is_object()) bad_field(path, "lr", "is not an object");
  for (const auto& [group, v] : lr.items()) s.lr[group] = number_field(lr, group, path, "lr.");
  s.config = field(j, "config", path);
  if (!s.config.is_object() || !s.config.contains("model")) bad_field(path, "config", "is not a config object");
  const json& hash = field(j, "config_hash", path);
  if (!hash.is_string()) bad_field(path, "config_hash", "is not a string");
  s.config_hash = hash.get<std::string>();
  if (s.config_hash != config_hash(s.config))
    bad_field(path, "config_hash", "does not match the config stored beside it");
  return s;
}

TrainState read_train_state(const std::string& path) {
  std::string text;
  const std::string why = read_whole_file(path, kMaxStateBytes, text);
  if (!why.empty()) throw CheckpointError(where(path) + ": cannot read: " + why);
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw CheckpointError(where(path) + ": not valid JSON (truncated or damaged)");
  return train_state_from_json(j, path);
}

json resume_invariant_config(const json& config) {
  json out = json::object();
  out["model"] = config.contains("model") ? config["model"] : json();
  json data = json::object();
  if (config.contains("data") && config["data"].is_object())
    for (const char* key : {"kind", "task"})
      if (config["data"].contains(key)) data[key] = config["data"][key];
  out["data"] = data;
  return out;
}

std::string config_hash(const json& config) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx",
                static_cast<unsigned long long>(fnv1a64(resume_invariant_config(config).dump())));
  return buf;
}

namespace {

// `config` with every key of `defaults` it lacks added (recursively into objects).
json with_defaults(json config, const json& defaults) {
  if (!config.is_object() || !defaults.is_object()) return config;
  for (auto it = defaults.begin(); it != defaults.end(); ++it) {
    if (!config.contains(it.key()))
      config[it.key()] = it.value();
    else if (config[it.key()].is_object())
      config[it.key()] = with_defaults(config[it.key()], it.value());
  }
  return config;
}

}  // namespace

void check_resume_config(const TrainState& saved, const json& now, const std::string& path, const json& defaults) {
  const std::string hash = config_hash(now);
  if (hash == saved.config_hash) return;
  const json before = with_defaults(saved.config, defaults);
  if (config_hash(before) == hash) return;  // only keys newer than the checkpoint, at their defaults
  std::vector<std::string> diff = config_differences(resume_invariant_config(before), resume_invariant_config(now));
  std::string what = diff.empty() ? "hash " + saved.config_hash + " there, " + hash + " now" : diff.front();
  if (diff.size() > 1) what += " (and " + std::to_string(diff.size() - 1) + " more)";
  throw CheckpointError(where(path) + ": the config hash differs from the checkpoint's: " + what +
                        "; a resume must keep model.* and data.kind/data.task (start a new run to change them)");
}

std::vector<std::string> config_differences(const json& before, const json& after) {
  std::vector<std::string> out;
  collect_differences(before, after, "", out);
  return out;
}

}  // namespace gattn
