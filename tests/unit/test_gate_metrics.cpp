// The gate metrics of metrics.jsonl: per-head gate statistics through the flat layout ranks
// all-reduce, batch merging and the metrics line; the val gate statistics; the pair gates' α per
// layer; the padding of a rank that ran no eval batch.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "framework/tensor/error.h"
#include "models/gpt.h"
#include "models/layer_stats_io.h"
#include "recipes/common/stats_reduce.h"
#include "recipes/train/metrics_line.h"
#include "thread_world.h"
#include "unit/model_test_util.h"

namespace gattn {
namespace {

// A layer whose gates gave `n` values `g` each to heads 0 … H−1 (head h gets g + h/10); H = 0: no
// per-head values, g < 0: no gate values at all.
models::LayerStats layer(double g, std::size_t H, int n = 4) {
  models::LayerStats s;
  s.attention.entropy_sum = 2.0 * 10;
  s.attention.entropy_count = 10;
  s.attention.sink_sum = 0.5 * 8;
  s.attention.sink_count = 8;
  if (g < 0) return s;
  s.gate_by_head.resize(H);
  for (std::size_t h = 0; h < H; ++h)
    for (int i = 0; i < n; ++i) {
      s.gate_by_head[h].add(g + 0.1 * static_cast<double>(h));
      s.gate.add(g + 0.1 * static_cast<double>(h));
    }
  if (H == 0)
    for (int i = 0; i < n; ++i) s.gate.add(g);
  return s;
}

TEST(GateMetrics, ByHeadStatsRoundTripThroughTheFlatLayoutAndAddUpAcrossRanks) {
  // Layer 0 reports 3 heads, layer 1 gate values without heads, layer 2 no gates.
  const std::vector<models::LayerStats> a = {layer(0.2, 3), layer(0.5, 0), layer(-1, 0)};
  const std::vector<models::LayerStats> b = {layer(0.4, 3, 2), layer(0.7, 0), layer(-1, 0)};
  std::vector<double> fa = models::flatten_stats(a);
  const std::vector<double> fb = models::flatten_stats(b);
  ASSERT_EQ(fa.size(), fb.size());
  EXPECT_EQ(fa.size(), 3 * 14 + 3 * 5u);  // the fixed fields of 3 layers and 5 per reported head

  // A round trip gives back every sum and count.
  std::vector<models::LayerStats> back(a.size());
  back[0].gate_by_head.resize(3);  // the receiving stats have the senders' shape
  models::unflatten_stats(fa, back);
  EXPECT_EQ(models::flatten_stats(back), fa);
  ASSERT_EQ(back[0].gate_by_head.size(), 3u);
  EXPECT_EQ(back[0].gate_by_head[2].count, 4);
  EXPECT_DOUBLE_EQ(back[0].gate_by_head[2].mean(), 0.4);
  EXPECT_TRUE(back[1].gate_by_head.empty());  // a layer without per-head values stays without
  EXPECT_TRUE(back[2].gate_by_head.empty());

  // What the all-reduce does: the sums of two ranks.
  for (std::size_t i = 0; i < fa.size(); ++i) fa[i] += fb[i];
  std::vector<models::LayerStats> sum = a;
  models::unflatten_stats(fa, sum);
  EXPECT_EQ(sum[0].gate_by_head[1].count, 6);
  EXPECT_NEAR(sum[0].gate_by_head[1].mean(), (4 * 0.3 + 2 * 0.5) / 6, 1e-12);
  EXPECT_EQ(sum[0].gate.count, 18);
  EXPECT_EQ(sum[1].gate.count, 8);
  EXPECT_DOUBLE_EQ(sum[1].gate.mean(), 0.6);
  EXPECT_DOUBLE_EQ(sum[2].attn_entropy(), 2.0);

  // Stats of another shape cannot take the vector.
  std::vector<models::LayerStats> wrong(3);
  EXPECT_THROW(models::unflatten_stats(fa, wrong), ValueError);
}

TEST(GateMetrics, MergeAddsBatchesHeadByHead) {
  std::vector<models::LayerStats> total;
  models::merge_stats(total, {layer(0.2, 2), layer(-1, 0)});
  models::merge_stats(total, {layer(0.4, 2), layer(-1, 0)});
  ASSERT_EQ(total.size(), 2u);
  EXPECT_EQ(total[0].gate.count, 16);
  EXPECT_NEAR(total[0].gate_by_head[0].mean(), 0.3, 1e-12);
  EXPECT_NEAR(total[0].gate_by_head[1].mean(), 0.4, 1e-12);
  EXPECT_EQ(total[1].attention.entropy_count, 20);
  EXPECT_TRUE(total[1].gate_by_head.empty());
  models::merge_stats(total, {});  // a forward without stats adds nothing
  EXPECT_EQ(total[0].gate.count, 16);
  EXPECT_THROW(models::merge_stats(total, {layer(0.2, 2)}), ValueError);
  EXPECT_THROW(models::merge_stats(total, {layer(0.2, 3), layer(-1, 0)}), ValueError);
}

TEST(GateMetrics, ByHeadArraysAreLayersByHeadsWithNullRows) {
  nlohmann::json line;
  models::add_stats_to_metrics(line, {layer(0.2, 3), layer(0.5, 0), layer(-1, 0)});
  ASSERT_TRUE(line.contains("gate_mean_by_head"));
  ASSERT_TRUE(line.contains("gate_std_by_head"));
  for (const char* key : {"gate_mean_by_head", "gate_std_by_head"}) {
    const nlohmann::json& rows = line[key];
    ASSERT_TRUE(rows.is_array()) << key;
    ASSERT_EQ(rows.size(), 3u) << key;      // [L]
    ASSERT_EQ(rows[0].size(), 3u) << key;   // [H]
    EXPECT_TRUE(rows[1].is_null()) << key;  // gate values, but none per head
    EXPECT_TRUE(rows[2].is_null()) << key;  // no gates
  }
  EXPECT_NEAR(line["gate_mean_by_head"][0][0].get<double>(), 0.2, 1e-12);
  EXPECT_NEAR(line["gate_mean_by_head"][0][2].get<double>(), 0.4, 1e-12);
  EXPECT_NEAR(line["gate_std_by_head"][0][1].get<double>(), 0.0, 1e-6);
  EXPECT_NEAR(line["gate_mean"].get<double>(), (4 * 0.2 + 4 * 0.3 + 4 * 0.4 + 4 * 0.5) / 16, 1e-12);

  // A head without values is null in its row.
  std::vector<models::LayerStats> gap = {layer(0.2, 2)};
  gap[0].gate_by_head.push_back({});
  nlohmann::json with_gap;
  models::add_stats_to_metrics(with_gap, gap);
  EXPECT_TRUE(with_gap["gate_mean_by_head"][0][2].is_null());

  // No layer with per-head values: no by-head keys.
  nlohmann::json plain;
  models::add_stats_to_metrics(plain, {layer(0.5, 0), layer(-1, 0)});
  EXPECT_TRUE(plain.contains("gate_mean"));
  EXPECT_FALSE(plain.contains("gate_mean_by_head"));
  EXPECT_FALSE(plain.contains("gate_std_by_head"));
}

TEST(GateMetrics, ValGateStatsOnlyWithGates) {
  nlohmann::json line;
  models::add_val_gate_stats(line, {layer(0.2, 0), layer(-1, 0), layer(0.6, 0)});
  EXPECT_DOUBLE_EQ(line["val_gate_mean"].get<double>(), 0.4);
  EXPECT_NEAR(line["val_gate_std"].get<double>(), 0.2, 1e-12);
  ASSERT_EQ(line["val_gate_mean_by_layer"].size(), 3u);
  EXPECT_DOUBLE_EQ(line["val_gate_mean_by_layer"][0].get<double>(), 0.2);
  EXPECT_TRUE(line["val_gate_mean_by_layer"][1].is_null());
  nlohmann::json none;
  models::add_val_gate_stats(none, {layer(-1, 0)});
  models::add_val_gate_stats(none, {});
  EXPECT_TRUE(none.is_null());  // nothing added
}

TEST(GateMetrics, ARankWithoutEvalBatchesJoinsTheReductionPadded) {
  // Rank 0 ran two batches, rank 1 none (fewer eval batches than ranks): both end with the sums.
  const std::vector<models::LayerStats> ran = {layer(0.2, 2), layer(0.5, 0)};
  testing::ThreadWorld world(2);
  std::mutex mu;
  std::vector<std::vector<double>> results(2);
  world.run([&](dist::Communicator& comm) {
    std::vector<models::LayerStats> stats;
    if (comm.rank() == 0) stats = ran;
    recipes::all_reduce_stats(comm, stats, 2, "test");
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(stats.size(), 2u);
    ASSERT_EQ(stats[0].gate_by_head.size(), 2u);
    EXPECT_TRUE(stats[1].gate_by_head.empty());
    results[static_cast<std::size_t>(comm.rank())] = models::flatten_stats(stats);
  });
  EXPECT_EQ(results[0], models::flatten_stats(ran));
  EXPECT_EQ(results[1], results[0]);
}

TEST(GateMetrics, PairAlphaPerLayerFromTheNamedParameters) {
  // Block 0: a pair gate alone (attn.gate.alpha); block 1: pair and output (attn.gate.pair.alpha);
  // block 2: output only.
  models::ModelConfig c = test::tiny_config("none", DType::f32);
  c.n_layer = 3;
  models::GateConfig pair, output;
  pair.kind = "pair";
  pair.all_layers = false;
  pair.layers = {0, 1};
  pair.where = "model.gates[0]";
  output.kind = "output";
  output.all_layers = false;
  output.layers = {1, 2};
  output.where = "model.gates[1]";
  c.gates = {pair, output};
  models::GPT model(c, 1);
  model.parameter("blocks.0.attn.gate.alpha").copy_from(Tensor::from({0.5}, {1}, DType::f32));
  model.parameter("blocks.1.attn.gate.pair.alpha").copy_from(Tensor::from({-1.25}, {1}, DType::f32));
  const std::vector<std::optional<double>> alpha = recipes::pair_alpha_by_layer(model);
  ASSERT_EQ(alpha.size(), 3u);
  ASSERT_TRUE(alpha[0] && alpha[1]);
  EXPECT_NEAR(*alpha[0], 1 / (1 + std::exp(-0.5)), 1e-7);
  EXPECT_NEAR(*alpha[1], 1 / (1 + std::exp(1.25)), 1e-7);
  EXPECT_FALSE(alpha[2]);

  recipes::TrainLine t;
  t.pair_alpha = alpha;
  const nlohmann::json line = recipes::train_metrics_line(t);
  ASSERT_EQ(line["pair_alpha_by_layer"].size(), 3u);
  EXPECT_DOUBLE_EQ(line["pair_alpha_by_layer"][1].get<double>(), *alpha[1]);
  EXPECT_TRUE(line["pair_alpha_by_layer"][2].is_null());
  EXPECT_DOUBLE_EQ(line["pair_alpha"].get<double>(), (*alpha[0] + *alpha[1]) / 2);

  // Without a pair gate: no α, no keys.
  models::GPT plain(test::tiny_config("output", DType::f32), 1);
  EXPECT_TRUE(recipes::pair_alpha_by_layer(plain).empty());
  recipes::TrainLine none;
  EXPECT_FALSE(recipes::train_metrics_line(none).contains("pair_alpha_by_layer"));
  EXPECT_FALSE(recipes::train_metrics_line(none).contains("pair_alpha"));
}

}  // namespace
}  // namespace gattn
