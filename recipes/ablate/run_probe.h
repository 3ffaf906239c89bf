// A look inside a trained run for `gattn report`: its latest checkpoint run in eval mode over the
// first val windows with the forward's inspection hook, giving each layer's gate values, the sample
// text's gate value per token and its attention weights.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/attention.h"

namespace gattn::recipes {

struct RunProbe {
  std::string note;                             // why there is no probe ("" when there is one)
  std::vector<std::string> tokens;              // how each position of the sample text reads
  bool text = false;                            // characters (else token ids, shown apart)
  bool subword = false;                         // subword pieces of a tokenizer: shown with dividers
  std::vector<models::LayerInspection> layers;  // gate values over all windows; the rest for the sample
  bool ok() const { return note.empty(); }
};

// `windows` val windows (at least 1) feed the gate histograms; the first one, cut to `max_tokens`
// positions, is the sample text. A run without a checkpoint, or whose data cannot be read from here,
// gives a probe with a note instead of failing the report.
RunProbe probe_run(const std::string& run_dir, std::int64_t windows, std::int64_t max_tokens);

}  // namespace gattn::recipes
