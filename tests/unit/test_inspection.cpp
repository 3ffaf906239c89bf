// The forward's inspection hook (models/inspection.h): the attention weights it recovers must give
// the same entropy and sink ratio as the statistics the fused op computes, and its gate values the
// same moments, for every gate kind.
#include <gtest/gtest.h>

#include <cmath>

#include "model_test_util.h"
#include "models/gpt.h"

namespace gattn {
namespace {

using std::string;

class Inspection : public ::testing::TestWithParam<std::string> {
 protected:
  void check(const std::string& position);
};

// With rotary positions the recovered weights must be the rotated q, k's (the unrotated ones would
// give other values).
void Inspection::check(const std::string& position) {
  SCOPED_TRACE("model.position " + position);
  models::ModelConfig c = test::tiny_config(GetParam());  // T = 6 with head dim 2: three one-hot passes
  c.position = position;
  models::GPT model(c, 5);
  test::perturb_gate_parameters(model, 9);
  model.eval();
  models::ForwardOptions fo;
  fo.collect_stats = true;
  fo.inspect = true;
  const std::int64_t T = c.block_size, H = c.n_head;
  models::ForwardResult r = model.forward(test::tokens(1, T, c.vocab_size, 3), Tensor(), fo);
  ASSERT_EQ(r.inspection.size(), static_cast<std::size_t>(c.n_layer));
  for (std::size_t layer = 0; layer < r.inspection.size(); ++layer) {
    const models::LayerInspection& in = r.inspection[layer];
    const models::LayerStats& st = r.stats[layer];
    ASSERT_EQ(in.attention.size(), static_cast<std::size_t>(H * T * T));
    EXPECT_EQ(in.heads, H);
    EXPECT_EQ(in.tokens, T);
    double entropy = 0, sink = 0;
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < T; ++i) {
        double row_sum = 0;
        for (std::int64_t j = 0; j < T; ++j) {
          const double a = in.attention[static_cast<std::size_t>((h * T + i) * T + j)];
          if (j > i) {
            EXPECT_EQ(a, 0.0) << "causal mask, row " << i << " key " << j;
          }
          if (a > 0) entropy -= a * std::log(a);
          row_sum += a;
        }
        if (GetParam() != "pair") {
          EXPECT_NEAR(row_sum, 1.0, 1e-9);  // pair does not renormalise
        }
        if (i >= 1) sink += in.attention[static_cast<std::size_t>((h * T + i) * T)];
      }
    EXPECT_NEAR(entropy / static_cast<double>(H * T), st.attn_entropy(), 1e-9) << "layer " << layer;
    EXPECT_NEAR(sink / static_cast<double>(H * (T - 1)), st.sink_ratio(), 1e-9) << "layer " << layer;

    ASSERT_EQ(in.gate_values.size(), static_cast<std::size_t>(st.gate.count));
    if (GetParam() == "none") {
      EXPECT_TRUE(in.gate_by_token.empty());
      continue;
    }
    double sum = 0;
    for (double g : in.gate_values) sum += g;
    EXPECT_NEAR(sum / static_cast<double>(in.gate_values.size()), st.gate.mean(), 1e-9);
    ASSERT_EQ(in.gate_by_token.size(), static_cast<std::size_t>(T));
    for (double g : in.gate_by_token) {
      EXPECT_GE(g, 0.0);
      EXPECT_LE(g, 1.0);
    }
  }
}

TEST_P(Inspection, AgreesWithTheForwardStatistics) {
  check(models::kPositionLearned);
  check(models::kPositionRope);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, Inspection, ::testing::ValuesIn(test::all_gate_kinds()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return std::string(std::string(info.param));
                         });

TEST(InspectionHook, NeedsEvalMode) {
  models::GPT model(test::tiny_config("output"), 5);
  models::ForwardOptions fo;
  fo.inspect = true;
  EXPECT_THROW(model.forward(test::tokens(1, 6, 5, 3), Tensor(), fo), ValueError);
}

}  // namespace
}  // namespace gattn
