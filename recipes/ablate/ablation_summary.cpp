// summary.csv and summary.md of an ablation.
#include "recipes/ablate/ablation_summary.h"

#include <cstdio>
#include <functional>
#include <map>
#include <optional>

namespace gattn::recipes {

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

std::string csv_number(const std::optional<double>& v) {
  if (!v) return "";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", *v);
  return buf;
}

std::string short_key(const std::string& key) {
  const std::size_t dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

bool is_seed(const GridAxis& axis) { return axis.key == "seed"; }

// FLOPs as MFLOP with three significant digits ("61.2", "0.0612"), whole numbers from 100 on.
std::string mflop(double flops) {
  const double m = flops / 1e6;
  char buf[48];
  std::snprintf(buf, sizeof buf, m >= 100 ? "%.0f" : "%.3g", m);
  return buf;
}

}  // namespace

std::string summary_csv(const std::vector<GridAxis>& grid, const std::vector<CellResult>& cells) {
  std::string out = "cell";
  for (const GridAxis& a : grid) out += std::string(",").append(csv_field(a.key));
  out +=
      ",val_loss,val_accuracy,gate_mean,gate_frac_lt_0.1,attn_entropy,sink_ratio,tokens_per_s,parameters,steps,elapsed_"
      "s,flops_per_token,generation_tokens_per_s,cross_attn_entropy\n";
  for (const CellResult& c : cells) {
    out += csv_field(c.cell.name);
    for (const auto& [key, value] : c.cell.point) out += std::string(",").append(csv_field(value));
    const RunRecord& r = c.run;
    for (const auto& v :
         {r.val_loss, r.val_accuracy, r.gate_mean, r.gate_frac_lt_0_1, r.attn_entropy, r.sink_ratio, r.tokens_per_s})
      out += std::string(",").append(csv_number(v));
    out.push_back(',');
    if (r.parameters) out += std::to_string(*r.parameters);
    out += std::string(",").append(std::to_string(r.last_step));
    out += std::string(",").append(csv_number(r.elapsed_s));
    out += std::string(",").append(csv_number(r.flops_per_token));
    out += std::string(",").append(csv_number(r.generation_tokens_per_s));
    out += std::string(",").append(csv_number(r.cross_attn_entropy)) + "\n";
  }
  return out;
}

std::string summary_markdown(const std::vector<GridAxis>& grid, const std::vector<CellResult>& cells) {
  // Groups: the grid point without its seed.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CellResult*>> groups;
  std::map<std::string, std::vector<std::string>> labels;
  for (const CellResult& c : cells) {
    std::string id;
    std::vector<std::string> label;
    for (std::size_t a = 0; a < grid.size() && a < c.cell.point.size(); ++a) {
      if (is_seed(grid[a])) continue;
      id += c.cell.point[a].second + "\x1f";
      label.push_back(c.cell.point[a].second);
    }
    if (!groups.count(id)) order.push_back(id);
    groups[id].push_back(&c);
    labels[id] = label;
  }
  bool any_accuracy = false, any_cross = false;
  for (const CellResult& c : cells) {
    any_accuracy = any_accuracy || c.run.val_accuracy.has_value();
    any_cross = any_cross || c.run.cross_attn_entropy.has_value();
  }

  std::string head = "|", rule = "|";
  for (const GridAxis& a : grid)
    if (!is_seed(a)) {
      head += std::string(" ").append(short_key(a.key)) + " |";
      rule += " --- |";
    }
  head += " seeds | val loss |";
  rule += " --- | --- |";
  if (any_accuracy) {
    // Encoder–decoder runs (the only ones with a cross-attention) score exact match.
    head += any_cross ? " val accuracy (%, exact match for seq2seq) |" : " val accuracy (%) |";
    rule += " --- |";
  }
  head += " gate mean | gate < 0.1 | attn entropy | sink ratio |";
  rule += " --- | --- | --- | --- |";
  if (any_cross) {  // encoder–decoder runs
    head += " cross-attn entropy |";
    rule += " --- |";
  }
  head += " tokens/s | gen tokens/s | parameters | MFLOP/token |";
  rule += " --- | --- | --- | --- |";
  std::string out = head + "\n" + rule + "\n";

  for (const std::string& id : order) {
    const std::vector<const CellResult*>& members = groups[id];
    auto stat = [&](const std::function<std::optional<double>(const RunRecord&)>& get, double scale, int decimals) {
      std::vector<double> v;
      for (const CellResult* c : members)
        if (auto x = get(c->run)) v.push_back(*x * scale);
      return format_mean_std(mean_std(v), decimals);
    };
    std::string row = "|";
    auto add = [&row](const std::string& text) {
      row += ' ';
      row += text;
      row += " |";
    };
    for (const std::string& l : labels[id]) add(l);
    add(std::to_string(members.size()));
    add(stat([](const RunRecord& r) { return r.val_loss; }, 1, 4));
    if (any_accuracy) add(stat([](const RunRecord& r) { return r.val_accuracy; }, 100, 1));
    add(stat([](const RunRecord& r) { return r.gate_mean; }, 1, 3));
    add(stat([](const RunRecord& r) { return r.gate_frac_lt_0_1; }, 1, 3));
    add(stat([](const RunRecord& r) { return r.attn_entropy; }, 1, 3));
    add(stat([](const RunRecord& r) { return r.sink_ratio; }, 1, 3));
    if (any_cross) add(stat([](const RunRecord& r) { return r.cross_attn_entropy; }, 1, 3));
    add(stat([](const RunRecord& r) { return r.tokens_per_s; }, 1, 0));
    add(stat([](const RunRecord& r) { return r.generation_tokens_per_s; }, 1, 0));
    // The model's size and compute: the same for every seed of the group.
    const RunRecord& first = members.front()->run;
    add(first.parameters ? std::to_string(*first.parameters) : std::string("–"));
    add(first.flops_per_token ? mflop(*first.flops_per_token) : std::string("–"));
    out += row + "\n";
  }
  return out;
}

}  // namespace gattn::recipes
