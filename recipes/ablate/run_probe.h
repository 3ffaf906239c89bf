// A look inside a trained run for `gattn report`: its latest checkpoint run in eval mode over the
// first val windows with the forward's inspection hook, giving each layer's gate values, the sample
// text's gate value per token and its attention weights. For an encoder–decoder the val windows
// bring their sources, and the probe keeps the cross-attention's and the encoder's inspection too.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/attention.h"
#include "recipes/common/checkpoint_model.h"
#include "recipes/common/gate_token_classes.h"

namespace gattn::recipes {

struct RunProbe {
  std::string note;                             // why there is no probe ("" when there is one)
  std::vector<std::string> tokens;              // how each position of the sample text reads
  bool text = false;                            // characters (else token ids, shown apart)
  bool subword = false;                         // subword pieces of a tokenizer: shown with dividers
  std::vector<models::LayerInspection> layers;  // gate values over all windows; the rest for the sample
  // Encoder–decoder runs (empty for a decoder): the sample's source, how each of its positions reads;
  // `tokens` above is then the decoder's input (start, t₁ … tₙ). Per decoder block, the
  // cross-attention's inspection (attention [H, tokens, keys], keys = the source's positions); per
  // encoder block, the encoder's ([H, S, S]). The sample's maps are cut to its own source and target
  // (the batch's padding left out).
  std::vector<std::string> source_tokens;
  std::vector<models::LayerInspection> cross, encoder;
  // Encoder–decoder runs: the target the model writes for the sample's source (greedy, as `gattn
  // sample --temperature 0`), how each of its tokens reads, and per decoder block the
  // cross-attention's gate at the decoding step that wrote each token (the mean over the gate's
  // values there; an empty row for a block without a gate per target position) — [GateAttn-Guide]
  // §4.4's gate per decoding step. Empty without a cross gate, or when nothing was generated.
  std::vector<std::string> generated_tokens;
  std::vector<std::vector<double>> generated_gate;
  // The gate's mean by token class over all the probe's windows (recipes/common/gate_token_classes.h);
  // empty without text or without gates that report per position.
  std::vector<GateTokenClassRow> token_classes;
  bool ok() const { return note.empty(); }
  bool seq2seq() const { return !source_tokens.empty(); }
};

// `windows` val windows (at least 1) of the run's loaded checkpoint `ckpt` feed the gate
// histograms; the first one, cut to `max_tokens` positions (of the decoder's input, for an
// encoder–decoder), is the sample text. A run whose data cannot be read from here gives a probe
// with a note instead of failing the report.
RunProbe probe_run(CheckpointModel& ckpt, std::int64_t windows, std::int64_t max_tokens);

}  // namespace gattn::recipes
