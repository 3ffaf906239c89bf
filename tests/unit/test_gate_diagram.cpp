// The report's diagram of the attention block (recipes/ablate/gate_diagram.h): the base stages in
// place, each gate at the stage the registry gives it, in the order of application whatever the
// config's list order, labelled with its layers and options.
#include <gtest/gtest.h>

#include "recipes/ablate/gate_diagram.h"

namespace gattn::recipes {
namespace {

models::GateConfig gate(const std::string& kind, std::vector<std::int64_t> layers = {},
                        nlohmann::json options = nlohmann::json::object()) {
  models::GateConfig g;
  g.kind = kind;
  g.all_layers = layers.empty();
  g.layers = std::move(layers);
  g.options = std::move(options);
  return g;
}

// The boxes' titles top to bottom, gates marked with their stage: "[score on q, k]".
std::vector<std::string> titles(const std::vector<DiagramBox>& boxes) {
  std::vector<std::string> out;
  for (const DiagramBox& b : boxes) out.push_back(b.gate ? "[" + b.title + " on " + b.acts_on + "]" : b.title);
  return out;
}

const DiagramBox& box_of(const std::vector<DiagramBox>& boxes, const std::string& kind) {
  for (const DiagramBox& b : boxes)
    if (b.gate && b.title == kind) return b;
  throw std::runtime_error("no box for " + kind);
}

TEST(GateDiagram, GatesSitWhereTheyActInTheOrderOfApplication) {
  models::ModelConfig m;
  m.n_layer = 4;
  // Listed backwards: the diagram follows the order of application, not the list.
  m.gates = {gate("output", {2, 3}, {{"granularity", "headwise"}}), gate("score", {1}, {{"form", "multiplicative"}}),
             gate("input")};
  const std::vector<DiagramBox> boxes = attention_diagram(m, models::kSiteSelf);
  EXPECT_EQ(titles(boxes), (std::vector<std::string>{"x: the block's input (residual stream)", "LayerNorm ln1 → h",
                                                     "[input on h]", "q, k, v = attn.qkv(h)", "[score on q, k]",
                                                     "S = q·kᵀ/√d, causal", "P = softmax(S)", "y = P·v, heads merged",
                                                     "[output on y]", "attn.proj(y)", "x + attn.proj(y)"}));
  EXPECT_EQ(box_of(boxes, "output").detail, "layers 2–3, headwise");
  EXPECT_EQ(box_of(boxes, "score").detail, "layer 1, multiplicative");
  EXPECT_EQ(box_of(boxes, "input").detail, "all layers");
  EXPECT_NE(box_of(boxes, "output").tooltip.find("attn.proj"), std::string::npos);  // the kind's summary
  EXPECT_LT(box_of(boxes, "input").kind_index, box_of(boxes, "output").kind_index);
}

TEST(GateDiagram, EveryKindInOneBlock) {
  models::ModelConfig m;
  m.norm = models::kNormRms;
  m.gates = {gate("routed"), gate("context"), gate("pair"), gate("forget"),
             gate("score"),  gate("output"),  gate("input")};
  EXPECT_EQ(titles(attention_diagram(m, models::kSiteSelf)),
            (std::vector<std::string>{"x: the block's input (residual stream)", "RMSNorm ln1 → h", "[input on h]",
                                      "q, k, v = attn.qkv(h)", "S = q·kᵀ/√d, causal", "[score on S]", "[forget on S]",
                                      "P = softmax(S)", "[pair on P]", "y = P·v, heads merged", "[routed on y]",
                                      "[context on y]", "[output on y]", "attn.proj(y)", "x + attn.proj(y)"}));
  // A block without gates is the plain attention.
  EXPECT_EQ(attention_diagram(models::ModelConfig{}, models::kSiteSelf).size(), 8u);
}

TEST(GateDiagram, EncoderDecoderSites) {
  models::ModelConfig m;
  m.arch = models::kArchEncoderDecoder;
  models::GateConfig context = gate("context");
  context.site = models::kSiteCross;
  models::GateConfig out = gate("output");
  out.site = models::kSiteCross;
  models::GateConfig enc = gate("input", {0});
  enc.site = models::kSiteEncoder;
  m.gates = {context, out, enc};
  ASSERT_EQ(diagram_sites(m).size(), 3u);
  EXPECT_EQ(diagram_sites(models::ModelConfig{}).size(), 1u);
  const std::vector<std::string> cross = titles(attention_diagram(m, models::kSiteCross));
  // The cross-attention's context gate mixes the decoder state after cross.proj, in place of the residual.
  EXPECT_EQ(cross,
            (std::vector<std::string>{"s: the decoder state (residual stream)", "LayerNorm ln_cross → h",
                                      "q = cross.q(h); k, v = cross.kv(encoder output)", "S = q·kᵀ/√d",
                                      "P = softmax(S)", "y = P·v, heads merged", "[output on y]", "cross.proj(y)",
                                      "[context on x]", "s ← the gate's mix of s and cross.proj(y)"}));
  const std::vector<std::string> encoder = titles(attention_diagram(m, models::kSiteEncoder));
  EXPECT_EQ(encoder[2], "[input on h]");
  EXPECT_EQ(encoder[4], "S = q·kᵀ/√d");                           // not causal
  EXPECT_EQ(attention_diagram(m, models::kSiteSelf).size(), 8u);  // no self-attention gate
}

TEST(GateDiagram, LabelsNameLayersAndOptionsOffTheirDefaults) {
  EXPECT_EQ(gate_label(gate("output", {0, 1, 3, 5, 6, 7})), "layers 0–1, 3, 5–7");
  EXPECT_EQ(gate_label(gate("output", {}, {{"bias", false}, {"heads", {0, 1}}, {"groups", 1}})),
            "all layers, heads 0, 1, no bias");
  models::GateConfig pair = gate("pair", {2}, {{"alpha_init", 0.25}, {"shared_projection", true}, {"hard", true}});
  pair.activation = "gumbel_sigmoid";
  pair.temperature = 0.5;
  EXPECT_EQ(gate_label(pair), "layer 2, gumbel_sigmoid, τ 0.5, alpha_init 0.25, shared_projection, hard");
  EXPECT_EQ(gate_label(gate("routed", {}, {{"windows", {0, 16}}, {"top_k", 2}})), "all layers, windows 0, 16, top_k 2");
}

}  // namespace
}  // namespace gattn::recipes
