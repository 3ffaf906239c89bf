// The training terminal's progress line and the metrics.jsonl writer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "framework/io/errors.h"
#include "framework/io/metrics.h"
#include "framework/runtime/progress.h"
#include "test_util.h"

namespace gattn {

TEST(Progress, FormatsStepLossRateEtaAndGate) {
  ProgressDisplay p(2000, false, stdout);
  ProgressState s;
  s.step = 120;
  s.loss = 2.43124;
  s.lr = 9.8e-4;
  s.tokens_per_s = 41234;
  s.elapsed_s = 12.0;  // 0.1 s/step -> 1880 steps left = 3m08s
  std::string line = p.format(s);
  EXPECT_NE(line.find("step  120/2000"), std::string::npos) << line;
  EXPECT_NE(line.find("loss 2.4312"), std::string::npos) << line;
  EXPECT_NE(line.find("lr 9.80e-04"), std::string::npos) << line;
  EXPECT_NE(line.find("41.2k tok/s"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 3m08s"), std::string::npos) << line;
  EXPECT_EQ(line.find("gate"), std::string::npos) << line;
  s.gate_mean = 0.5123;
  EXPECT_NE(p.format(s).find("gate 0.512"), std::string::npos);
}

TEST(Progress, Durations) {
  EXPECT_EQ(ProgressDisplay::format_duration(42), "42s");
  EXPECT_EQ(ProgressDisplay::format_duration(185), "3m05s");
  EXPECT_EQ(ProgressDisplay::format_duration(3720), "1h02m");
  EXPECT_EQ(ProgressDisplay::format_duration(NAN), "?");
}

TEST(Progress, PlainModeWritesWholeLinesLiveModeRedraws) {
  test::TempDir dir;
  std::string path = dir.file("out.txt");
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  {
    ProgressDisplay plain(10, false, f);
    ProgressState s;
    s.step = 1;
    plain.update(s);
    plain.message("eval: val loss 1.5");
    ProgressDisplay live(10, true, f);
    live.update(s);
    live.update(s);
    live.message("done");
    live.finish();
  }
  std::fclose(f);
  std::string text = test::read_file(path);
  EXPECT_NE(text.find("step  1/10"), std::string::npos);
  EXPECT_NE(text.find("\neval: val loss 1.5\n"), std::string::npos);
  EXPECT_NE(text.find("\r"), std::string::npos);  // live redraw
  EXPECT_NE(text.find("\r\033[Kdone\n"), std::string::npos);
}

TEST(Metrics, AppendsOneObjectPerLineAndNullsNonFinite) {
  test::TempDir dir;
  std::string path = dir.file("metrics.jsonl");
  {
    MetricsWriter w(path);
    w.write({{"step", 1}, {"split", "train"}, {"loss", 2.5}});
    w.write({{"step", 2}, {"split", "train"}, {"loss", std::nan("")}, {"gate_mean_by_layer", {0.5, INFINITY}}});
  }
  {
    MetricsWriter again(path);  // a resumed run appends
    again.write({{"step", 2}, {"split", "val"}, {"loss", 2.0}});
  }
  auto lines = read_metrics(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["loss"].get<double>(), 2.5);
  EXPECT_TRUE(lines[1]["loss"].is_null());
  EXPECT_TRUE(lines[1]["gate_mean_by_layer"][1].is_null());
  EXPECT_EQ(lines[2]["split"], "val");
}

TEST(Metrics, UnwritablePathIsACheckpointError) {
  test::TempDir dir;
  EXPECT_THROW(MetricsWriter(dir.file("no/such/dir/metrics.jsonl")), CheckpointError);
  std::string bad = dir.file("bad.jsonl");
  std::FILE* f = std::fopen(bad.c_str(), "w");
  std::fputs("{\"step\":1}\nnot json\n", f);
  std::fclose(f);
  EXPECT_THROW(read_metrics(bad), CheckpointError);
}

}  // namespace gattn
