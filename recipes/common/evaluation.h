// Evaluation on the val split, shared by training (its eval lines), `gattn eval` and the ablation:
// the mean loss with the gate and attention statistics, and how a result is printed and logged.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "framework/data/dataset.h"
#include "framework/dist/communicator.h"
#include "models/gpt.h"
#include "recipes/common/position_loss.h"
#include "recipes/common/run_config.h"

namespace gattn::recipes {

struct EvalResult {
  double loss = 0;
  std::int64_t tokens = 0;  // predicted tokens the loss averages over
  // Synthetic tasks: answer-token accuracy. Sequence-to-sequence data (Dataset::seq2seq): exact
  // match, the fraction of the `sequences` whose every target token the argmax predicts.
  std::optional<double> accuracy;
  bool seq2seq = false;
  std::int64_t sequences = 0;  // seq2seq: the sequences (rows with a target) exact match counts
  // Data with text behind its ids (char-level text, shards with a tokenizer): the loss in bits per
  // byte of the predicted text, log2(e) · Σ loss / Σ bytes of the targets, which compares models
  // across vocabularies (a char-level and a subword model of the same text).
  std::optional<double> bits_per_byte;
  // Models with gates: the per-layer statistics of every eval forward, summed over all windows (eval
  // mode: no gate noise); empty for a model without gates.
  std::vector<models::LayerStats> stats;
  // Encoder–decoder models: the cross-attention's statistics per decoder block and the encoder's per
  // block, summed like `stats`, and the mean over those layers of their attention entropy (nats).
  std::vector<models::LayerStats> cross_stats, encoder_stats;
  std::optional<double> cross_attn_entropy, encoder_attn_entropy;
  std::int64_t context = 0;                 // the window length evaluated at
  std::vector<PositionBucket> by_position;  // the loss by position (EvalOptions::by_position), else empty
};

struct EvalOptions {
  // Tokens per window: 0 for the model's block_size; another length needs a model that can run it
  // (recipes/common/context_model.h) and data that can cut windows of it.
  std::int64_t context = 0;
  bool by_position = false;  // the loss in log-spaced position buckets (recipes/common/position_loss.h)
};

// Mean loss over the val split's eval windows (docs/config.md), in batches of `batch_size` windows, and
// for a model with gates the gate and attention statistics of those forwards. With a communicator of
// several ranks the batches are dealt round-robin and the sums reduced: every rank gets the same
// result, each having run 1/world of the windows.
EvalResult evaluate(models::GPT& model, const Dataset& data, const Config& cfg, std::int64_t batch_size,
                    dist::Communicator* comm = nullptr, const EvalOptions& options = {});
// "eval at step N: val loss …" with the answer accuracy (synthetic tasks) or exact match (seq2seq),
// the val gate mean and std (models with gates) and the cross-attention entropy (encoder–decoders).
std::string format_eval(std::int64_t step, const EvalResult& e);
// The fields an eval adds to a val line of metrics.jsonl and to `gattn eval`'s line: loss, accuracy
// (synthetic tasks: answer accuracy; seq2seq: exact match), bits_per_byte (text), the val gate
// statistics (models::add_val_gate_stats) and, for an encoder–decoder, cross_attn_entropy and
// encoder_attn_entropy.
void add_eval_fields(nlohmann::json& line, const EvalResult& e);

}  // namespace gattn::recipes
