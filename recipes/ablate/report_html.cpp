// Assembling report.html from run records and probes.
#include "recipes/ablate/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "framework/text/token_class.h"
#include "models/gating/registry.h"
#include "recipes/ablate/ablation.h"
#include "recipes/ablate/gate_diagram.h"
#include "recipes/ablate/svg.h"

namespace gattn::recipes {

namespace {

using report::ChartOptions;
using report::escape_xml;
using report::Series;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const char* kStyle = R"(
body { font-family: sans-serif; margin: 24px; color: #222; max-width: 1400px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ccc; } h3 { font-size: 14px; }
table { border-collapse: collapse; font-size: 13px; } td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
.note { color: #777; font-size: 13px; }
.tokens { font-family: monospace; font-size: 13px; line-height: 1.9; margin: 2px 0 8px 0; }
.tokens span { white-space: pre; padding: 1px 0; }
.tokens span.piece { border-right: 1px solid rgba(0, 0, 0, 0.25); }
.layer-label { font-size: 12px; color: #555; }
table.by-head { margin-top: 12px; } caption { text-align: left; font-size: 13px; padding: 2px 0; }
.legend-ramp { display: inline-block; width: 160px; height: 10px; vertical-align: middle;
  background: linear-gradient(to right, #f7fbff, #08306b); border: 1px solid #aaa; }
)";

std::string opt_text(const std::optional<double>& v, int decimals, double scale = 1) {
  if (!v) return "–";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, *v * scale);
  return buf;
}

Series series_of(const std::string& label, const StepSeries& s) { return Series{label, s.step, s.value}; }

std::string figure(const std::string& svg) { return "<figure style=\"margin:0\">" + svg + "</figure>"; }

int n_layers(const RunRecord& r) {
  if (r.config.is_object() && r.config.contains("model") && r.config["model"].contains("n_layer"))
    return r.config["model"]["n_layer"].get<int>();
  for (auto it = r.metrics.rbegin(); it != r.metrics.rend(); ++it)
    if (it->contains("attn_entropy_by_layer")) return static_cast<int>((*it)["attn_entropy_by_layer"].size());
  return 0;
}

std::string summary_table(const std::vector<ReportRun>& runs) {
  std::string s =
      "<table><tr><th>run</th><th>steps</th><th>val loss</th><th>val accuracy (%)</th><th>gate mean</th>"
      "<th>gate &lt; 0.1</th><th>attn entropy</th><th>sink ratio</th><th>tokens/s</th><th>gen tokens/s</th>"
      "<th>parameters</th><th>MFLOP/token</th></tr>";
  for (const ReportRun& run : runs) {
    const RunRecord& r = run.record;
    std::optional<double> mflop;
    if (r.flops_per_token) mflop = *r.flops_per_token / 1e6;
    s += std::string("<tr><td>").append(escape_xml(r.name)) + "</td><td>" + std::to_string(r.last_step) + "</td><td>" +
         opt_text(r.val_loss, 4) + "</td><td>" + opt_text(r.val_accuracy, 1, 100) + "</td><td>" +
         opt_text(r.gate_mean, 3) + "</td><td>" + opt_text(r.gate_frac_lt_0_1, 3) + "</td><td>" +
         opt_text(r.attn_entropy, 3) + "</td><td>" + opt_text(r.sink_ratio, 3) + "</td><td>" +
         opt_text(r.tokens_per_s, 0) + "</td><td>" + opt_text(r.generation_tokens_per_s, 0) + "</td><td>" +
         (r.parameters ? std::to_string(*r.parameters) : "–") + "</td><td>" +
         opt_text(mflop, mflop && *mflop >= 100 ? 0 : 3) + "</td></tr>";
  }
  return s + "</table>";
}

// The final gate mean of each head (the last train line's gate_mean_by_head) as a table, a row per
// layer; "" when the run logged no per-head values.
std::string gate_by_head_table(const ReportRun& run, std::size_t k) {
  const nlohmann::json& rows = run.record.gate_mean_by_head;
  if (!rows.is_array() || rows.empty()) return "";
  std::size_t heads = 0;
  for (const nlohmann::json& row : rows)
    if (row.is_array()) heads = std::max(heads, row.size());
  std::string s = std::string("<table class=\"by-head\" id=\"gate-by-head-run").append(std::to_string(k)) +
                  "\"><caption>" + escape_xml(run.record.name) +
                  ": final gate mean per head</caption><tr><th>layer</th>";
  for (std::size_t h = 0; h < heads; ++h) s += std::string("<th>head ").append(std::to_string(h)) + "</th>";
  s += "</tr>";
  for (std::size_t l = 0; l < rows.size(); ++l) {
    s += std::string("<tr><td>").append(std::to_string(l)) + "</td>";
    for (std::size_t h = 0; h < heads; ++h) {
      const bool value = rows[l].is_array() && h < rows[l].size() && rows[l][h].is_number();
      s += "<td>" + (value ? report::format_number(rows[l][h].get<double>(), 3) : std::string("–")) + "</td>";
    }
    s += "</tr>";
  }
  return s + "</table>";
}

std::string curves_chart(const std::vector<ReportRun>& runs, const std::string& split, const std::string& key,
                         const std::string& id, const std::string& title, const std::string& y_label, int width = 620) {
  std::vector<Series> series;
  for (const ReportRun& run : runs) series.push_back(series_of(run.record.name, metric_series(run.record, split, key)));
  ChartOptions o;
  o.id = id;
  o.title = title;
  o.x_label = "step";
  o.y_label = y_label;
  o.width = width;
  return figure(report::line_chart(series, o));
}

std::string final_bars(const std::vector<ReportRun>& runs, const std::optional<double> RunRecord::*field,
                       const std::string& id, const std::string& title) {
  std::vector<std::string> labels;
  std::vector<double> values;
  for (const ReportRun& run : runs) {
    labels.push_back(run.record.name);
    const std::optional<double>& v = run.record.*field;
    values.push_back(v ? *v : kNaN);
  }
  ChartOptions o;
  o.id = id;
  o.title = title;
  o.width = std::max(360, 60 + 48 * static_cast<int>(runs.size()));
  o.height = 320;
  return figure(report::bar_chart(labels, values, o));
}

std::string position_loss_chart(const std::vector<ReportRun>& runs) {
  std::vector<Series> series;
  std::string notes;
  std::int64_t widest = 0;
  for (const ReportRun& r : runs) {
    const RunPositionLoss& p = r.by_position;
    if (!p.note.empty()) notes += "<li>" + escape_xml(r.record.name + ": " + p.note) + "</li>";
    if (p.buckets.empty()) continue;
    Series s{r.record.name + " (T=" + std::to_string(p.context) + ")", {}, {}};
    for (const PositionBucket& b : p.buckets)
      if (b.tokens > 0) {
        s.x.push_back(std::log2(static_cast<double>(b.to)));
        s.y.push_back(b.loss());
      }
    widest = std::max(widest, p.context);
    series.push_back(std::move(s));
  }
  std::string out;
  if (series.empty())
    out = "<p class=\"note\">no run could be evaluated by position</p>";
  else
    out = "<div class=\"charts\">" +
          line_chart(series, {"loss-by-position", "val loss by position (up to " + std::to_string(widest) + ")",
                              "log2 position (bucket end)", "loss"}) +
          "</div>";
  if (!notes.empty()) out += "<ul class=\"note\">" + notes + "</ul>";
  return out;
}

bool has_gates(const ReportRun& run) { return run.record.gate_mean.has_value(); }

// Each run's attention block (one per attention of an encoder–decoder) with its gates drawn where
// they act: recipes/ablate/gate_diagram.h lays the boxes out from the registry.
std::string block_diagrams(const std::vector<ReportRun>& runs) {
  std::string s = "<div class=\"charts\">", notes;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const RunRecord& r = runs[k].record;
    if (!r.model) {
      notes += "<li>" + escape_xml(r.name) + ": no readable config.yaml to draw the block from</li>";
      continue;
    }
    for (const auto& [site, title] : diagram_sites(*r.model)) {
      std::vector<report::FlowBox> boxes;
      std::size_t gates = 0;
      for (const DiagramBox& d : attention_diagram(*r.model, site)) {
        report::FlowBox b{d.title, d.detail, "", "", "", ""};
        if (d.gate) {
          ++gates;
          b.tag = "on " + d.acts_on;
          b.tooltip = d.title + " (" + d.detail + "): " + d.tooltip;
          b.color = report::series_color(d.kind_index);
          b.attributes = " data-kind=\"" + escape_xml(d.title) + "\" data-stage=\"" + escape_xml(d.acts_on) + "\"";
        }
        boxes.push_back(std::move(b));
      }
      ChartOptions o;
      o.id = std::string("diagram-run").append(std::to_string(k)) + (site == models::kSiteSelf ? "" : "-" + site);
      o.title = r.name + ": " + title + ", " +
                (gates == 0 ? std::string("no gates") : std::to_string(gates) + (gates == 1 ? " gate" : " gates"));
      o.width = 400;
      s += figure(report::flow_chart(boxes, o));
    }
  }
  s += "</div>";
  if (!notes.empty()) s += "<ul class=\"note\">" + notes + "</ul>";
  return s;
}

// The scalar gate parameters the train lines log per layer (models::GateKindSpec::logged_parameters,
// e.g. the pair gate's α), a chart per run and parameter with a line per layer; "" when no run has one.
std::string gate_parameter_charts(const std::vector<ReportRun>& runs) {
  std::string s;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const ReportRun& run = runs[k];
    for (const models::GateKindSpec* kind : models::gate_kinds())
      for (const models::GateLoggedParameter& p : kind->logged_parameters) {
        // A series per layer, as in the gate mean's chart, so a layer has one colour in both; a layer
        // without the kind logs null and draws nothing.
        std::vector<Series> series;
        bool any = false;
        for (int l = 0; l < n_layers(run.record); ++l) {
          StepSeries one = metric_series(run.record, "train", p.metric + "_by_layer", l);
          any = any || !one.step.empty();
          series.push_back(series_of(std::string("layer ").append(std::to_string(l)), one));
        }
        if (!any) continue;
        const std::string label = p.label.empty() ? p.metric : p.label;
        ChartOptions o;
        o.id = std::string("gate-param-run").append(std::to_string(k)) + "-" + p.metric;
        o.title = run.record.name + ": " + label + " per layer";
        o.x_label = "step";
        o.y_label = label;
        o.width = 460;
        o.height = 260;
        s += figure(report::line_chart(series, o));
      }
  }
  return s.empty() ? s : "<div class=\"charts\">" + s + "</div>";
}

// model.arch encoder_decoder in the run's config (a run whose probe failed still gets its note in
// the cross-attention section).
bool is_encoder_decoder(const RunRecord& r) {
  return r.config.is_object() && r.config.contains("model") && r.config["model"].is_object() &&
         r.config["model"].contains("arch") && r.config["model"]["arch"] == "encoder_decoder";
}

std::string gate_over_training(const std::vector<ReportRun>& runs) {
  std::string s = "<div class=\"charts\">";
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const ReportRun& run = runs[k];
    if (!has_gates(run)) continue;
    std::vector<Series> series;
    for (int l = 0; l < n_layers(run.record); ++l)
      series.push_back(series_of(std::string("layer ").append(std::to_string(l)),
                                 metric_series(run.record, "train", "gate_mean_by_layer", l)));
    ChartOptions o;
    o.id = std::string("gate-mean-run").append(std::to_string(k));
    o.title = run.record.name + ": gate mean per layer";
    o.x_label = "step";
    o.y_label = "gate mean";
    o.width = 460;
    o.height = 260;
    s += figure(report::line_chart(series, o));
  }
  s += "</div>";
  for (std::size_t k = 0; k < runs.size(); ++k)
    if (has_gates(runs[k])) s += gate_by_head_table(runs[k], k);
  return s;
}

// Whether the probe found gate values anywhere: a run whose only gates are the encoder's logs no
// gate mean, yet has histograms to show.
bool probe_has_gates(const RunProbe& probe) {
  for (const std::vector<models::LayerInspection>* site : {&probe.layers, &probe.cross, &probe.encoder})
    for (const models::LayerInspection& layer : *site)
      if (!layer.gate_values.empty()) return true;
  return false;
}

bool has_gate_values(const ReportRun& run) { return has_gates(run) || probe_has_gates(run.probe); }

// A histogram per layer of one site that holds gate values: `site` is "layer" (the decoder's
// self-attention), "cross" or "encoder"; `name` starts each title.
std::string site_histograms(const std::vector<models::LayerInspection>& layers, std::size_t k, const std::string& site,
                            const std::string& name, const std::string& suffix) {
  std::string s;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const models::LayerInspection& layer = layers[l];
    if (layer.gate_values.empty()) continue;  // a layer outside model.gate.layers
    ChartOptions o;
    o.id = std::string("gate-hist-run").append(std::to_string(k)) + "-" + site + std::to_string(l);
    o.title = name + std::to_string(l) + suffix + " (" + std::to_string(layer.gate_values.size()) + " values)";
    o.x_label = "gate value";
    o.y_label = "fraction";
    o.width = 300;
    o.height = 210;
    s += figure(report::histogram_chart(layer.gate_values, 0.0, 1.0, 20, o));
  }
  return s;
}

std::string gate_histograms(const std::vector<ReportRun>& runs) {
  std::string s;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const ReportRun& run = runs[k];
    if (!has_gate_values(run)) continue;
    s += std::string("<h3>").append(escape_xml(run.record.name)) + "</h3>";
    if (!run.probe.ok()) {
      s += std::string("<p class=\"note\">no gate values: ").append(escape_xml(run.probe.note)) + "</p>";
      continue;
    }
    s += "<div class=\"charts\">";
    const bool seq2seq = run.probe.seq2seq();
    s += site_histograms(run.probe.layers, k, "layer", seq2seq ? "decoder layer " : "layer ",
                         seq2seq ? " self-attention" : "");
    s += site_histograms(run.probe.cross, k, "cross", "decoder layer ", " cross-attention");
    s += site_histograms(run.probe.encoder, k, "encoder", "encoder layer ", "");
    s += "</div>";
  }
  return s;
}

std::int64_t keys_of(const models::LayerInspection& layer) { return layer.keys > 0 ? layer.keys : layer.tokens; }

// One head's attention map [tokens, keys] of a layer's sample (zeros where the layer kept none).
std::vector<double> head_map(const models::LayerInspection& layer, std::int64_t head) {
  const std::int64_t n = layer.tokens * keys_of(layer);
  if (head < 0 || static_cast<std::int64_t>(layer.attention.size()) < (head + 1) * n)
    return std::vector<double>(static_cast<std::size_t>(n), 0.0);
  return {layer.attention.begin() + head * n, layer.attention.begin() + (head + 1) * n};
}

// The attention map averaged over the layer's heads.
std::vector<double> head_mean(const models::LayerInspection& layer) {
  std::vector<double> mean(static_cast<std::size_t>(layer.tokens * keys_of(layer)), 0.0);
  for (std::int64_t h = 0; h < layer.heads; ++h) {
    const std::vector<double> one = head_map(layer, h);
    for (std::size_t i = 0; i < mean.size(); ++i) mean[i] += one[i] / static_cast<double>(layer.heads);
  }
  return mean;
}

// Tokens as axis labels: spaces shown as ␣ (a label of spaces would read as none).
std::vector<std::string> axis_labels(const std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  for (const std::string& t : tokens) {
    std::string l;
    for (char c : t) l += c == ' ' ? std::string("␣") : std::string(1, c);
    out.push_back(l);
  }
  return out;
}

// A layer's map with token labels: `rows` on the query rows, `cols` on the key columns.
std::string labelled_map(const std::vector<double>& map, const models::LayerInspection& layer, const ChartOptions& o,
                         const std::vector<std::string>& rows, const std::vector<std::string>& cols,
                         const std::string& row_name, const std::string& col_name) {
  report::HeatmapLabels labels{axis_labels(rows), axis_labels(cols), row_name, col_name};
  return report::heatmap(map, layer.tokens, keys_of(layer), o, labels);
}

// The sample's tokens (`tokens`: the probe's own when null) as spans coloured by `gate` (none
// given: plain); token ids are spaced apart.
std::string coloured_tokens(const RunProbe& probe, const std::vector<double>& gate,
                            const std::vector<std::string>* tokens = nullptr) {
  const std::vector<std::string>& text = tokens ? *tokens : probe.tokens;
  std::string s;
  for (std::size_t i = 0; i < text.size(); ++i) {
    s += "<span";
    if (probe.subword) s += " class=\"piece\"";
    if (i < gate.size()) {
      const double g = gate[i];
      s += " style=\"background:";
      s += report::ramp_color(g);
      if (report::ramp_is_dark(g)) s += ";color:#fff";
      s += "\" title=\"position ";
      s += std::to_string(i);
      s += ": gate ";
      s += report::format_number(g, 3);
      s += "\"";
    }
    s += ">";
    s += escape_xml(text[i]);
    s += "</span>";
    if (!probe.text) s += " ";
  }
  return s;
}

// A --heads item that names a head of no run's model draws nothing: a typo the report would hide.
void check_heads_select_something(const std::vector<ReportRun>& runs, const ReportOptions& options) {
  bool any_probe = false;
  for (const HeadChoice& choice : options.heads) {
    bool selects = false;
    for (const ReportRun& run : runs) {
      if (!run.probe.ok()) continue;
      any_probe = true;
      // The choice draws the self-attention maps, and the cross- and encoder-attention maps alike.
      for (const std::vector<models::LayerInspection>* layers :
           {&run.probe.layers, &run.probe.cross, &run.probe.encoder}) {
        const int L = static_cast<int>(layers->size());
        const int l = choice.layer < 0 ? L + choice.layer : choice.layer;
        selects = selects || (l >= 0 && l < L && choice.head < (*layers)[static_cast<std::size_t>(l)].heads);
      }
    }
    if (any_probe && !selects)
      throw UsageError(
          "--heads: " + std::to_string(choice.layer) + ":" + std::to_string(choice.head) +
          " selects no head of the runs' models (layers count from 0, or from the last as -1; heads from 0 "
          "to n_head − 1)");
  }
}

std::string sample_section(const std::vector<ReportRun>& runs, const ReportOptions& options) {
  check_heads_select_something(runs, options);
  std::string s;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const ReportRun& run = runs[k];
    s += std::string("<h3>").append(escape_xml(run.record.name)) + "</h3>";
    if (!run.probe.ok()) {
      s += std::string("<p class=\"note\">no sample: ").append(escape_xml(run.probe.note)) + "</p>";
      continue;
    }
    const std::vector<models::LayerInspection>& layers = run.probe.layers;
    const bool seq2seq = run.probe.seq2seq();
    if (seq2seq)
      s += "<div class=\"layer-label\">source (the encoder's input)</div><div class=\"tokens source\">" +
           coloured_tokens(run.probe, {}, &run.probe.source_tokens) +
           "</div><div class=\"layer-label\">target (the decoder's input: start, then the target)</div>";
    bool coloured = false;
    if (has_gates(run)) {
      s += std::string("<div class=\"sample-gates\" id=\"tokens-run").append(std::to_string(k)) + "\">";
      for (std::size_t l = 0; l < layers.size(); ++l) {
        if (layers[l].gate_by_token.empty()) continue;
        s += std::string("<div class=\"layer-label\">layer ").append(std::to_string(l)) +
             "</div><div class=\"tokens\" data-layer=\"" + std::to_string(l) + "\">" +
             coloured_tokens(run.probe, layers[l].gate_by_token) + "</div>";
        coloured = true;
      }
      s += "</div>";
    }
    if (!coloured)  // no gates, or none on the (decoder's) self-attention that reports per token
      s += "<div class=\"tokens\">" + coloured_tokens(run.probe, {}) + "</div><p class=\"note\">" +
           (has_gates(run) ? "no self-attention gate reports a value per token" : "no gates (kind none)") +
           ": the text uncoloured</p>";
    s += "<div class=\"charts\">";
    std::vector<std::pair<int, int>> drawn;  // "0:0,-1:0" on a 1-layer model names one head twice
    for (const HeadChoice& choice : options.heads) {
      const int L = static_cast<int>(layers.size());
      const int l = choice.layer < 0 ? L + choice.layer : choice.layer;
      if (l < 0 || l >= L || choice.head < 0 || choice.head >= layers[static_cast<std::size_t>(l)].heads) continue;
      if (std::find(drawn.begin(), drawn.end(), std::make_pair(l, choice.head)) != drawn.end()) continue;
      drawn.emplace_back(l, choice.head);
      const models::LayerInspection& layer = layers[static_cast<std::size_t>(l)];
      ChartOptions o;
      o.id = std::string("attn-run").append(std::to_string(k)) + "-l" + std::to_string(l) + "-h" +
             std::to_string(choice.head);
      o.title = std::string("layer ").append(std::to_string(l)) + ", head " + std::to_string(choice.head);
      o.width = 280;
      o.height = 310;
      if (seq2seq) {  // short sequences: the tokens label the axes
        o.title = "decoder " + o.title;
        s += figure(
            labelled_map(head_map(layer, choice.head), layer, o, run.probe.tokens, run.probe.tokens, "query", "key"));
      } else {
        s += figure(report::heatmap(head_map(layer, choice.head), layer.tokens, keys_of(layer), o));
      }
    }
    s += "</div>";
  }
  return s;
}

// The gate's mean by token class, a table per run with a row per layer and reading of a position
// (its own token, or the token it predicts); each cell the mean over the probe's windows and, below
// it, the positions counted.
std::string token_class_section(const std::vector<ReportRun>& runs) {
  std::string s;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const RunProbe& probe = runs[k].probe;
    if (!probe.ok() || probe.token_classes.empty()) continue;
    s += std::string("<h3>").append(escape_xml(runs[k].record.name)) + "</h3>";
    s += std::string("<table class=\"token-classes\" id=\"token-classes-run").append(std::to_string(k)) +
         "\"><tr><th>attention</th><th>layer</th><th>token of the position</th>";
    for (int c = 0; c < kTokenClasses; ++c)
      s += std::string("<th>").append(token_class_name(static_cast<TokenClass>(c))) + "</th>";
    s += "</tr>";
    for (const GateTokenClassRow& row : probe.token_classes) {
      s += std::string("<tr><td>").append(row.site) + "</td><td>" + std::to_string(row.layer) + "</td><td>" +
           (row.view == "read" ? "its own (read)" : "the one it predicts (next)") + "</td>";
      for (int c = 0; c < kTokenClasses; ++c) {
        const auto cls = static_cast<TokenClass>(c);
        const std::int64_t n = row.means.count[static_cast<std::size_t>(c)];
        s += "<td>" + (n > 0 ? report::format_number(row.means.mean(cls), 3) : std::string("–")) + "<br><small>" +
             std::to_string(n) + "</small></td>";
      }
      s += "</tr>";
    }
    s += "</table>";
  }
  return s;
}

// An encoder–decoder run's generated target coloured by each decoder block's cross-attention gate at
// the step that wrote each token, and those gates drawn per decoding step.
std::string generated_gate_view(const RunProbe& probe, const std::string& run_id) {
  if (probe.generated_tokens.empty()) return "";
  std::string s = "<div class=\"sample-gates generated\" id=\"generated-" + run_id +
                  "\"><div class=\"layer-label\">generated target (greedy), each token coloured by the "
                  "cross-attention's gate at the decoding step that wrote it</div>";
  std::vector<Series> series;
  for (std::size_t l = 0; l < probe.generated_gate.size(); ++l) {
    const std::vector<double>& gate = probe.generated_gate[l];
    if (gate.empty()) continue;
    s += std::string("<div class=\"layer-label\">layer ").append(std::to_string(l)) +
         "</div><div class=\"tokens\" data-layer=\"" + std::to_string(l) + "\">" +
         coloured_tokens(probe, gate, &probe.generated_tokens) + "</div>";
    Series line;
    line.label = "layer " + std::to_string(l);
    for (std::size_t t = 0; t < gate.size(); ++t) {
      line.x.push_back(static_cast<double>(t + 1));
      line.y.push_back(gate[t]);
    }
    series.push_back(std::move(line));
  }
  s += "</div>";
  ChartOptions o;
  o.id = "gate-steps-" + run_id;
  o.title = "cross-attention gate per decoding step";
  o.x_label = "decoding step (the token written)";
  o.y_label = "gate";
  o.width = std::max(420, 40 + 14 * static_cast<int>(probe.generated_tokens.size()));
  return s + "<div class=\"charts\">" + figure(report::line_chart(series, o)) + "</div>";
}

// The cross-attention of each encoder–decoder run's sample: per decoder block the map averaged over
// heads, then the heads --heads names in that block; rows are the decoder's input positions, columns
// the source's. The encoder's self-attention follows, averaged over heads per block.
std::string cross_section(const std::vector<ReportRun>& runs, const ReportOptions& options) {
  std::string s;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const ReportRun& run = runs[k];
    const RunProbe& probe = run.probe;
    if (probe.ok() && !probe.seq2seq()) continue;  // a decoder: nothing to show here
    s += std::string("<h3>").append(escape_xml(run.record.name)) + "</h3>";
    if (!probe.ok()) {
      s += std::string("<p class=\"note\">no cross-attention: ").append(escape_xml(probe.note)) + "</p>";
      continue;
    }
    const std::string run_id = std::string("run").append(std::to_string(k));
    s += generated_gate_view(probe, run_id);
    s += "<div class=\"charts cross-attn\" id=\"cross-attn-" + run_id + "\">";
    const int L = static_cast<int>(probe.cross.size());
    for (int l = 0; l < L; ++l) {
      const models::LayerInspection& layer = probe.cross[static_cast<std::size_t>(l)];
      if (layer.heads <= 0 || layer.attention.empty()) continue;
      const std::string layer_id = std::string("cross-attn-").append(run_id) + "-l" + std::to_string(l);
      ChartOptions o;
      o.id = layer_id + "-mean";
      o.title = std::string("layer ").append(std::to_string(l)) + " cross-attention, mean of " +
                std::to_string(layer.heads) + " heads";
      o.width = 320;
      o.height = 340;
      s += figure(labelled_map(head_mean(layer), layer, o, probe.tokens, probe.source_tokens, "target", "source"));
      std::vector<int> drawn;
      for (const HeadChoice& choice : options.heads) {
        const int at = choice.layer < 0 ? L + choice.layer : choice.layer;
        if (at != l || choice.head >= layer.heads) continue;
        if (std::find(drawn.begin(), drawn.end(), choice.head) != drawn.end()) continue;
        drawn.push_back(choice.head);
        o.id = layer_id + "-h" + std::to_string(choice.head);
        o.title =
            std::string("layer ").append(std::to_string(l)) + " cross-attention, head " + std::to_string(choice.head);
        s += figure(labelled_map(head_map(layer, choice.head), layer, o, probe.tokens, probe.source_tokens, "target",
                                 "source"));
      }
    }
    s += "</div>";
    if (probe.encoder.empty()) continue;
    s += "<div class=\"charts encoder-attn\" id=\"encoder-attn-" + run_id + "\">";
    for (std::size_t l = 0; l < probe.encoder.size(); ++l) {
      const models::LayerInspection& layer = probe.encoder[l];
      if (layer.heads <= 0 || layer.attention.empty()) continue;
      ChartOptions o;
      o.id = std::string("encoder-attn-").append(run_id) + "-l" + std::to_string(l) + "-mean";
      o.title = std::string("encoder layer ").append(std::to_string(l)) + ", mean of " + std::to_string(layer.heads) +
                " heads";
      o.width = 300;
      o.height = 320;
      s += figure(labelled_map(head_mean(layer), layer, o, probe.source_tokens, probe.source_tokens, "query", "key"));
    }
    s += "</div>";
  }
  return s;
}

}  // namespace

std::vector<HeadChoice> parse_heads(const std::string& text) {
  std::vector<HeadChoice> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const std::size_t colon = item.find(':');
    HeadChoice c;
    std::size_t used_l = 0, used_h = 0;
    bool ok = colon != std::string::npos;
    try {
      if (ok) {
        c.layer = std::stoi(item.substr(0, colon), &used_l);
        c.head = std::stoi(item.substr(colon + 1), &used_h);
      }
    } catch (const std::exception&) {
      ok = false;
    }
    if (!ok || used_l != colon || used_h != item.size() - colon - 1 || c.head < 0)
      throw UsageError("--heads: '" + item + "' is not LAYER:HEAD (e.g. 0:0 or -1:2 for the last layer's head 2)");
    out.push_back(c);
    start = comma + 1;
  }
  return out;
}

std::string report_html(const std::vector<ReportRun>& runs, const ReportOptions& options) {
  bool any_accuracy = false, any_gates = false, any_gate_values = false, any_seq2seq = false;
  for (const ReportRun& r : runs) {
    any_accuracy = any_accuracy || r.record.val_accuracy.has_value();
    any_gates = any_gates || has_gates(r);
    any_gate_values = any_gate_values || has_gate_values(r);
    any_seq2seq = any_seq2seq || r.probe.seq2seq() || is_encoder_decoder(r.record);
  }
  std::string s = std::string("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>")
                      .append(escape_xml(options.title)) +
                  "</title><style>" + kStyle + "</style></head><body>\n";
  s += std::string("<h1>").append(escape_xml(options.title)) + "</h1>\n";
  s += std::string("<p class=\"note\">").append(std::to_string(runs.size())) + " run(s): ";
  for (std::size_t k = 0; k < runs.size(); ++k) s += (k ? ", " : "") + escape_xml(runs[k].record.dir);
  s += ". Final values: the last val line and the last train line's statistics; tokens/s is the median over logged "
       "steps.</p>\n";

  s += "<section id=\"summary\"><h2>Summary</h2>" + summary_table(runs) + "</section>\n";

  s += "<section id=\"gate-diagram\"><h2>Where the gates act</h2><p class=\"note\">Each run's attention block "
       "in the fixed order of application, top to bottom: the base stages in grey, each configured gate at the "
       "stage it acts on (h, q, k, the logits S, the probabilities P, the output y or the residual stream x), "
       "labelled with its layers and the options set off their defaults; hover a gate for its math.</p>";
  s += block_diagrams(runs);
  s += "</section>\n";

  s += "<section id=\"loss-curves\"><h2>Loss curves</h2><div class=\"charts\">";
  s += curves_chart(runs, "train", "loss", "loss-train", "training loss", "loss");
  s += curves_chart(runs, "val", "loss", "loss-val", "validation loss", "loss");
  if (any_accuracy)
    s += curves_chart(runs, "val", "accuracy", "accuracy-val", "validation answer accuracy", "accuracy");
  s += "</div></section>\n";

  s += "<section id=\"loss-by-position\"><h2>Loss by position</h2><p class=\"note\">The final checkpoint on "
       "its first val windows: the mean loss of the tokens predicted at positions [2^k, 2^(k+1)) of the window, "
       "drawn at the bucket's end (log2). A model that uses its context falls with position; past the length it "
       "trained at, a rise is where it stops extrapolating.</p>";
  s += position_loss_chart(runs);
  s += "</section>\n";

  s += "<section id=\"attention-stats\"><h2>Attention entropy and sink ratio</h2>"
       "<p class=\"note\">Entropy: mean over layers, heads and queries of −Σ A ln A; sink ratio: mean attention on "
       "token 0, both on training batches.</p><div class=\"charts\">";
  s += final_bars(runs, &RunRecord::attn_entropy, "attn-entropy-final", "final attention entropy");
  s += final_bars(runs, &RunRecord::sink_ratio, "sink-ratio-final", "final sink ratio");
  s += curves_chart(runs, "train", "attn_entropy", "attn-entropy-curves", "attention entropy over training",
                    "entropy (nats)");
  s += curves_chart(runs, "train", "sink_ratio", "sink-ratio-curves", "sink ratio over training", "sink ratio");
  s += "</div></section>\n";

  s += "<section id=\"gate-over-training\"><h2>Gate mean per layer over training</h2>";
  s += any_gates ? gate_over_training(runs) : "<p class=\"note\">no run has gates</p>";
  s += "</section>\n";

  if (const std::string charts = gate_parameter_charts(runs); !charts.empty())
    s += "<section id=\"gate-parameters\"><h2>Gate parameters per layer over training</h2><p class=\"note\">"
         "Scalar parameters of the gates as the train lines log them after each logged step (e.g. a "
         "modulation's mixing weight α = σ(alpha)), a line per layer that has the gate.</p>" +
         charts + "</section>\n";

  s += "<section id=\"gate-histograms\"><h2>Gate values per layer</h2><p class=\"note\">All gate values of the "
       "final checkpoint on the first val windows (eval mode).</p>";
  s += any_gate_values ? gate_histograms(runs) : "<p class=\"note\">no run has gates</p>";
  s += "</section>\n";

  s += "<section id=\"sample\"><h2>One sample text</h2><p class=\"note\">The first val window through the final "
       "checkpoint. Tokens are coloured by their mean gate value in each layer <span class=\"legend-ramp\"></span> "
       "(0 → 1; hover for the value); attention maps show query rows against key columns, colour ∝ √A.</p>";
  s += sample_section(runs, options);
  s += "</section>\n";
  bool any_token_classes = false;
  for (const ReportRun& r : runs) any_token_classes = any_token_classes || !r.probe.token_classes.empty();
  if (any_token_classes)
    s += "<section id=\"token-classes\"><h2>Gate by token class</h2><p class=\"note\">The mean gate value "
         "of the final checkpoint on the first val windows, by the class of a position's token: punctuation, a "
         "function word (gattn's list: articles, pronouns, prepositions, conjunctions, auxiliaries, with the "
         "Early Modern English forms), a content word (any other word), other (whitespace, start and end). A "
         "position is read two ways: by its own token, and by the token it predicts (in an encoder–decoder, the "
         "target token that decoding step writes). The count of positions is under each mean.</p>" +
         token_class_section(runs) + "</section>\n";
  if (any_seq2seq) {
    s += "<section id=\"cross-attention\"><h2>Cross-attention (encoder–decoder)</h2><p class=\"note\">The sample's "
         "decoder attending over its source: a row per target position (the decoder's input token labels it: the "
         "row predicts the next target token), a column per source token, colour ∝ √A, hover for the weight. Each "
         "decoder block's map averaged over heads comes first, then the heads --heads names; the encoder's "
         "self-attention, averaged over heads, follows. Where the cross-attention has a gate per target position "
         "(context, input, output), the target the model writes for the sample's source (greedy) comes first, "
         "each token coloured by the gate at the decoding step that wrote it, and the gate drawn per step.</p>";
    s += cross_section(runs, options);
    s += "</section>\n";
  }
  s += "</body></html>\n";
  return s;
}

}  // namespace gattn::recipes
