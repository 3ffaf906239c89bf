// The report's pieces: SVG helpers (recipes/ablate/svg.h) and the page (recipes/ablate/report_html.h), from
// hand-made run records, without any training.
#include <gtest/gtest.h>

#include <cmath>

#include "recipes/ablate/ablation.h"
#include "recipes/ablate/report_html.h"
#include "recipes/ablate/svg.h"

namespace gattn::recipes {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

TEST(Svg, EscapesAndFormats) {
  EXPECT_EQ(report::escape_xml("a<b & \"c\"'"), "a&lt;b &amp; &quot;c&quot;&#39;");
  EXPECT_EQ(report::format_number(0.25), "0.25");
  EXPECT_EQ(report::format_number(12345.0), "1.234e+04");
  EXPECT_EQ(report::format_number(std::nan("")), "n/a");
  EXPECT_EQ(report::nice_ticks(0, 1, 5), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  EXPECT_EQ(report::nice_ticks(3, 17, 3), (std::vector<double>{5, 10, 15}));
  EXPECT_TRUE(report::nice_ticks(1, 1).empty());
  EXPECT_EQ(report::ramp_color(0), "#f7fbff");
  EXPECT_EQ(report::ramp_color(1), "#08306b");
  EXPECT_EQ(report::ramp_color(7), "#08306b");  // clamped
}

TEST(Svg, LineChartDrawsEachSeriesAndBreaksAtGaps) {
  report::ChartOptions o;
  o.id = "c1";
  o.title = "loss <train>";
  const std::string svg = report::line_chart({{"a", {1, 2, 3, 4}, {1, 2, std::nan(""), 4}}, {"b", {1, 2}, {3, 3}}}, o);
  EXPECT_EQ(
      svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart line\" data-chart=\"line\" id=\"c1\"", 0), 0u);
  EXPECT_EQ(count(svg, "<polyline"), 3u);  // a: two pieces; b: one
  EXPECT_NE(svg.find("loss &lt;train&gt;"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
}

TEST(Svg, TickLabelsTellNarrowRangesApart) {
  report::ChartOptions o;
  o.id = "n";
  const std::string svg = report::line_chart({{"a", {1, 2, 3}, {0.50001, 0.50003, 0.50002}}}, o);
  EXPECT_NE(svg.find(">0.50002</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find(">0.5</text>"), std::string::npos);
}

TEST(Svg, HistogramCountsFractions) {
  report::ChartOptions o;
  o.id = "h";
  const std::string svg = report::histogram_chart({0.05, 0.06, 0.95, 2.0}, 0, 1, 10, o);
  EXPECT_EQ(count(svg, "class=\"bin\""), 2u);  // 2.0 is clamped into the last bin
  EXPECT_NE(svg.find("data-chart=\"histogram\""), std::string::npos);
}

TEST(Svg, HeatmapDrawsNonZeroCells) {
  report::ChartOptions o;
  o.id = "m";
  const std::string svg = report::heatmap({1, 0, 0.5, 0.5}, 2, 2, o);
  EXPECT_EQ(count(svg, "width=\"1\" height=\"1\""), 3u);
  EXPECT_NE(svg.find("data-chart=\"heatmap\""), std::string::npos);
}

TEST(Svg, LabelledHeatmapIsNonSquareWithTokenAxes) {
  report::ChartOptions o;
  o.id = "x";
  o.title = "cross";
  o.width = 320;
  o.height = 340;
  report::HeatmapLabels labels{{"<s>", "a"}, {"p", "q", "a-very-long-piece"}, "target", "source"};
  const std::string svg = report::heatmap({0, 0.5, 0.5, 1, 0, 0}, 2, 3, o, labels);
  EXPECT_NE(svg.find("data-rows=\"2\" data-cols=\"3\""), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"row-label\""), 2u);
  EXPECT_EQ(count(svg, "class=\"col-label\""), 3u);
  EXPECT_NE(svg.find(">&lt;s&gt;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">a-very-…</text>"), std::string::npos);  // cut to 8 characters
  EXPECT_EQ(count(svg, "width=\"1\" height=\"1\""), 3u);
  // Each cell's tooltip names its row and column, with the full label.
  EXPECT_NE(svg.find("<title>target 1 ‘a’ → source 0 ‘p’: 1</title>"), std::string::npos);
  EXPECT_NE(svg.find("source 2 ‘a-very-long-piece’: 0.5</title>"), std::string::npos);
  // Cells at most 26 px: the chart shrinks to the matrix.
  EXPECT_NE(svg.find("scale(26.0)"), std::string::npos);
  EXPECT_EQ(svg.find("width=\"320\""), std::string::npos);
  EXPECT_EQ(count(svg, "<svg"), count(svg, "</svg>"));
}

TEST(Svg, BarChartOneBarPerFiniteValue) {
  report::ChartOptions o;
  o.id = "b";
  const std::string svg = report::bar_chart({"x", "y", "z"}, {1.0, std::nan(""), 0.5}, o);
  EXPECT_EQ(count(svg, "class=\"bar\""), 2u);
}

TEST(ReportPage, ParseHeads) {
  const std::vector<HeadChoice> h = parse_heads("0:1,-1:0");
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].layer, 0);
  EXPECT_EQ(h[0].head, 1);
  EXPECT_EQ(h[1].layer, -1);
  EXPECT_THROW(parse_heads("0"), UsageError);
  EXPECT_THROW(parse_heads("0:x"), UsageError);
  EXPECT_THROW(parse_heads("0:1,"), UsageError);
}

ReportRun fake_run(const std::string& name, bool gated) {
  ReportRun run;
  run.record.name = name;
  run.record.dir = "runs/" + name;
  run.record.config = {{"model", {{"n_layer", 2}}}};
  for (int step = 1; step <= 3; ++step) {
    nlohmann::json line = {
        {"step", step}, {"split", "train"}, {"loss", 3.0 - step * 0.1}, {"attn_entropy", 1.0}, {"sink_ratio", 0.2}};
    if (gated) line["gate_mean_by_layer"] = {0.5, 0.4};
    run.record.metrics.push_back(line);
  }
  run.record.metrics.push_back({{"step", 3}, {"split", "val"}, {"loss", 2.8}});
  run.record.val_loss = 2.8;
  run.record.attn_entropy = 1.0;
  run.record.sink_ratio = 0.2;
  if (gated) run.record.gate_mean = 0.45;
  run.probe.tokens = {"a", "b", "c"};
  for (int l = 0; l < 2; ++l) {
    models::LayerInspection layer;
    layer.heads = 1;
    layer.tokens = 3;
    layer.attention = {1, 0, 0, 0.5, 0.5, 0, 0.2, 0.3, 0.5};
    if (gated) {
      layer.gate_values = {0.1, 0.9, 0.5};
      layer.gate_by_token = {0.1, 0.9, 0.5};
    }
    run.probe.layers.push_back(layer);
  }
  return run;
}

TEST(ReportPage, HeadsThatSelectNothingAreRefused) {
  ReportOptions o;
  o.heads = parse_heads("0:0,5:0");  // the fake runs have 2 layers: layer 5 is no layer
  try {
    report_html({fake_run("gated", true)}, o);
    FAIL() << "--heads 5:0 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--heads: 5:0 selects no head"), std::string::npos) << e.what();
  }
  o.heads = parse_heads("-1:9");  // no head 9
  EXPECT_THROW(report_html({fake_run("gated", true)}, o), UsageError);
  o.heads = parse_heads("-1:0");
  EXPECT_NO_THROW(report_html({fake_run("gated", true)}, o));
}

TEST(ReportPage, HasEveryChart) {
  ReportOptions o;
  o.heads = parse_heads("0:0,-1:0");
  const std::string html = report_html({fake_run("gated", true), fake_run("plain<&>", false)}, o);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // No network: the only URL is the SVG namespace name.
  EXPECT_EQ(count(html, "http"), count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  for (const char* section :
       {"summary", "loss-curves", "attention-stats", "gate-over-training", "gate-histograms", "sample"})
    EXPECT_NE(html.find(std::string("<section id=\"") + section + "\""), std::string::npos) << section;
  EXPECT_NE(html.find("id=\"loss-train\""), std::string::npos);
  EXPECT_NE(html.find("id=\"loss-val\""), std::string::npos);
  EXPECT_EQ(count(html, "data-chart=\"histogram\""), 2u);  // the gated run's two layers
  EXPECT_EQ(count(html, "data-chart=\"heatmap\""), 4u);    // two heads for each run
  EXPECT_EQ(count(html, "id=\"gate-mean-run0\""), 1u);
  EXPECT_EQ(count(html, "id=\"gate-mean-run1\""), 0u);  // no gates
  EXPECT_EQ(count(html, "class=\"tokens\" data-layer="), 2u);
  EXPECT_NE(html.find("plain&lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(html.find("plain<&>"), std::string::npos);
  EXPECT_EQ(html.find("id=\"cross-attention\""), std::string::npos);  // decoders only: no cross-attention
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
}

TEST(ReportPage, DrawsEachRunsBlockAndThePairAlphaOverTraining) {
  ReportRun pair = fake_run("pair", true);
  models::GateConfig g;
  g.kind = "pair";
  g.all_layers = false;
  g.layers = {1};
  models::GateConfig out;
  out.kind = "output";
  pair.record.model = models::ModelConfig{};
  pair.record.model->n_layer = 2;
  pair.record.model->gates = {out, g};
  for (nlohmann::json& line : pair.record.metrics)
    if (line["split"] == "train") line["pair_alpha_by_layer"] = {nullptr, 0.5 + 0.01 * line["step"].get<double>()};
  ReportRun plain = fake_run("plain", false);
  plain.record.model = models::ModelConfig{};
  ReportRun no_config = fake_run("no_config", false);
  const std::string html = report_html({pair, plain, no_config}, ReportOptions{});
  ASSERT_NE(html.find("<section id=\"gate-diagram\""), std::string::npos);
  // The diagram comes before the loss curves, and holds the gates in the order of application.
  EXPECT_LT(html.find("<section id=\"gate-diagram\""), html.find("<section id=\"loss-curves\""));
  const std::size_t d0 = html.find("id=\"diagram-run0\""), d1 = html.find("id=\"diagram-run1\"");
  ASSERT_NE(d0, std::string::npos);
  ASSERT_NE(d1, std::string::npos);
  const std::size_t p = html.find("data-kind=\"pair\" data-stage=\"P\"", d0),
                    o = html.find("data-kind=\"output\" data-stage=\"y\"", d0);
  EXPECT_LT(p, o);
  EXPECT_LT(o, d1);
  EXPECT_NE(html.find("pair: attention block, 2 gates"), std::string::npos);
  EXPECT_NE(html.find("plain: attention block, no gates"), std::string::npos);
  EXPECT_EQ(html.find("id=\"diagram-run2\""), std::string::npos);
  EXPECT_NE(html.find("no_config: no readable config.yaml"), std::string::npos);
  EXPECT_EQ(count(html, "data-chart=\"diagram\""), 2u);
  // α per layer: one chart for the pair run, a line for its one pair layer.
  ASSERT_NE(html.find("<section id=\"gate-parameters\""), std::string::npos);
  EXPECT_EQ(count(html, "id=\"gate-param-run"), 1u);
  const std::size_t a = html.find("id=\"gate-param-run0-pair_alpha\"");
  ASSERT_NE(a, std::string::npos);
  EXPECT_EQ(count(html.substr(a, html.find("</svg>", a) - a), "<polyline"), 1u);
  EXPECT_NE(html.find("α = σ(alpha) per layer"), std::string::npos);
  // Without a pair run there is no such section.
  EXPECT_EQ(report_html({plain}, ReportOptions{}).find("gate-parameters"), std::string::npos);
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
}

// An encoder–decoder run's probe: a 3-position decoder input over a 2-token source, one decoder
// block with 2 heads and gates on its cross-attention, one encoder block.
ReportRun fake_seq2seq_run(const std::string& name) {
  ReportRun run = fake_run(name, true);
  run.record.config = {{"model", {{"n_layer", 1}, {"arch", "encoder_decoder"}}}};
  run.probe.tokens = {"<s>", "b", "a"};
  run.probe.source_tokens = {"a", "b"};
  run.probe.layers.resize(1);
  models::LayerInspection cross;
  cross.heads = 2;
  cross.tokens = 3;
  cross.keys = 2;
  cross.attention = {0, 1, 1, 0, 0.5, 0.5,   // head 0: rows 0, 1 aligned backwards
                     0, 1, 1, 0, 0.5, 0.5};  // head 1 alike
  cross.gate_values = {0.2, 0.8};
  run.probe.cross.push_back(cross);
  models::LayerInspection encoder;
  encoder.heads = 2;
  encoder.tokens = 2;
  encoder.keys = 2;
  encoder.attention = {1, 0, 0, 1, 0.5, 0.5, 0.5, 0.5};
  run.probe.encoder.push_back(encoder);
  return run;
}

TEST(ReportPage, EncoderDecoderRunShowsCrossAttention) {
  ReportOptions o;
  o.heads = parse_heads("0:0,-1:1");
  const std::string html = report_html({fake_seq2seq_run("s2s"), fake_run("dec", false)}, o);
  EXPECT_EQ(count(html, "<section id=\"cross-attention\""), 1u);
  EXPECT_EQ(count(html, "class=\"charts cross-attn\" id=\"cross-attn-run0\""), 1u);
  EXPECT_EQ(count(html, "id=\"cross-attn-run1"), 0u);  // the decoder run has none
  // The head mean, then heads 0 and 1 (--heads names both in the only block): target rows, source
  // columns, the tokens on the axes.
  for (const char* id : {"cross-attn-run0-l0-mean", "cross-attn-run0-l0-h0", "cross-attn-run0-l0-h1"})
    EXPECT_NE(html.find(std::string("data-rows=\"3\" data-cols=\"2\" id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(html.find("<title>target 0 ‘&lt;s&gt;’ → source 1 ‘b’: 1</title>"), std::string::npos);
  EXPECT_NE(html.find("data-rows=\"2\" data-cols=\"2\" id=\"encoder-attn-run0-l0-mean\""), std::string::npos);
  // The decoder's self-attention map keeps its place in the sample, labelled too.
  EXPECT_NE(html.find("data-rows=\"3\" data-cols=\"3\" id=\"attn-run0-l0-h0\""), std::string::npos);
  EXPECT_NE(html.find("<div class=\"tokens source\"><span>a</span> <span>b</span> </div>"), std::string::npos);
  // The cross gate values get their own histogram.
  EXPECT_EQ(count(html, "id=\"gate-hist-run0-cross0\""), 1u);
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
}

TEST(ReportPage, EncoderDecoderRunWithoutProbeSaysWhy) {
  ReportRun run = fake_seq2seq_run("s2s");
  run.probe = RunProbe{};
  run.probe.note = "no checkpoint";
  ReportOptions o;
  o.heads = parse_heads("0:0");
  const std::string html = report_html({run}, o);
  EXPECT_NE(html.find("no cross-attention: no checkpoint"), std::string::npos);
  EXPECT_EQ(count(html, "data-chart=\"heatmap\""), 0u);
}

TEST(ReportPage, RunWithoutProbeSaysWhy) {
  ReportRun run = fake_run("r", true);
  run.probe = RunProbe{};
  run.probe.note = "no checkpoint";
  ReportOptions o;
  o.heads = parse_heads("0:0");
  const std::string html = report_html({run}, o);
  EXPECT_NE(html.find("no sample: no checkpoint"), std::string::npos);
  EXPECT_EQ(count(html, "data-chart=\"heatmap\""), 0u);
}

}  // namespace
}  // namespace gattn::recipes
