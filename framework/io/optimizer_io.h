// optimizer.safetensors (docs/run-directory.md, docs/checkpoint-format.md): AdamW's state, so a resumed run continues
// the same updates.
// Per parameter `<name>.exp_avg` and `<name>.exp_avg_sq` (F32); the metadata holds the format, the
// per-parameter step counts `t` ("step_counts": {name: t}; they differ between groups when one was
// frozen), each parameter's group ("groups", for people reading the file) and the checksums.
#pragma once
#include <map>
#include <string>

#include "framework/io/safetensors.h"
#include "framework/optim/adamw.h"

namespace gattn {

// The whole optimizer state as the file holds it: one entry per parameter, in parameter order,
// with moments of the parameter's full shape. It does not depend on how many ranks shared the
// state, so a checkpoint written by N ranks (ZeRO-1 shards gathered) resumes on M.
struct ParamMoments {
  std::string name;
  std::string group;  // for people reading the file
  Tensor exp_avg, exp_avg_sq;
  std::int64_t t = 0;
};
using OptimizerSnapshot = std::vector<ParamMoments>;

// `opt`'s state as a snapshot (the moments are shared, not copied).
OptimizerSnapshot optimizer_snapshot(const optim::AdamW& opt);

// Writes a snapshot to `path` atomically, `metadata` added to the file's own keys.
void save_optimizer(const std::string& path, const OptimizerSnapshot& state,
                    const std::map<std::string, std::string>& metadata = {});
void save_optimizer(const std::string& path, const optim::AdamW& opt,
                    const std::map<std::string, std::string>& metadata = {});

// Reads the state of `params` (name and shape each) from a file already read. The checksums must
// be present and match, and the file must hold exactly these parameters with their shapes and a
// step count each; anything else throws CheckpointError naming the file and the tensor. Groups
// are left empty.
OptimizerSnapshot read_optimizer(const SafetensorsFile& file, const optim::AdamW::NamedParameters& params);

// Restores `opt`'s state from a file already read, every check above done before any state changed.
void load_optimizer(const SafetensorsFile& file, optim::AdamW& opt);

}  // namespace gattn
