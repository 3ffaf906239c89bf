// state.json of a checkpoint (docs/run-directory.md): where the training loop stood, enough to continue it bit
// for bit. The step is also the schedule's position; the data sampler's generator is the data
// loader's position (training batches are drawn from it, nothing else is); the model's noise
// generator covers gumbel noise and dropout. A CRC-32 of the rest of the object catches a damaged
// file, and a hash of the config keys a resume must not change catches a changed model.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor/random.h"

namespace gattn {

// The generator names in state.json's "rng".
inline constexpr const char* kDataRng = "data";
inline constexpr const char* kModelNoiseRng = "model_noise";

struct TrainState {
  std::int64_t step = 0;  // optimizer steps done
  std::int64_t world_size = 1;
  std::map<std::string, GeneratorState> rng;  // by name (kDataRng, kModelNoiseRng)
  std::int64_t bad_steps_in_a_row = 0;        // the NaN guard's count
  double elapsed_s = 0;                       // training time so far: elapsed_s continues across resumes
  std::map<std::string, double> lr;           // per parameter group, the rate of the last step done
  nlohmann::json config;                      // the resolved config
  std::string config_hash;                    // config_hash(config)
};

// The object written to state.json: every field above plus "format" and "crc32".
nlohmann::json train_state_to_json(const TrainState& s);
// Validates every field (types, ranges, the CRC) and throws CheckpointError naming `path` and the field.
TrainState train_state_from_json(const nlohmann::json& j, const std::string& path);
// Reads and validates `path`; a missing, unreadable or non-JSON file throws CheckpointError.
TrainState read_train_state(const std::string& path);

// The part of a resolved config that a resume must not change: everything under model, and
// data.kind / data.task (a different model or task cannot continue the same run).
nlohmann::json resume_invariant_config(const nlohmann::json& config);
// "fnv1a64:" + 16 hex digits of FNV-1a 64 over resume_invariant_config(config) as compact JSON
// (nlohmann sorts keys, so equal configs give equal text).
std::string config_hash(const nlohmann::json& config);
// Throws CheckpointError naming `path` and the first key that differs when `now` does not hash
// like the checkpoint's config. `defaults` (the config every key at its default, or null) fills
// the keys the checkpoint's config lacks first: a key added to gattn after the checkpoint was
// written, left at its default, does not block the resume; set to anything else it does.
void check_resume_config(const TrainState& saved, const nlohmann::json& now, const std::string& path,
                         const nlohmann::json& defaults = nullptr);
// "train.max_steps: 20 -> 40" for every leaf whose value differs between two config objects.
std::vector<std::string> config_differences(const nlohmann::json& before, const nlohmann::json& after);

}  // namespace gattn
