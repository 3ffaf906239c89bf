// Evaluation on the val split: batches dealt over the ranks, sums reduced, statistics averaged.
#include "recipes/common/evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/autograd/grad_mode.h"
#include "models/layer_stats_io.h"
#include "ops/autocast.h"
#include "recipes/common/stats_reduce.h"

namespace gattn::recipes {

EvalResult evaluate(models::GPT& model, const Dataset& data, const Config& cfg, std::int64_t batch_size,
                    dist::Communicator* comm, const EvalOptions& options) {
  const int world = comm ? comm->size() : 1, rank = comm ? comm->rank() : 0;
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const std::int64_t T = options.context > 0 ? options.context : model.config().block_size;
  std::vector<PositionBucket> by_position = options.by_position ? position_buckets(T) : std::vector<PositionBucket>{};
  const bool encoder_decoder = model.config().encoder_decoder();
  const Device device = model.parameters().front().device();  // batches go where the model is
  // On the GPU, evaluated in the precision the run trains in, so val loss measures the model as
  // trained; elsewhere (`gattn eval` of a bf16 run's checkpoint on a CPU) in f32.
  const bool bf16 = device == Device::cuda && cfg.get_string("train.precision") == "bf16";
  const ops::AutocastScope autocast(bf16 ? ops::ComputePrecision::bf16 : ops::ComputePrecision::fp32);
  const std::int64_t windows = data.eval_windows(T, cfg.get_int("eval.max_windows"));
  // correct: Σ answer accuracy · tokens, or for seq2seq the sequences exactly right.
  double loss_sum = 0, correct = 0, bytes = 0;
  std::int64_t tokens = 0, sequences = 0;
  const std::shared_ptr<const TextCodec> codec = data.text_codec();
  const std::vector<std::int32_t> byte_lengths = codec ? token_byte_lengths(*codec) : std::vector<std::int32_t>{};
  std::int64_t batch_index = 0;
  models::ForwardOptions fo;
  // The val gate statistics, act_max, and an encoder–decoder's attention entropies: a by-product of
  // the forward.
  fo.collect_stats = true;
  ForwardStats stats;
  for (std::int64_t first = 0; first < windows; first += batch_size) {
    if (batch_index++ % world != rank) continue;
    const std::int64_t count = std::min(batch_size, windows - first);
    Batch batch = data.eval_batch(first, count, T);
    if (encoder_decoder) fo.source = batch.source.to(device);
    models::ForwardResult r = model.forward(batch.x.to(device), batch.y.to(device), fo);
    stats.merge({std::move(r.stats), std::move(r.cross_stats), std::move(r.encoder_stats)});
    std::int64_t n = 0;
    for (double t : batch.y.to_vector()) {
      n += t >= 0;
      if (t >= 0 && t < static_cast<double>(byte_lengths.size())) bytes += byte_lengths[static_cast<std::size_t>(t)];
    }
    loss_sum += r.loss.item() * static_cast<double>(n);
    if (options.by_position) add_position_losses(r.logits, batch.y, by_position);
    if (data.seq2seq()) {
      const Dataset::ExactMatch m = Dataset::exact_match_counts(r.logits.to(Device::cpu), batch);
      correct += static_cast<double>(m.right);
      sequences += m.rows;
    } else if (data.reports_accuracy()) {
      correct += Dataset::answer_accuracy(r.logits.to(Device::cpu), batch) * static_cast<double>(n);
    }
    tokens += n;
  }
  model.train(was_training);
  if (world > 1) {
    std::vector<double> local = {loss_sum, correct, static_cast<double>(tokens), bytes, static_cast<double>(sequences)};
    for (const PositionBucket& b : by_position) {
      local.push_back(b.loss_sum);
      local.push_back(static_cast<double>(b.tokens));
    }
    const std::vector<double> sums = comm->all_reduce_host(local, dist::ReduceOp::sum, "all-reduce of the eval sums");
    for (std::size_t i = 0; i < by_position.size(); ++i) {
      by_position[i].loss_sum = sums[5 + 2 * i];
      by_position[i].tokens = static_cast<std::int64_t>(sums[6 + 2 * i]);
    }
    loss_sum = sums[0];
    correct = sums[1];
    tokens = static_cast<std::int64_t>(sums[2]);
    bytes = sums[3];
    sequences = static_cast<std::int64_t>(sums[4]);
    if (fo.collect_stats) all_reduce_stats(*comm, stats, model.config(), "all-reduce of the eval statistics");
  }
  EvalResult e;
  e.stats = std::move(stats.stats);
  e.cross_stats = std::move(stats.cross);
  e.encoder_stats = std::move(stats.encoder);
  e.cross_attn_entropy = mean_attn_entropy(e.cross_stats);
  e.encoder_attn_entropy = mean_attn_entropy(e.encoder_stats);
  e.tokens = tokens;
  e.context = T;
  e.by_position = std::move(by_position);
  e.loss = tokens ? loss_sum / static_cast<double>(tokens) : 0.0;
  e.seq2seq = data.seq2seq();
  e.sequences = sequences;
  if (e.seq2seq)
    e.accuracy = sequences ? correct / static_cast<double>(sequences) : 0.0;
  else if (data.reports_accuracy())
    e.accuracy = tokens ? correct / static_cast<double>(tokens) : 0.0;
  if (codec && bytes > 0) e.bits_per_byte = loss_sum / bytes / std::log(2.0);
  return e;
}

std::string format_eval(std::int64_t step, const EvalResult& e) {
  char buf[160];
  if (e.accuracy && e.seq2seq)
    std::snprintf(buf, sizeof buf, "eval at step %lld: val loss %.4f, exact match %.1f%% (%lld sequences)",
                  static_cast<long long>(step), e.loss, 100.0 * *e.accuracy, static_cast<long long>(e.sequences));
  else if (e.accuracy)
    std::snprintf(buf, sizeof buf, "eval at step %lld: val loss %.4f, answer accuracy %.1f%% (%lld answers)",
                  static_cast<long long>(step), e.loss, 100.0 * *e.accuracy, static_cast<long long>(e.tokens));
  else
    std::snprintf(buf, sizeof buf, "eval at step %lld: val loss %.4f (%lld tokens)", static_cast<long long>(step),
                  e.loss, static_cast<long long>(e.tokens));
  std::string out = buf;
  nlohmann::json gates;
  models::add_val_gate_stats(gates, e.stats);
  if (gates.contains("val_gate_mean")) {
    std::snprintf(buf, sizeof buf, ", val gate mean %.3f (std %.3f)", gates["val_gate_mean"].get<double>(),
                  gates["val_gate_std"].get<double>());
    out += buf;
  }
  if (e.cross_attn_entropy) {
    std::snprintf(buf, sizeof buf, ", cross-attn entropy %.3f", *e.cross_attn_entropy);
    out += buf;
  }
  if (e.bits_per_byte) {
    std::snprintf(buf, sizeof buf, ", %.4f bits/byte", *e.bits_per_byte);
    out += buf;
  }
  return out;
}

void add_eval_fields(nlohmann::json& line, const EvalResult& e) {
  line["loss"] = e.loss;
  if (e.accuracy) line["accuracy"] = *e.accuracy;
  if (e.bits_per_byte) line["bits_per_byte"] = *e.bits_per_byte;
  if (e.cross_attn_entropy) line["cross_attn_entropy"] = *e.cross_attn_entropy;
  if (e.encoder_attn_entropy) line["encoder_attn_entropy"] = *e.encoder_attn_entropy;
  if (!e.by_position.empty()) line["loss_by_position"] = position_loss_json(e.by_position);
  models::add_val_gate_stats(line, e.stats);
  models::add_val_attention_stats(line, e.stats);
  models::add_act_max(line, e.stats, "val_");
  add_encoder_gate_stats(line, e.encoder_stats, "val_");
}

}  // namespace gattn::recipes
