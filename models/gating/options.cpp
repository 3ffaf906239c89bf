// The shared gate options: registration and checks, values at a step, and the head layout.
#include "models/gating/options.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "core/tensor/error.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/shape.h"

namespace gattn::models {

namespace {

[[noreturn]] void bad(const std::string& key, const std::string& what) { throw ValueError(key + ": " + what); }

using Check = std::function<void(const nlohmann::json&, const std::string&, const GateConfig&, const ModelConfig&)>;

GateOptionSpec spec(config::KeySpec key, Check check) {
  GateOptionSpec s = gate_option(std::move(key), std::move(check));
  s.shared = true;
  return s;
}

void need_bool(const nlohmann::json& v, const std::string& key) {
  if (!v.is_boolean()) bad(key, "expected true or false, got " + v.dump());
}

std::int64_t need_int(const nlohmann::json& v, const std::string& key, std::int64_t min) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < min)
    bad(key, "expected an integer >= " + std::to_string(min) + ", got " + v.dump());
  return v.get<std::int64_t>();
}

// The option `key` of `gate`: its value, or the shared default when the kind does not register it.
nlohmann::json read(const GateConfig& gate, const std::string& key);

// The carried heads of a `heads` value ("all" or a list).
std::vector<std::int64_t> heads_of(const nlohmann::json& v) {
  if (v.is_string()) return {};
  std::vector<std::int64_t> heads = v.get<std::vector<std::int64_t>>();
  std::sort(heads.begin(), heads.end());
  return heads;
}

const std::map<std::string, GateOptionSpec>& shared_specs() {
  static const std::map<std::string, GateOptionSpec> specs = [] {
    std::map<std::string, GateOptionSpec> m;
    auto add = [&](GateOptionSpec s) { m.emplace(s.key, std::move(s)); };
    add(spec(config::num_key("temperature_final", std::nullopt,
                             "τ after temperature_steps steps, linear in between (null = temperature: constant)")
                 .at_least(1e-3)
                 .at_most(1e3)
                 .allow_null(),
             [](const nlohmann::json& v, const std::string& key, const GateConfig& g, const ModelConfig&) {
               if (v.is_null()) return;
               if (!v.is_number() || !(v.get<double>() >= 1e-3 && v.get<double>() <= 1e3))
                 bad(key, "must be in [0.001, 1000] or null, got " + v.dump());
               if (read(g, "temperature_steps").get<std::int64_t>() == 0 && v.get<double>() != g.temperature)
                 bad(key, "needs temperature_steps > 0 (the steps over which τ goes from temperature to it)");
             }));
    add(spec(config::int_key("temperature_steps", 0,
                             "optimizer steps over which τ goes linearly from temperature to temperature_final")
                 .at_least(0),
             [](const nlohmann::json& v, const std::string& key, const GateConfig&, const ModelConfig&) {
               need_int(v, key, 0);
             }));
    add(spec(config::bool_key("hard", false,
                              "forward 1[g > hard_threshold], backward the soft gate's gradient (straight-through)"),
             [](const nlohmann::json& v, const std::string& key, const GateConfig& g, const ModelConfig&) {
               need_bool(v, key);
               if (v.get<bool>() && g.activation == "tanh_magnitude")
                 bad(key, "means nothing with activation 'tanh_magnitude' (its values are signed, not an opening)");
             }));
    add(spec(config::num_key("hard_threshold", 0.5, "the hard gate's threshold θ (only with hard: true)"),
             [](const nlohmann::json& v, const std::string& key, const GateConfig& g, const ModelConfig&) {
               if (!v.is_number() || !std::isfinite(v.get<double>()))
                 bad(key, "must be a finite number, got " + v.dump());
               if (!read(g, "hard").get<bool>() && v.get<double>() != 0.5) bad(key, "means nothing without hard: true");
               // The threshold must fall inside the activation's range, or the gate is constant.
               const double t = v.get<double>();
               const bool unit = g.activation == "sigmoid" || g.activation == "gumbel_sigmoid";
               if (read(g, "hard").get<bool>() && unit && !(t > 0.0 && t < 1.0))
                 bad(key, "must be in (0, 1) for activation " + g.activation + " (its values), got " + v.dump());
               if (read(g, "hard").get<bool>() && !unit && !(t > 0.0))
                 bad(key, "must be > 0 for activation " + g.activation + " (its values), got " + v.dump());
             }));
    add(spec(config::int_key("groups", 1, "G consecutive heads share one gate (1 = a gate per head); divides n_head")
                 .greater_than(0),
             [](const nlohmann::json& v, const std::string& key, const GateConfig&, const ModelConfig& m) {
               const std::int64_t g = need_int(v, key, 1);
               if (m.n_head % g != 0)
                 bad(key, "must divide model.n_head=" + std::to_string(m.n_head) + ", got " + std::to_string(g));
             }));
    add(spec(
        config::all_or_int_list_key("heads", "head indices",
                                    "heads that carry the gate: all, or a list like [0, 1] (the others are ungated)")
            .at_least(0),
        [](const nlohmann::json& v, const std::string& key, const GateConfig& g, const ModelConfig& m) {
          if (v.is_string()) {
            if (v.get<std::string>() != "all") bad(key, "expected 'all' or a list of head indices, got " + v.dump());
            return;
          }
          if (!v.is_array() || v.empty())
            bad(key, "expected 'all' or a non-empty list of head indices, got " + v.dump());
          std::set<std::int64_t> seen;
          for (const auto& e : v) {
            if (!e.is_number_integer()) bad(key, "expected a list of head indices, got " + v.dump());
            const std::int64_t h = e.get<std::int64_t>();
            if (h < 0 || h >= m.n_head)
              bad(key, "head " + std::to_string(h) + " out of range [0, " + std::to_string(m.n_head) +
                           ") for model.n_head=" + std::to_string(m.n_head));
            if (!seen.insert(h).second) bad(key, "head " + std::to_string(h) + " listed twice");
          }
          const std::int64_t groups = read(g, "groups").get<std::int64_t>();
          if (groups > 1 && m.n_head % groups == 0)
            for (std::int64_t h : seen)
              for (std::int64_t o = h - h % groups; o < h - h % groups + groups; ++o)
                if (!seen.count(o))
                  bad(key, "lists head " + std::to_string(h) + " but not head " + std::to_string(o) +
                               " of its group (groups " + std::to_string(groups) + "): list whole groups");
        }));
    add(spec(config::bool_key("bias", true,
                              "the gate projection's bias b (false: g = act(h·Wᵀ), as Qwen's gated attention)"),
             [](const nlohmann::json& v, const std::string& key, const GateConfig& g, const ModelConfig&) {
               need_bool(v, key);
               if (!v.get<bool>() && !std::isnan(g.init_bias))
                 bad(key, "false leaves no bias for init_bias to set (drop one of them)");
             }));
    add(spec(config::bool_key("input_norm", false, "LayerNorm (no affine, eps 1e-5) on the gate's input"),
             [](const nlohmann::json& v, const std::string& key, const GateConfig&, const ModelConfig&) {
               need_bool(v, key);
             }));
    add(spec(config::num_key("dropout", 0.0,
                             "while training, each gate value is replaced by 1 (dropped) with this probability")
                 .at_least(0)
                 .below(1),
             [](const nlohmann::json& v, const std::string& key, const GateConfig&, const ModelConfig&) {
               if (!v.is_number() || !(v.get<double>() >= 0.0 && v.get<double>() < 1.0))
                 bad(key, "must be a number in [0, 1), got " + v.dump());
             }));
    add(spec(config::int_key("ramp_start", 0, "the step from which the gate's effect ramps in: g_eff = 1 − r·(1 − g)")
                 .at_least(0),
             [](const nlohmann::json& v, const std::string& key, const GateConfig&, const ModelConfig&) {
               need_int(v, key, 0);
             }));
    add(spec(config::int_key("ramp_steps", 0, "steps over which r goes from 0 to 1 (0 = no ramp: on from ramp_start)")
                 .at_least(0),
             [](const nlohmann::json& v, const std::string& key, const GateConfig&, const ModelConfig&) {
               need_int(v, key, 0);
             }));
    return m;
  }();
  return specs;
}

nlohmann::json read(const GateConfig& gate, const std::string& key) {
  if (auto it = gate.options.find(key); it != gate.options.end()) {
    // The shorthand carries every schema key; only a kind that registers the key reads it.
    if (const GateKindSpec* k = find_gate_kind(gate.kind))
      for (const GateOptionSpec& o : k->options)
        if (o.key == key) return *it;
  }
  return shared_specs().at(key).default_value;
}

}  // namespace

const std::vector<std::string>& shared_gate_option_keys() {
  static const std::vector<std::string> keys = {
      "temperature_final", "temperature_steps", "hard",       "hard_threshold", "groups", "heads",
      "input_norm",        "dropout",           "ramp_start", "ramp_steps"};
  return keys;
}

std::vector<GateOptionSpec> shared_gate_options(std::initializer_list<const char*> keys) {
  std::vector<GateOptionSpec> out;
  for (const char* k : keys) out.push_back(shared_specs().at(k));
  return out;
}

GateOptions GateOptions::of(const GateConfig& gate) {
  GateOptions o;
  o.temperature = gate.temperature;
  const nlohmann::json final_t = read(gate, "temperature_final");
  o.temperature_final = final_t.is_null() ? gate.temperature : final_t.get<double>();
  o.temperature_steps = read(gate, "temperature_steps").get<std::int64_t>();
  o.hard = read(gate, "hard").get<bool>();
  o.hard_threshold = read(gate, "hard_threshold").get<double>();
  o.groups = read(gate, "groups").get<std::int64_t>();
  o.heads = heads_of(read(gate, "heads"));
  o.input_norm = read(gate, "input_norm").get<bool>();
  o.dropout = read(gate, "dropout").get<double>();
  o.ramp_start = read(gate, "ramp_start").get<std::int64_t>();
  o.ramp_steps = read(gate, "ramp_steps").get<std::int64_t>();
  return o;
}

double GateOptions::temperature_at(std::int64_t step) const {
  if (temperature_steps <= 0) return temperature;
  const double f =
      std::min(1.0, static_cast<double>(std::max<std::int64_t>(step, 0)) / static_cast<double>(temperature_steps));
  return f >= 1.0 ? temperature_final : temperature + (temperature_final - temperature) * f;
}

GateConfig settled_gate(const GateConfig& gate, std::int64_t step) {
  GateConfig g = gate;
  const GateOptions o = GateOptions::of(gate);
  // Only options the entry holds at a value other than the default change, so only ones its kind reads.
  if ((o.ramp_start != 0 || o.ramp_steps != 0) && o.ramp_at(step) == 1.0) {
    g.options["ramp_start"] = 0;
    g.options["ramp_steps"] = 0;
  }
  if (o.temperature_steps > 0 && step >= o.temperature_steps) {
    g.temperature = o.temperature_final;
    g.options["temperature_final"] = nullptr;
    g.options["temperature_steps"] = 0;
  }
  if (o.dropout != 0.0) g.options["dropout"] = 0.0;
  return g;
}

double GateOptions::ramp_at(std::int64_t step) const {
  if (ramp_steps <= 0) return step >= ramp_start ? 1.0 : 0.0;
  const double r = static_cast<double>(step - ramp_start) / static_cast<double>(ramp_steps);
  return std::clamp(r, 0.0, 1.0);
}

HeadUnits head_units(std::int64_t n_head, const GateOptions& options) {
  HeadUnits u;
  u.n_head = n_head;
  u.groups = options.groups;
  u.unit_of_head.assign(static_cast<std::size_t>(n_head), -1);
  std::vector<bool> carried(static_cast<std::size_t>(n_head), options.heads.empty());
  for (std::int64_t h : options.heads) carried[static_cast<std::size_t>(h)] = true;
  u.units = 0;
  for (std::int64_t g0 = 0; g0 < n_head; g0 += u.groups) {
    if (!carried[static_cast<std::size_t>(g0)]) continue;  // the check made groups whole
    u.heads_of_unit.emplace_back();
    for (std::int64_t h = g0; h < g0 + u.groups; ++h) {
      u.unit_of_head[static_cast<std::size_t>(h)] = u.units;
      u.heads_of_unit.back().push_back(h);
    }
    ++u.units;
  }
  return u;
}

Tensor expand_to_heads(const Tensor& x, const HeadUnits& units, std::int64_t width, double neutral) {
  if (units.one_per_head()) return x;
  const Shape& s = x.shape();
  if (s.empty() || s.back() != units.units * width)
    throw ShapeError("expand_to_heads: expected [..., " + std::to_string(units.units * width) + "], got " +
                     shape_str(s));
  const std::int64_t H = units.n_head;
  if (units.every_head()) {
    // Groups only: broadcast each unit over its G heads, [..., U, 1, w] ⊙ 1[G, w] → [..., H·w].
    Shape grouped(s.begin(), s.end() - 1);
    grouped.push_back(units.units);
    grouped.push_back(1);
    grouped.push_back(width);
    Shape out(s.begin(), s.end() - 1);
    out.push_back(H * width);
    return ops::reshape(ops::reshape(x, grouped) * Tensor::ones({units.groups, width}, x.dtype(), x.device()), out);
  }
  // Some heads without a gate: a one-hot map from units to heads, and the neutral value as the bias
  // of the heads it does not reach (x·Eᵀ + n: one product by 1 per value, the rest adds 0).
  const std::int64_t in = units.units * width, out = H * width;
  std::vector<double> e(static_cast<std::size_t>(out * in), 0.0), n(static_cast<std::size_t>(out), neutral);
  for (std::int64_t h = 0; h < H; ++h) {
    const std::int64_t u = units.unit_of_head[static_cast<std::size_t>(h)];
    if (u < 0) continue;
    for (std::int64_t c = 0; c < width; ++c) {
      e[static_cast<std::size_t>((h * width + c) * in + u * width + c)] = 1.0;
      n[static_cast<std::size_t>(h * width + c)] = 0.0;
    }
  }
  const Tensor map = Tensor::from(e, {out, in}, x.dtype()).to(x.device());
  const Tensor bias = Tensor::from(n, {out}, x.dtype()).to(x.device());
  return ops::linear(x, map, bias);
}

Tensor carried_heads(const Tensor& x, const HeadUnits& units) {
  if (units.every_head()) return x;
  std::vector<Tensor> parts;
  for (const auto& heads : units.heads_of_unit)
    for (std::int64_t h : heads) parts.push_back(ops::slice(x, 1, h, h + 1));
  return parts.size() == 1 ? parts[0] : ops::concat(parts, 1);
}

Tensor with_carried_heads(const Tensor& y, const Tensor& gated, const HeadUnits& units) {
  if (units.every_head()) return gated;
  std::vector<Tensor> parts;
  std::int64_t at = 0;
  for (std::int64_t h = 0; h < units.n_head; ++h) {
    if (units.unit_of_head[static_cast<std::size_t>(h)] < 0) {
      parts.push_back(ops::slice(y, 1, h, h + 1));
    } else {
      parts.push_back(ops::slice(gated, 1, at, at + 1));
      ++at;
    }
  }
  return ops::concat(parts, 1);
}

}  // namespace gattn::models
