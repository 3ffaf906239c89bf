// The gate registry: every kind registered once, in the order of application, with options whose
// defaults pass their own checks and agree with the config schema's shorthand keys; docs/gates.md
// holds the table the registry generates; the FLOP count adds each gate's registered products.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "framework/config/schema.h"
#include "model_test_util.h"
#include "models/gating/registry.h"
#include "models/gpt.h"
#include "recipes/common/run_schema.h"
#include "test_util.h"

namespace gattn {

namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(GateRegistry, KindsAreUniqueAndInTheOrderOfApplication) {
  std::set<std::string> names;
  int last = -1;
  ASSERT_FALSE(models::gate_kinds().empty());
  for (const models::GateKindSpec* k : models::gate_kinds()) {
    EXPECT_TRUE(names.insert(k->name).second) << k->name;
    EXPECT_GT(k->order, last) << k->name << ": two kinds share an order";
    last = k->order;
    EXPECT_FALSE(k->summary.empty()) << k->name;
    EXPECT_FALSE(k->reference.empty()) << k->name;
    EXPECT_FALSE(k->parameter_doc.empty()) << k->name;
    EXPECT_FALSE(k->gate_values.empty()) << k->name;
    EXPECT_TRUE(k->make && k->parameters && k->multiply_adds) << k->name;
    EXPECT_EQ(models::find_gate_kind(k->name), k);
  }
  EXPECT_EQ(models::find_gate_kind(models::kNoGate), nullptr);
  // Along the order of application the kinds' stages never go back (the report draws each gate at
  // its stage, docs/gates.md "Order of application").
  models::GateStage stage = models::GateStage::h;
  for (const models::GateKindSpec* k : models::gate_kinds()) {
    EXPECT_GE(static_cast<int>(k->stage), static_cast<int>(stage)) << k->name << " acts before the kind ahead of it";
    stage = k->stage;
  }
  const std::string err = test::error_of([] { models::gate_kind("sideways", "model.gates[2].kind"); });
  EXPECT_NE(err.find("model.gates[2].kind: unknown gate kind 'sideways' (expected one of none, "), std::string::npos)
      << err;
}

TEST(GateRegistry, OptionDefaultsPassTheirChecksAndMatchTheSchema) {
  // The shorthand model.gate.<key> keys carry schema defaults; they must be the kinds' defaults.
  for (const models::GateKindSpec* k : models::gate_kinds()) {
    models::ModelConfig m = test::tiny_config(k->name);
    m.gate.options = nlohmann::json::object();  // every option at the kind's default
    EXPECT_NO_THROW(m.validate()) << k->name;
    for (const models::GateOptionSpec& o : k->options) {
      const config::KeySpec* s = run_schema().find("model.gate." + o.key);
      ASSERT_NE(s, nullptr) << k->name << "." << o.key << " has no shorthand key in the schema";
      EXPECT_EQ(s->default_value, o.default_value) << k->name << "." << o.key;
    }
  }
}

TEST(GateRegistry, DocsTableIsTheGeneratedOne) {
  const std::string docs = read_text(std::filesystem::path(GATTN_SOURCE_DIR) / "docs" / "gates.md");
  const std::string begin = "<!-- gate-kinds-table:begin -->\n", end = "<!-- gate-kinds-table:end -->";
  const std::size_t a = docs.find(begin), b = docs.find(end);
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  EXPECT_EQ(docs.substr(a + begin.size(), b - a - begin.size()), models::gate_kinds_markdown())
      << "regenerate the table in docs/gates.md with ./build/gattn gates";
}

TEST(GateRegistry, FlopsAddEachGatesRegisteredProducts) {
  models::ModelConfig base = test::tiny_config("none");
  base.vocab_size = 7;
  const double plain = models::GPT(base, 0).flops_per_token(6);
  double sum_of_singles = 0;
  models::ModelConfig all = base;
  for (const models::GateKindSpec* k : models::gate_kinds()) {
    if (k->attention_keys) continue;  // a mixture changes the attention term, tested below
    models::ModelConfig one = test::tiny_config(k->name);
    one.vocab_size = 7;
    const double with = models::GPT(one, 0).flops_per_token(6);
    EXPECT_GT(with, plain) << k->name;
    sum_of_singles += with - plain;
    models::GateConfig g;
    g.kind = k->name;
    all.gates.push_back(g);
  }
  EXPECT_NEAR(models::GPT(all, 0).flops_per_token(6) - plain, sum_of_singles, 1e-6 * plain);
  // Top-1 of two full-span experts visits the keys of one attention: only the router's products added.
  models::ModelConfig routed = test::tiny_config("routed");
  routed.vocab_size = 7;
  routed.gate.options["windows"] = {0, 0};
  routed.gate.options["top_k"] = 1;
  EXPECT_NEAR(models::GPT(routed, 0).flops_per_token(6) - plain, 6.0 * 2 * 2 * 4, 1e-9);
  routed.gate.options["top_k"] = 2;  // both experts for every token: twice the attention
  EXPECT_GT(models::GPT(routed, 0).flops_per_token(6), models::GPT(base, 0).flops_per_token(6) * 1.05);
}

}  // namespace gattn
