// `train.init_from: CKPT` (docs/finetune.md): a new run whose step-0 weights are a checkpoint's,
// not its optimizer state or step. The config may add gates and may change nothing that shapes a
// tensor. Every added gate must ramp in (ramp_start or ramp_steps ≥ 1): at step 0 its effect is
// exactly none, so the model computes the checkpoint's function, and the gate grows in from there.
#pragma once
#include <string>
#include <vector>

#include "framework/data/dataset.h"
#include "models/gpt.h"
#include "recipes/common/run_config.h"

namespace gattn::recipes {

// The checkpoint's model.* settings the config leaves unset, as overrides to apply before the
// user's own, so a fine-tuning config names only what it changes: its gates. The checkpoint's gates
// come along when the config names none (no model.gate.* and no model.gates key). Empty without
// train.init_from. A missing or damaged checkpoint throws CheckpointError (exit 3).
std::vector<std::string> init_from_overrides(const Config& cfg);

// Throws CheckpointError (exit 3) naming the checkpoint when its vocabulary (its byte vocabulary or
// tokenizer) is not `data`'s: the same ids would mean other text. Run before model.vocab_size, which
// the checkpoint set, is held against the data's.
void check_init_from_vocabulary(const Config& cfg, const Dataset& data);

struct InitFrom {
  std::string dir;                          // the checkpoint directory read
  std::int64_t tensors = 0;                 // tensors copied from it
  std::vector<std::string> new_parameters;  // "blocks.3.attn.gate.weight [128, 128]": the added gates'
  std::vector<std::string> renamed;         // "blocks.0.attn.gate.weight -> blocks.0.attn.gate.output.weight"
  std::vector<std::string> config_changes;  // "model.norm_eps: 1e-05 -> 1e-06": model keys changed that shape nothing
};

// Copies the checkpoint train.init_from names into `model` (built from `cfg`, which must hold the
// overrides of init_from_overrides). Checks before anything changes:
//   - the checkpoint reads and verifies, and its vocabulary is the data's (CheckpointError, exit 3);
//   - every tensor it has is in the model with its shape, except that a block's single gate may
//     move under its kind's name when the config adds a second gate to that block; a model.* key the
//     config changed and that changes a tensor is a ConfigError naming the key (exit 2), a tensor
//     that does not match the checkpoint's own config is damage (CheckpointError naming it, exit 3);
//   - the model's other tensors all belong to gates the config adds, and each added gate ramps in
//     (ConfigError naming the gate entry's ramp_steps otherwise).
InitFrom init_from_checkpoint(const Config& cfg, const Dataset& data, models::GPT& model);

}  // namespace gattn::recipes
