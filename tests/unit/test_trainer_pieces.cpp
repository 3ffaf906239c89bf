// The named pieces of the training loop (recipes/train/): the NaN guard's count and messages, the
// checkpoint policy, the train line of metrics.jsonl, and the statistics' serialisation that the
// ranks all-reduce.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "framework/config/errors.h"
#include "models/layer_stats_io.h"
#include "recipes/common/run_config.h"
#include "recipes/train/checkpoint_policy.h"
#include "recipes/train/gradient_world.h"
#include "recipes/train/metrics_line.h"
#include "recipes/train/nan_guard.h"

namespace gattn {

using recipes::CheckpointPolicy;
using recipes::NanGuard;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

models::LayerStats layer(double gate_value, double entropy, double sink) {
  models::LayerStats s;
  if (gate_value >= 0)
    for (int i = 0; i < 4; ++i) s.gate.add(gate_value);
  s.attention.entropy_sum = entropy * 10;
  s.attention.entropy_count = 10;
  s.attention.sink_sum = sink * 8;
  s.attention.sink_count = 8;
  return s;
}

}  // namespace

TEST(NanGuard, CountsBadStepsInARowAndResetsOnAGoodOne) {
  NanGuard g(3);
  EXPECT_TRUE(g.step_ok(1.0, 2.0));
  EXPECT_FALSE(g.step_ok(kNaN, 2.0));
  EXPECT_FALSE(g.step_ok(1.0, kInf));
  EXPECT_EQ(g.bad_in_a_row(), 2);
  EXPECT_FALSE(g.exhausted());
  EXPECT_TRUE(g.step_ok(1.0, 2.0));
  EXPECT_EQ(g.bad_in_a_row(), 0);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(g.step_ok(1.0, kNaN));
  EXPECT_TRUE(g.exhausted());
  NanGuard resumed(3, 2);  // a resumed run continues the count
  EXPECT_FALSE(resumed.step_ok(kNaN, 0));
  EXPECT_TRUE(resumed.exhausted());
}

TEST(NanGuard, NamesTheCulpritAndTheCheckpoint) {
  EXPECT_EQ(NanGuard::culprit(kNaN, "blocks.0.attn.qkv.weight"), "loss");
  EXPECT_EQ(NanGuard::culprit(1.0, "blocks.0.attn.qkv.weight"), "gradient of blocks.0.attn.qkv.weight");
  EXPECT_EQ(NanGuard::culprit(1.0, ""), "gradient norm");
  NanGuard g(2);
  g.step_ok(kNaN, 1);
  EXPECT_EQ(g.skipped_message(7, "loss"), "step 7: non-finite loss, update skipped (1/2)");
  g.step_ok(kNaN, 1);
  EXPECT_EQ(g.failure_message(8, "loss", ""),
            "train: non-finite loss at step 8, the 2 bad step(s) in a row that train.max_bad_steps allows; no "
            "checkpoint was written");
  EXPECT_NE(g.failure_message(8, "loss", "runs/x/checkpoints/step_00000005").find("step_00000005, is untouched"),
            std::string::npos);
}

TEST(CheckpointPolicy, EveryNGoodStepsAndAlwaysTheLast) {
  const CheckpointPolicy p{5};
  EXPECT_FALSE(p.due(4, false, 0));
  EXPECT_TRUE(p.due(5, false, 0));
  EXPECT_FALSE(p.due(10, false, 1));  // a skipped step: the newest checkpoint stays the last good state
  EXPECT_TRUE(p.due(12, true, 1));    // the final one regardless
  const CheckpointPolicy only_final{0};
  EXPECT_FALSE(only_final.due(5, false, 0));
  EXPECT_TRUE(only_final.due(6, true, 0));
}

TEST(MetricsLine, FieldsStatisticsAndRegularisersByName) {
  recipes::TrainLine t;
  t.step = 20;
  t.loss = 1.5;
  t.lr = 1e-3;
  t.grad_norm = 0.7;
  t.tokens_per_s = 1000;
  t.elapsed_s = 3;
  t.stats = {layer(0.25, 1.0, 0.2), layer(-1, 2.0, 0.4)};  // the second layer has no gate
  t.regularizers = {{"gate_entropy", 0.6}, {"attn_entropy", 1.4}, {"router_balance", 1.0}};
  const nlohmann::json line = recipes::train_metrics_line(t);
  EXPECT_EQ(line["step"], 20);
  EXPECT_EQ(line["split"], "train");
  EXPECT_DOUBLE_EQ(line["loss"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(line["attn_entropy"].get<double>(), 1.5);      // the statistic: mean over layers
  EXPECT_DOUBLE_EQ(line["attn_entropy_reg"].get<double>(), 1.4);  // the regulariser beside it
  EXPECT_DOUBLE_EQ(line["gate_entropy"].get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(line["router_balance"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(line["gate_mean"].get<double>(), 0.25);
  EXPECT_TRUE(line["gate_mean_by_layer"][1].is_null());
  EXPECT_DOUBLE_EQ(line["sink_ratio_by_layer"][1].get<double>(), 0.4);
  // Without gates there are no gate fields.
  t.stats = {layer(-1, 1.0, 0.1)};
  EXPECT_FALSE(recipes::train_metrics_line(t).contains("gate_mean"));
}

TEST(MetricsLine, PrunedTileShareOnlyWhenSomeLayerPrunes) {
  recipes::TrainLine t;
  t.stats = {layer(0.25, 1.0, 0.2), layer(-1, 2.0, 0.4)};
  EXPECT_FALSE(recipes::train_metrics_line(t).contains("attn_pruned_tile_frac"));
  t.stats[1].attention.pruned_tiles = 3;
  t.stats[1].attention.visited_tiles = 1;
  const nlohmann::json line = recipes::train_metrics_line(t);
  EXPECT_DOUBLE_EQ(line["attn_pruned_tile_frac"].get<double>(), 0.75);
  EXPECT_TRUE(line["attn_pruned_tile_frac_by_layer"][0].is_null());
  EXPECT_DOUBLE_EQ(line["attn_pruned_tile_frac_by_layer"][1].get<double>(), 0.75);
  // The counts travel with the other sums across ranks.
  std::vector<models::LayerStats> back = {layer(0.25, 1.0, 0.2), layer(-1, 2.0, 0.4)};
  models::unflatten_stats(models::flatten_stats(t.stats), back);
  EXPECT_EQ(back[1].attention.pruned_tiles, 3);
  EXPECT_EQ(back[1].attention.visited_tiles, 1);
}

TEST(LayerStatsIo, FlattenedSumsAddUpAcrossRanks) {
  const std::vector<models::LayerStats> a = {layer(0.25, 1.0, 0.2), layer(0.75, 2.0, 0.4)};
  const std::vector<models::LayerStats> b = {layer(0.5, 3.0, 0.6), layer(-1, 1.0, 0.2)};
  std::vector<double> fa = models::flatten_stats(a), fb = models::flatten_stats(b);
  ASSERT_EQ(fa.size(), fb.size());
  for (std::size_t i = 0; i < fa.size(); ++i) fa[i] += fb[i];  // what the all-reduce does
  std::vector<models::LayerStats> sum(2);
  models::unflatten_stats(fa, sum);
  EXPECT_EQ(sum[0].gate.count, 8);
  EXPECT_DOUBLE_EQ(sum[0].gate.mean(), 0.375);
  EXPECT_EQ(sum[1].gate.count, 4);
  EXPECT_DOUBLE_EQ(sum[0].attn_entropy(), 2.0);
  EXPECT_DOUBLE_EQ(sum[1].sink_ratio(), 0.3);
}

TEST(GradientWorld, BucketSizeAndWireTypeComeFromTheConfig) {
  const dist::GradientSync f32 = recipes::gradient_sync(Config::defaults());
  EXPECT_EQ(f32.wire_dtype, DType::f32);
  EXPECT_EQ(f32.bucket_elements, 25 * 1024 * 1024 / 4);  // dist.bucket_mb 25 MiB of f32
  const dist::GradientSync bf16 = recipes::gradient_sync(Config::from_string("dist: {grad_dtype: bf16, bucket_mb: 1}"));
  EXPECT_EQ(bf16.wire_dtype, DType::bf16);
  EXPECT_EQ(bf16.bucket_elements, 1024 * 1024 / 2);
}

TEST(GradientWorld, RequestsTheJobCannotMeetAreConfigErrorsAtTheirLine) {
  const Config cfg = Config::from_string("device: cpu\ndist:\n  backend: nccl\n", {}, "run.yaml");
  dist::GradientBackendInputs in = recipes::gradient_backend_inputs(cfg, Device::cpu, 2);
  try {
    recipes::checked_gradient_backend(cfg, in);
    FAIL() << "nccl on the CPU was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("run.yaml:3: dist.backend 'nccl' needs device cuda"), std::string::npos)
        << e.what();
  }
  const Config zero = Config::from_string("dist:\n  zero: 1\n  grad_dtype: bf16\n", {}, "z.yaml");
  try {
    recipes::checked_gradient_backend(zero, recipes::gradient_backend_inputs(zero, Device::cpu, 2));
    FAIL() << "bf16 buckets under ZeRO-1 were accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("z.yaml:3: dist.grad_dtype 'bf16' is for dist.zero 0"), std::string::npos)
        << e.what();
  }
}

}  // namespace gattn
