// 8-bit gates (models/gating/gate_quantize.h): for every gate kind, each gate weight matrix is rounded
// per output channel to a multiple of its row's scale within half a step, each row's largest value
// kept; nothing else of the model changes a bit; a model without gate weights is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "model_test_util.h"
#include "models/gating/gate_quantize.h"
#include "models/gpt.h"

namespace gattn {
namespace {

// Gate parameters by how the model names them (attention.h: attn.gate., attn.router., cross.gate.),
// independently of the prefixes the quantiser builds from the config.
bool named_as_gate(const std::string& name) {
  return name.find(".gate.") != std::string::npos || name.find(".router.") != std::string::npos;
}

void check_rounding(models::GPT& model) {
  std::map<std::string, std::vector<double>> before;
  for (auto& [name, p] : model.named_parameters()) before[name] = p.to_vector();
  const models::GateQuantization q = models::quantize_gate_weights_int8(model);
  std::int64_t tensors = 0, values = 0, rows = 0, model_values = 0;
  double max_err = 0;
  for (auto& [name, p] : model.named_parameters()) {
    model_values += p.numel();
    const std::vector<double> a = before[name], b = p.to_vector();
    if (!named_as_gate(name) || p.dim() != 2) {
      EXPECT_EQ(a, b) << name << " changed";
      continue;
    }
    ++tensors;
    values += p.numel();
    rows += p.size(0);
    const std::int64_t C = p.size(1);
    for (std::int64_t r = 0; r < p.size(0); ++r) {
      double amax = 0;
      for (std::int64_t c = 0; c < C; ++c) amax = std::max(amax, std::abs(a[static_cast<std::size_t>(r * C + c)]));
      const double s = static_cast<float>(amax / 127.0);
      for (std::int64_t c = 0; c < C; ++c) {
        const double w = a[static_cast<std::size_t>(r * C + c)], wq = b[static_cast<std::size_t>(r * C + c)];
        if (amax == 0) {
          EXPECT_EQ(wq, 0.0) << name;
          continue;
        }
        const double steps = wq / s;
        EXPECT_NEAR(steps, std::round(steps), 1e-4) << name << " row " << r << ": not a multiple of its scale";
        EXPECT_LE(std::abs(std::round(steps)), 127.0) << name;
        EXPECT_LE(std::abs(wq - w), s / 2 * (1 + 1e-5) + 1e-12) << name << " row " << r;
        max_err = std::max(max_err, std::abs(wq - w));
      }
    }
  }
  EXPECT_GT(tensors, 0);
  EXPECT_EQ(q.tensors, tensors);
  EXPECT_EQ(q.values, values);
  EXPECT_EQ(q.rows, rows);
  EXPECT_EQ(q.bytes_f32, 4 * values);
  EXPECT_EQ(q.bytes_int8, values + 4 * rows);
  EXPECT_EQ(q.model_bytes, 4 * model_values);
  EXPECT_NEAR(q.max_abs_error, max_err, 1e-7);
}

class GateInt8 : public ::testing::TestWithParam<std::string> {};

TEST_P(GateInt8, RoundsEveryGateMatrixAndNothingElse) {
  models::ModelConfig c = test::tiny_config(GetParam(), DType::f32);
  c.n_embd = 8;  // rows of 8 values and more: a scale per row means something
  models::GPT model(c, 5);
  test::perturb_gate_parameters(model, 9);
  check_rounding(model);
}

INSTANTIATE_TEST_SUITE_P(EveryKind, GateInt8, ::testing::ValuesIn([] {
                           std::vector<std::string> kinds = test::all_gate_kinds();
                           kinds.erase(kinds.begin());  // none: refused, below
                           return kinds;
                         }()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Several gates in a block, and gates on an encoder–decoder's cross-attention and encoder.
TEST(GateInt8Sites, SeveralGatesAndEverySite) {
  models::ModelConfig c = test::tiny_config(models::kNoGate, DType::f32);
  c.arch = models::kArchEncoderDecoder;
  c.vocab_size = 9;
  c.n_embd = 8;
  std::vector<std::pair<std::string, std::string>> entries = {{"output", models::kSiteSelf},
                                                              {"score", models::kSiteSelf},
                                                              {"context", models::kSiteCross},
                                                              {"input", models::kSiteEncoder}};
  for (std::size_t i = 0; i < entries.size(); ++i) {
    models::GateConfig g;
    g.kind = entries[i].first;
    g.site = entries[i].second;
    g.where = "model.gates[" + std::to_string(i) + "]";
    c.gates.push_back(g);
  }
  c.gate.kind = models::kNoGate;
  models::GPT model(c, 5);
  test::perturb_gate_parameters(model, 9);
  check_rounding(model);
}

// A zero row stays zero; a row whose values are all ±m keeps them exactly (127 steps of m/127).
TEST(GateInt8Sites, ZeroRowsAndExactRows) {
  models::GPT model(test::tiny_config("forget", DType::f32), 5);
  Tensor w = model.parameter("blocks.0.attn.gate.weight");
  std::vector<double> v(static_cast<std::size_t>(w.numel()), 0.0);
  for (std::int64_t c = 0; c < w.size(1); ++c) v[static_cast<std::size_t>(w.size(1) + c)] = c % 2 ? 0.5 : -0.5;
  w.copy_from(Tensor::from(v, w.shape(), w.dtype()));
  models::quantize_gate_weights_int8(model);
  EXPECT_EQ(model.parameter("blocks.0.attn.gate.weight").to_vector(), v);
}

TEST(GateInt8Sites, AModelWithoutGatesIsRefused) {
  models::GPT model(test::tiny_config(models::kNoGate, DType::f32), 5);
  try {
    models::quantize_gate_weights_int8(model);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("--gate-int8"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no gates"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gattn
