// optimizer.safetensors (SPEC §2, §3): AdamW's state, so a resumed run continues the same updates.
// Per parameter `<name>.exp_avg` and `<name>.exp_avg_sq` (F32); the metadata holds the format, the
// per-parameter step counts `t` ("step_counts": {name: t}; they differ between groups when one was
// frozen), each parameter's group ("groups", for people reading the file) and the checksums.
#pragma once
#include <map>
#include <string>

#include "framework/io/safetensors.h"
#include "framework/optim/adamw.h"

namespace gattn {

// Writes `opt`'s state to `path` atomically, `metadata` added to the file's own keys.
void save_optimizer(const std::string& path, const optim::AdamW& opt,
                    const std::map<std::string, std::string>& metadata = {});

// Restores `opt`'s state from a file already read. The checksums must be present and match, and
// the file must hold exactly the optimizer's parameters with their shapes and a step count each;
// anything else throws CheckpointError naming the file and the tensor, before any state changed.
void load_optimizer(const SafetensorsFile& file, optim::AdamW& opt);

}  // namespace gattn
