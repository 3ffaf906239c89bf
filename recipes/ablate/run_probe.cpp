// Running a checkpoint over val windows with the inspection hook.
#include "recipes/ablate/run_probe.h"

#include <algorithm>

#include "core/autograd/grad_mode.h"
#include "framework/data/dataset.h"
#include "framework/io/checkpoint_text.h"
#include "framework/text/text_codec.h"
#include "models/sampling.h"
#include "ops/shape.h"
#include "recipes/common/run_setup.h"

namespace gattn::recipes {

namespace {

// Cuts the sample's part of an inspection to its first `rows` query rows and `keys` key columns: the
// attention [H, T, K], and gate_by_token for a self-attention (a cross gate's may run along the
// source instead: left as it is). A layer without attention weights keeps what it has.
void cut_sample(models::LayerInspection& layer, std::int64_t rows, std::int64_t keys, bool self = true) {
  const std::int64_t T = layer.tokens, K = layer.keys > 0 ? layer.keys : layer.tokens, H = layer.heads;
  rows = std::min(rows, T);
  keys = std::min(keys, K);
  if (self && layer.gate_by_token.size() == static_cast<std::size_t>(T))
    layer.gate_by_token.resize(static_cast<std::size_t>(rows));
  if (layer.attention.size() == static_cast<std::size_t>(H * T * K)) {
    std::vector<double> cut;
    cut.reserve(static_cast<std::size_t>(H * rows * keys));
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < rows; ++i) {
        const auto row = layer.attention.begin() + (h * T + i) * K;
        cut.insert(cut.end(), row, row + keys);
      }
    layer.attention = std::move(cut);
  }
  layer.tokens = rows;
  layer.keys = keys;
}

// How token `id` reads: the codec's bytes, else the id; the reserved ids of seq2seq data by name.
std::string token_text(const CheckpointModel& ckpt, std::int32_t id, bool seq2seq) {
  if (seq2seq && id == kSeq2SeqPad) return "<pad>";
  if (seq2seq && id == kSeq2SeqStart) return "<s>";
  if (seq2seq && id == kSeq2SeqEnd) return "</s>";
  return ckpt.codec ? display_token(ckpt.codec->token_bytes(id)) : std::to_string(id);
}

// The greedy target of `source` and the cross-attention's gate at each step that wrote it: the
// forward of the decoder's input (start, g₁ … gₙ₋₁) gives, at position t, the gate of the step that
// writes g_{t+1}, the same values the cached generation computed (generate_target equals forward()).
void generated_gate(CheckpointModel& ckpt, const std::vector<std::int32_t>& source, RunProbe& probe) {
  models::GPT& model = *ckpt.model;
  models::SamplingOptions greedy;
  greedy.temperature = 0;
  const std::vector<std::int32_t> target = models::generate_target(model, source, model.config().block_size, greedy);
  if (target.empty()) return;
  std::vector<std::int32_t> input{kSeq2SeqStart};
  input.insert(input.end(), target.begin(), target.end() - 1);
  models::ForwardOptions fo;
  fo.inspect = true;
  fo.source = Tensor::from_ints(source, {1, static_cast<std::int64_t>(source.size())});
  const Tensor idx = Tensor::from_ints(input, {1, static_cast<std::int64_t>(input.size())});
  const models::ForwardResult r = model.forward(idx, Tensor(), fo);
  bool any = false;
  for (const models::LayerInspection& layer : r.cross_inspection) {
    const bool per_step = layer.gate_by_position.size() == target.size();
    probe.generated_gate.push_back(per_step ? layer.gate_by_position : std::vector<double>{});
    any = any || per_step;
  }
  if (!any) {
    probe.generated_gate.clear();
    return;
  }
  for (std::int32_t id : target) probe.generated_tokens.push_back(token_text(ckpt, id, true));
}

}  // namespace

RunProbe probe_run(CheckpointModel& ckpt, std::int64_t windows, std::int64_t max_tokens) {
  RunProbe probe;
  try {
    models::GPT& model = *ckpt.model;
    const std::int64_t T = model.config().block_size;
    const bool seq2seq = model.config().encoder_decoder();
    std::unique_ptr<Dataset> data = make_dataset(data_options(ckpt.config), T);
    const std::int64_t count = std::clamp<std::int64_t>(windows, 1, data->eval_windows(T, 0));
    const Batch batch = data->eval_batch(0, count, T);
    Tensor x = batch.x, y = batch.y;
    // A seq2seq batch is as wide as its longest target (at most the block); the source stays whole.
    const std::int64_t n = std::clamp<std::int64_t>(max_tokens, 1, x.size(1));
    if (n < x.size(1)) {
      x = ops::slice(x, 1, 0, n);  // a copy: slice gives a new dense tensor
      y = ops::slice(y, 1, 0, n);
    }
    NoGradGuard no_grad;
    model.eval();
    models::ForwardOptions fo;
    fo.inspect = true;
    if (seq2seq) fo.source = batch.source;
    models::ForwardResult r = model.forward(x, Tensor(), fo);
    probe.token_classes = gate_token_classes(r, Batch{x, y, batch.source}, ckpt.codec.get(), seq2seq);
    probe.layers = std::move(r.inspection);
    // The sample's own ids: a seq2seq batch pads its sources and decoder inputs to its longest (a
    // decoder input starts with the start token and a source with a token: neither is empty).
    const std::vector<std::int32_t> ids = row_ids_until(
        x, 0, seq2seq ? is_seq2seq_pad : [](std::int32_t) { return false; });
    probe.text = ckpt.codec != nullptr;
    probe.subword = ckpt.metadata.count(kTokenizerKey) > 0;
    if (seq2seq) {
      const std::vector<std::int32_t> source = row_ids_until(batch.source, 0, is_seq2seq_pad);
      const auto rows = static_cast<std::int64_t>(ids.size()), keys = static_cast<std::int64_t>(source.size());
      for (models::LayerInspection& layer : probe.layers) cut_sample(layer, rows, rows);
      probe.cross = std::move(r.cross_inspection);
      for (models::LayerInspection& layer : probe.cross) cut_sample(layer, rows, keys, false);
      probe.encoder = std::move(r.encoder_inspection);
      for (models::LayerInspection& layer : probe.encoder) cut_sample(layer, keys, keys);
      for (std::int32_t id : source) probe.source_tokens.push_back(token_text(ckpt, id, true));
      generated_gate(ckpt, source, probe);
    }
    for (std::int32_t id : ids) probe.tokens.push_back(token_text(ckpt, id, seq2seq));
  } catch (const std::exception& e) {
    probe = RunProbe{};
    probe.note = e.what();
  }
  return probe;
}

}  // namespace gattn::recipes
