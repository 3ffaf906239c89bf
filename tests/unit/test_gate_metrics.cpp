// The gate metrics of metrics.jsonl and the summaries: per-head gate statistics through the flat
// layout ranks all-reduce, batch merging and the metrics line; the val gate statistics; the pair
// gates' α per layer; the padding of a rank that ran no eval batch; the ablation summary's model
// size, FLOPs and generation speed columns; the report's per-head table.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <mutex>

#include "core/tensor/error.h"
#include "models/gpt.h"
#include "models/layer_stats_io.h"
#include "recipes/ablate/ablation_summary.h"
#include "recipes/ablate/generation_speed.h"
#include "recipes/ablate/report_html.h"
#include "recipes/common/stats_reduce.h"
#include "recipes/train/metrics_line.h"
#include "test_util.h"
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
  EXPECT_EQ(fa.size(), 3 * 16 + 3 * 5u);  // the fixed fields of 3 layers and 5 per reported head

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
  const std::vector<std::optional<double>> alpha = recipes::gate_parameters_by_layer(model).at("pair_alpha");
  ASSERT_EQ(alpha.size(), 3u);
  ASSERT_TRUE(alpha[0] && alpha[1]);
  EXPECT_NEAR(*alpha[0], 1 / (1 + std::exp(-0.5)), 1e-7);
  EXPECT_NEAR(*alpha[1], 1 / (1 + std::exp(1.25)), 1e-7);
  EXPECT_FALSE(alpha[2]);

  recipes::TrainLine t;
  t.gate_parameters["pair_alpha"] = alpha;
  const nlohmann::json line = recipes::train_metrics_line(t);
  ASSERT_EQ(line["pair_alpha_by_layer"].size(), 3u);
  EXPECT_DOUBLE_EQ(line["pair_alpha_by_layer"][1].get<double>(), *alpha[1]);
  EXPECT_TRUE(line["pair_alpha_by_layer"][2].is_null());
  EXPECT_DOUBLE_EQ(line["pair_alpha"].get<double>(), (*alpha[0] + *alpha[1]) / 2);

  // Without a pair gate: no α, no keys.
  models::GPT plain(test::tiny_config("output", DType::f32), 1);
  EXPECT_TRUE(recipes::gate_parameters_by_layer(plain).empty());
  recipes::TrainLine none;
  EXPECT_FALSE(recipes::train_metrics_line(none).contains("pair_alpha_by_layer"));
  EXPECT_FALSE(recipes::train_metrics_line(none).contains("pair_alpha"));
}

recipes::RunRecord record(double loss, double gen_tps) {
  recipes::RunRecord r;
  r.val_loss = loss;
  r.tokens_per_s = 100;
  r.parameters = 1234;
  r.flops_per_token = 61234;
  r.generation_tokens_per_s = gen_tps;
  r.last_step = 10;
  return r;
}

TEST(GateMetrics, AblationSummaryHasSizeFlopsAndGenerationColumns) {
  using namespace recipes;
  const std::vector<GridAxis> grid{{"model.gate.kind", {"none"}}, {"seed", {"0", "1"}}};
  const std::vector<Cell> cells = expand_grid(grid);
  const std::vector<CellResult> results{{cells[0], record(2.0, 1000)}, {cells[1], record(3.0, 3000)}};
  const std::string md = summary_markdown(grid, results);
  EXPECT_NE(md.find("| tokens/s | gen tokens/s | parameters | MFLOP/token |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 100 ± 0 | 2000 ± 1414 | 1234 | 0.0612 |"), std::string::npos) << md;
  const std::string csv = summary_csv(grid, results);
  EXPECT_NE(csv.find(",steps,elapsed_s,flops_per_token,generation_tokens_per_s,cross_attn_entropy\n"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("\nkind-none_seed-1,none,1,3,,,,,,100,1234,10,,61234,3000,\n"), std::string::npos) << csv;
}

TEST(GateMetrics, RunRecordReadsModelSizeAndAFreshGenerationFile) {
  using namespace recipes;
  test::TempDir tmp;
  const std::string dir = tmp.path().string();
  {
    std::ofstream(tmp.file("metrics.jsonl"))
        << R"({"step":5,"split":"train","loss":2.0,"gate_mean":0.5,"gate_mean_by_head":[[0.25,0.75],null]})"
           "\n";
    std::ofstream(tmp.file("config.yaml")) << "model: {vocab_size: 11, block_size: 8, n_layer: 2, n_head: 2, "
                                              "n_embd: 8}\n";
    std::filesystem::create_directories(tmp.path() / "checkpoints");
    std::ofstream(tmp.file("checkpoints/latest")) << "step_00000005\n";
  }
  GenerationSpeed g;
  g.tokens_per_s = 4321;
  g.checkpoint = "step_00000005";
  write_generation(dir, g);
  RunRecord r = read_run(dir);
  models::ModelConfig mc;
  mc.vocab_size = 11;
  mc.block_size = 8;
  mc.n_layer = 2;
  mc.n_head = 2;
  mc.n_embd = 8;
  models::GPT model(mc, 0);
  ASSERT_TRUE(r.parameters && r.flops_per_token);
  EXPECT_EQ(*r.parameters, model.num_parameters());
  EXPECT_DOUBLE_EQ(*r.flops_per_token, model.flops_per_token(8));
  EXPECT_GT(*r.flops_per_token, 6.0 * 8 * 8);
  ASSERT_TRUE(r.generation_tokens_per_s);
  EXPECT_DOUBLE_EQ(*r.generation_tokens_per_s, 4321);
  EXPECT_EQ(r.gate_mean_by_head.size(), 2u);
  // Measured on an older checkpoint: stale, not shown.
  std::ofstream(tmp.file("checkpoints/latest")) << "step_00000009\n";
  EXPECT_FALSE(read_run(dir).generation_tokens_per_s);
}

TEST(GateMetrics, ReportShowsTheFinalGateMeanPerHead) {
  using namespace recipes;
  ReportRun run;
  run.record.name = "gated";
  run.record.dir = "runs/gated";
  run.record.config = {{"model", {{"n_layer", 2}}}};
  run.record.metrics.push_back({{"step", 1},
                                {"split", "train"},
                                {"loss", 2.0},
                                {"gate_mean_by_layer", {0.5, 0.4}},
                                {"gate_mean_by_head", {{0.25, 0.75}, nullptr}}});
  run.record.gate_mean = 0.45;
  run.record.gate_mean_by_head = run.record.metrics[0]["gate_mean_by_head"];
  run.record.generation_tokens_per_s = 812.0;
  run.probe.note = "no checkpoint";
  ReportOptions o;
  const std::string html = report_html({run}, o);
  const std::size_t table = html.find("id=\"gate-by-head-run0\"");
  ASSERT_NE(table, std::string::npos) << html;
  EXPECT_NE(html.find("<th>head 1</th>", table), std::string::npos);
  EXPECT_NE(html.find("<td>0.75</td>", table), std::string::npos);
  EXPECT_NE(html.find("<td>1</td><td>–</td><td>–</td>", table), std::string::npos);  // layer 1: no heads
  EXPECT_NE(html.find("<th>gen tokens/s</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>812</td>"), std::string::npos);
  run.record.gate_mean_by_head = nullptr;
  EXPECT_EQ(report_html({run}, o).find("gate-by-head-run0"), std::string::npos);
}

}  // namespace
}  // namespace gattn
