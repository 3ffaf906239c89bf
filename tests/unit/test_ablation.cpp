// Ablation files (recipes/ablate/ablation.h): parsing, the errors bad files give, grid expansion and cell
// names; and the summary tables (recipes/ablate/ablation_summary.h) with mean ± std over seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "framework/config/errors.h"
#include "recipes/ablate/ablation.h"
#include "recipes/ablate/ablation_summary.h"
#include "test_util.h"

namespace gattn::recipes {
namespace {

std::string error_of_parse(const std::string& text) {
  try {
    parse_ablation(text, "abl.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(AblationFile, ParsesBaseOverridesAndGridInOrder) {
  const AblationSpec s = parse_ablation(
      "base: configs/quickstart.yaml\n"
      "overrides:\n  train.max_steps: 100\n  model.gate.windows: [0, 16]\n"
      "grid:\n  model.gate.kind: [none, output]\n  seed: [0, 1, 2]\n",
      "abl.yaml");
  EXPECT_EQ(s.base, "configs/quickstart.yaml");
  EXPECT_EQ(s.overrides, (std::vector<std::string>{"train.max_steps=100", "model.gate.windows=[0, 16]"}));
  ASSERT_EQ(s.grid.size(), 2u);
  EXPECT_EQ(s.grid[0].key, "model.gate.kind");
  EXPECT_EQ(s.grid[0].values, (std::vector<std::string>{"none", "output"}));
  EXPECT_EQ(s.grid[1].values, (std::vector<std::string>{"0", "1", "2"}));
}

TEST(AblationFile, BadFilesNameTheProblem) {
  const std::string base = "base: b.yaml\n";
  EXPECT_NE(error_of_parse(base).find("the grid is empty"), std::string::npos);
  EXPECT_NE(error_of_parse(base + "grid: {}\n").find("the grid is empty"), std::string::npos);
  const std::string unknown = error_of_parse(base + "grid:\n  model.gate.knd: [none]\n");
  EXPECT_NE(unknown.find("abl.yaml:3: grid key 'model.gate.knd' is not a config key (did you mean 'model.gate.kind'?)"),
            std::string::npos)
      << unknown;
  EXPECT_NE(error_of_parse(base + "grid:\n  seed: []\n").find("non-empty list"), std::string::npos);
  EXPECT_NE(error_of_parse(base + "grid:\n  seed: 3\n").find("non-empty list"), std::string::npos);
  EXPECT_NE(error_of_parse(base + "grid:\n  run.dir: [a, b]\n").find("set by gattn ablate"), std::string::npos);
  EXPECT_NE(error_of_parse(base + "overrides:\n  optim.lrr: 1\ngrid:\n  seed: [0]\n")
                .find("abl.yaml:3: override 'optim.lrr'"),
            std::string::npos);
  EXPECT_NE(error_of_parse("grid:\n  seed: [0]\n").find("'base' is missing"), std::string::npos);
  EXPECT_NE(error_of_parse(base + "grdi:\n  seed: [0]\n").find("abl.yaml:2: unknown key 'grdi'"), std::string::npos);
  EXPECT_NE(error_of_parse("base: [").find("YAML syntax error"), std::string::npos);
}

TEST(AblationGrid, CartesianProductLastAxisFastest) {
  const std::vector<GridAxis> grid{{"model.gate.kind", {"none", "output"}}, {"seed", {"0", "1", "2"}}};
  const std::vector<Cell> cells = expand_grid(grid);
  ASSERT_EQ(cells.size(), 6u);
  EXPECT_EQ(cells[0].name, "kind-none_seed-0");
  EXPECT_EQ(cells[1].name, "kind-none_seed-1");
  EXPECT_EQ(cells[3].name, "kind-output_seed-0");
  EXPECT_EQ(cells[5].overrides(), (std::vector<std::string>{"model.gate.kind=output", "seed=2"}));
}

TEST(AblationGrid, NamesAreReadableAndSafe) {
  EXPECT_EQ(cell_name({{"model.gate.windows", {}}}, {"[0, 16]"}), "windows-0-16");
  EXPECT_EQ(cell_name({{"optim.lr", {}}}, {"3e-4"}), "lr-3e-4");
  // Two axes with the same last part keep their whole keys.
  EXPECT_EQ(cell_name({{"model.gate.kind", {}}, {"data.kind", {}}}, {"score", "synthetic"}),
            "model.gate.kind-score_data.kind-synthetic");
  EXPECT_EQ(cell_name({{"run_x", {}}}, {"a/b c"}), "run-x-a-b-c");
  EXPECT_THROW(expand_grid({{"model.gate.windows", {"[0, 16]", "[0,16]"}}}), ConfigError);
}

RunRecord record(double loss, std::optional<double> gate, double tps) {
  RunRecord r;
  r.val_loss = loss;
  r.gate_mean = gate;
  r.tokens_per_s = tps;
  r.parameters = 1234;
  r.last_step = 10;
  return r;
}

TEST(AblationSummary, MeanAndSampleStdOverSeeds) {
  const std::vector<GridAxis> grid{{"model.gate.kind", {"none", "output"}}, {"seed", {"0", "1"}}};
  const std::vector<Cell> cells = expand_grid(grid);
  const std::vector<CellResult> results{{cells[0], record(2.0, std::nullopt, 100)},
                                        {cells[1], record(4.0, std::nullopt, 300)},
                                        {cells[2], record(1.0, 0.25, 50)},
                                        {cells[3], record(1.5, 0.75, 70)}};
  const std::string md = summary_markdown(grid, results);
  // Header, rule, one row per kind; std of {2, 4} is √2.
  EXPECT_NE(md.find("| kind | seeds | val loss | gate mean |"), std::string::npos) << md;
  EXPECT_NE(md.find("| none | 2 | 3.0000 ± 1.4142 | – |"), std::string::npos) << md;
  EXPECT_NE(md.find("| output | 2 | 1.2500 ± 0.3536 | 0.500 ± 0.354 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 200 ± 141 | – | 1234 | – |"), std::string::npos) << md;  // no generation speed, no FLOPs
  EXPECT_EQ(std::count(md.begin(), md.end(), '\n'), 4);

  const std::string csv = summary_csv(grid, results);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "cell,model.gate.kind,seed,val_loss,val_accuracy,gate_mean,gate_frac_lt_0.1,attn_entropy,sink_ratio,"
            "tokens_per_s,parameters,steps,elapsed_s,flops_per_token,generation_tokens_per_s,cross_attn_entropy");
  EXPECT_NE(csv.find("\nkind-output_seed-1,output,1,1.5,,0.75,,,,70,1234,10,,,,\n"), std::string::npos) << csv;
}

TEST(AblationSummary, MeanStd) {
  EXPECT_EQ(format_mean_std(mean_std({}), 2), "–");
  EXPECT_EQ(format_mean_std(mean_std({1.5}), 2), "1.50");
  const MeanStd m = mean_std({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_NEAR(m.std, 1.2909944487, 1e-9);
  EXPECT_EQ(format_mean_std(m, 3), "2.500 ± 1.291");
}

TEST(RunRecord, ReadsFinalValuesAndSeries) {
  test::TempDir tmp;
  {
    std::ofstream f(tmp.file("metrics.jsonl"));
    f << R"({"step":1,"split":"train","loss":3.0,"tokens_per_s":10,"elapsed_s":1,"attn_entropy":1.5,"sink_ratio":0.5,"gate_mean":0.5,"gate_mean_by_layer":[0.4,null]})"
         "\n"
      << R"({"step":2,"split":"train","loss":2.5,"tokens_per_s":30,"elapsed_s":2,"attn_entropy":1.2,"sink_ratio":0.4,"gate_mean":0.45,"gate_frac_lt_0.1":0.1,"gate_mean_by_layer":[0.3,0.6]})"
         "\n"
      << R"({"step":2,"split":"val","loss":2.7,"accuracy":0.25})"
         "\n"
      << R"({"step":3,"split":"train","loss":2.0,"tokens_per_s":20,"elapsed_s":3,"attn_entropy":1.1,"sink_ratio":0.3,"gate_mean":0.4,"gate_frac_lt_0.1":0.2,"gate_mean_by_layer":[0.2,0.6]})"
         "\n";
  }
  const RunRecord r = read_run(tmp.path().string());
  EXPECT_EQ(r.last_step, 3);
  EXPECT_DOUBLE_EQ(*r.val_loss, 2.7);
  EXPECT_DOUBLE_EQ(*r.val_accuracy, 0.25);
  EXPECT_DOUBLE_EQ(*r.gate_mean, 0.4);
  EXPECT_DOUBLE_EQ(*r.gate_frac_lt_0_1, 0.2);
  EXPECT_DOUBLE_EQ(*r.attn_entropy, 1.1);
  EXPECT_DOUBLE_EQ(*r.sink_ratio, 0.3);
  EXPECT_DOUBLE_EQ(*r.tokens_per_s, 20);   // the median
  EXPECT_FALSE(r.parameters.has_value());  // no config.yaml
  const StepSeries layer1 = metric_series(r, "train", "gate_mean_by_layer", 1);
  EXPECT_EQ(layer1.step, (std::vector<double>{2, 3}));  // the null is skipped
  EXPECT_EQ(metric_series(r, "val", "loss").value, (std::vector<double>{2.7}));
  EXPECT_FALSE(run_finished(tmp.path().string(), 2));  // no checkpoint
}

TEST(RunRecord, DirectoryWithoutMetricsIsAUsageError) {
  test::TempDir tmp;
  EXPECT_THROW(read_run(tmp.path().string()), UsageError);
}

}  // namespace
}  // namespace gattn::recipes
