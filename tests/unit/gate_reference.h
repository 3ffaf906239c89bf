// A naive reference of the gated attention for tests: full T×T scores, masks and gates written
// out with plain ops, the gates of a block composed in the documented order, and the parameter list
// a config should produce (the gates' parameters as their kinds register them).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "model_test_util.h"
#include "models/gating/registry.h"
#include "models/gpt.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/nn_functional.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"
#include "test_util.h"

namespace gattn::test {

using ShapeMap = std::map<std::string, Shape>;
using models::GPT;
using models::ModelConfig;

// Where a gate's parameters live in block `layer`: attn.gate. for a block's only gate, attn.gate.<kind>.
// when the block has two or more gates (a router among them counts), and a kind's own module name
// (attn.router.) always.
inline std::string gate_prefix(const ModelConfig& c, std::int64_t layer, const std::string& kind) {
  const models::GateKindSpec& spec = models::gate_kind(kind);
  const std::string attn = "blocks." + std::to_string(layer) + ".attn.";
  if (spec.module_name != "gate") return attn + spec.module_name + ".";
  return c.layer_gates(layer).size() >= 2 ? attn + "gate." + kind + "." : attn + "gate.";
}

// The parameter list of a config: the fixed model, and each gate's parameters as its kind
// registers them, under the documented prefixes.
inline ShapeMap spec_parameters(const ModelConfig& c) {
  const std::int64_t V = c.vocab_size, T = c.block_size, C = c.n_embd;
  ShapeMap m{{"wte.weight", {V, C}}, {"ln_f.weight", {C}}, {"ln_f.bias", {C}}};
  if (c.learned_positions()) m["wpe.weight"] = {T, C};  // rope and none have no table
  for (std::int64_t i = 0; i < c.n_layer; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    m[p + "ln1.weight"] = {C};
    m[p + "ln1.bias"] = {C};
    m[p + "attn.qkv.weight"] = {3 * C, C};
    m[p + "attn.qkv.bias"] = {3 * C};
    m[p + "attn.proj.weight"] = {C, C};
    m[p + "attn.proj.bias"] = {C};
    m[p + "ln2.weight"] = {C};
    m[p + "ln2.bias"] = {C};
    m[p + "mlp.fc.weight"] = {4 * C, C};
    m[p + "mlp.fc.bias"] = {4 * C};
    m[p + "mlp.proj.weight"] = {C, 4 * C};
    m[p + "mlp.proj.bias"] = {C};
    for (const models::GateConfig& g : c.layer_gates(i))
      for (const models::GateParameterSpec& ps : models::gate_kind(g.kind).parameters(c, g))
        m[gate_prefix(c, i, g.kind) + ps.name] = ps.shape;
  }
  return m;
}

// ---- a naive reference: full T×T scores, masks and gates written out with plain ops ----

inline Tensor heads(const Tensor& x, std::int64_t H) {  // [B, T, C] -> [B, H, T, d]
  return ops::permute(ops::reshape(x, {x.size(0), x.size(1), H, x.size(2) / H}), {0, 2, 1, 3});
}
inline Tensor unheads(const Tensor& y) {  // [B, H, T, d] -> [B, T, C]
  return ops::reshape(ops::permute(y, {0, 2, 1, 3}), {y.size(0), y.size(2), y.size(1) * y.size(3)});
}

// RoFormer's rotation written out with plain ops, rotate-half layout: [x1, x2] (the two halves of a
// head) -> [x1 cos − x2 sin, x2 cos + x1 sin] with angle t·10000^(−2k/d) at row t, pair k.
inline Tensor rotated(const Tensor& x) {  // [B, H, T, d], rows at positions 0 … T−1
  const std::int64_t T = x.size(2), d = x.size(3), h = d / 2;
  std::vector<double> c(static_cast<std::size_t>(T * h)), s(c.size());
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t k = 0; k < h; ++k) {
      const double a =
          static_cast<double>(t) / std::pow(10000.0, 2.0 * static_cast<double>(k) / static_cast<double>(d));
      c[static_cast<std::size_t>(t * h + k)] = std::cos(a);
      s[static_cast<std::size_t>(t * h + k)] = std::sin(a);
    }
  const Tensor cs = Tensor::from(c, {T, h}, x.dtype()), sn = Tensor::from(s, {T, h}, x.dtype());
  const Tensor x1 = ops::slice(x, 3, 0, h), x2 = ops::slice(x, 3, h, d);
  return ops::concat({x1 * cs - x2 * sn, x2 * cs + x1 * sn}, 3);
}

// 1 where key j is hidden from query i: j > i, or i − j >= window when window > 0.
inline Tensor hidden_keys(std::int64_t T, std::int64_t window) {
  std::vector<std::int32_t> m(static_cast<std::size_t>(T * T));
  for (std::int64_t i = 0; i < T; ++i)
    for (std::int64_t j = 0; j < T; ++j)
      m[static_cast<std::size_t>(i * T + j)] = j > i || (window > 0 && i - j >= window);
  return Tensor::from_ints(m, {T, T});
}

// ---- the gate options (docs/gates.md "Gate options") in eval mode, written out on the host ----

// An option of a gate entry: its value, or `fallback` when the entry does not set it.
inline nlohmann::json ref_option(const models::GateConfig& g, const std::string& key, nlohmann::json fallback) {
  auto it = g.options.find(key);
  return it == g.options.end() || it->is_null() ? fallback : *it;
}

// x with f applied to every value (no autograd: the reference is forward-only).
template <class F>
Tensor host_map(const Tensor& x, F f) {
  std::vector<double> v = x.to_vector();
  for (double& e : v) e = f(e);
  return Tensor::from(v, x.shape(), x.dtype());
}

// τ at step s: linear from temperature to temperature_final over temperature_steps.
inline double ref_tau(const models::GateConfig& g, std::int64_t s) {
  const double t0 = g.temperature, t1 = ref_option(g, "temperature_final", t0).get<double>();
  const double n = ref_option(g, "temperature_steps", 0).get<double>();
  if (n <= 0) return t0;
  const double f = std::min(1.0, static_cast<double>(s) / n);
  return t0 + (t1 - t0) * f;
}

inline double ref_ramp(const models::GateConfig& g, std::int64_t s) {
  const double s0 = ref_option(g, "ramp_start", 0).get<double>(), n = ref_option(g, "ramp_steps", 0).get<double>();
  if (n <= 0) return static_cast<double>(s) >= s0 ? 1.0 : 0.0;
  return std::min(1.0, std::max(0.0, (static_cast<double>(s) - s0) / n));
}

// LayerNorm without affine over the last axis, from its definition.
inline Tensor ref_norm(const Tensor& x) {
  const std::int64_t last = x.dim() - 1;
  Tensor mu = ops::mean(x, {last}, true);
  Tensor var = ops::mean(ops::square(x - mu), {last}, true);
  return (x - mu) / ops::sqrt(ops::add_scalar(var, 1e-5));
}

inline Tensor ref_gate_input(const models::GateConfig& g, const Tensor& x) {
  return ref_option(g, "input_norm", false).get<bool>() ? ref_norm(x) : x;
}

// The soft gate in eval: act(z/τ) (tanh_magnitude: tanh(z/τ)·σ(zm/τ)).
inline Tensor ref_soft(const models::GateConfig& g, const Tensor& z, const Tensor& zm, std::int64_t step) {
  const double inv = 1.0 / ref_tau(g, step);
  if (g.activation == "softplus")
    return host_map(ops::mul_scalar(z, inv), [](double u) { return std::log1p(std::exp(u)); });
  if (g.activation == "tanh_magnitude")
    return ops::tanh(ops::mul_scalar(z, inv)) * ops::sigmoid(ops::mul_scalar(zm, inv));
  return ops::sigmoid(ops::mul_scalar(z, inv));
}

// hard (1[g > θ]) then ramp (1 − r(1 − g)): the value a multiplying gate applies.
inline Tensor ref_effective(const models::GateConfig& g, const Tensor& soft, std::int64_t step) {
  const bool hard = ref_option(g, "hard", false).get<bool>();
  const double theta = ref_option(g, "hard_threshold", 0.5).get<double>(), r = ref_ramp(g, step);
  return host_map(soft, [&](double v) {
    if (hard) v = v > theta ? 1.0 : 0.0;
    return 1.0 - r * (1.0 - v);
  });
}

// The logit term of score and forget: log of the effective value (log σ, or log softplus for a softplus
// score gate, which may be > 0), a closed hard gate at most −30 below.
inline Tensor ref_log_effective(const models::GateConfig& g, const Tensor& soft, std::int64_t step) {
  const bool hard = ref_option(g, "hard", false).get<bool>();
  return host_map(ref_effective(g, soft, step),
                  [hard](double v) { return hard ? std::max(std::log(v), -30.0) : std::log(v); });
}

// Per-unit values [B, T, U·w] -> per head [B, T, H·w]: `groups` consecutive heads share a unit, units
// exist for the listed heads only, the others read `neutral`.
inline Tensor ref_per_head(const models::GateConfig& g, const Tensor& x, std::int64_t H, std::int64_t w,
                           double neutral) {
  const std::int64_t G = ref_option(g, "groups", 1).get<std::int64_t>();
  const nlohmann::json listed = ref_option(g, "heads", "all");
  std::vector<bool> carried(static_cast<std::size_t>(H), listed.is_string());
  if (!listed.is_string())
    for (const auto& h : listed) carried[h.get<std::size_t>()] = true;
  std::vector<Tensor> parts;
  std::int64_t unit = -1;
  for (std::int64_t h = 0; h < H; ++h) {
    if (h % G == 0 && carried[static_cast<std::size_t>(h)]) ++unit;
    if (carried[static_cast<std::size_t>(h)])
      parts.push_back(ops::slice(x, 2, unit * w, unit * w + w));
    else
      parts.push_back(Tensor::full({x.size(0), x.size(1), w}, neutral, x.dtype()));
  }
  return ops::concat(parts, 2);
}

struct RefGate {
  Tensor key_bias, forget_cum, pair_g, pair_alpha;  // [B,H,T], [B,H,T], [B,H,T,T], [1,H,1,1]
};

inline Tensor naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, const RefGate& g,
                              std::int64_t window) {
  const std::int64_t T = q.size(2);
  Tensor S = ops::mul_scalar(ops::matmul(q, k, false, true), 1.0 / std::sqrt(static_cast<double>(q.size(3))));
  if (g.key_bias.defined()) S = S + ops::unsqueeze(g.key_bias, 2);
  if (g.forget_cum.defined()) S = S + ops::unsqueeze(g.forget_cum, 3) - ops::unsqueeze(g.forget_cum, 2);
  Tensor P = ops::softmax(ops::masked_fill(S, hidden_keys(T, window), -1e30));
  if (g.pair_g.defined()) P = P * (g.pair_g * g.pair_alpha + (ops::neg(g.pair_alpha) + 1.0));
  return ops::matmul(P, v);
}

// The attention of block `layer` with its gates, composed from plain ops in the documented order:
// input → q, k, v → score and forget terms on S → softmax → pair modulation → routed mixture of the
// experts → context mix → output gate → attn.proj.
inline Tensor reference_attention(GPT& m, std::int64_t layer, const Tensor& h) {
  const ModelConfig& c = m.config();
  const std::int64_t B = h.size(0), T = h.size(1), C = c.n_embd, H = c.n_head, d = c.head_dim();
  const std::string p = "blocks." + std::to_string(layer) + ".attn.";
  auto P = [&](const std::string& n) { return m.parameter(p + n); };
  std::map<std::string, models::GateConfig> gates;
  for (const models::GateConfig& g : c.layer_gates(layer)) gates[g.kind] = g;
  auto has = [&](const std::string& kind) { return gates.count(kind) != 0; };
  auto G = [&](const std::string& kind, const std::string& n) { return m.parameter(gate_prefix(c, layer, kind) + n); };
  const std::int64_t step = m.step();
  // The soft gate in eval (gumbel_sigmoid is σ(z/τ)) from the kind's input x.
  auto soft_of = [&](const std::string& kind, const Tensor& x_raw) {
    const models::GateConfig& g = gates.at(kind);
    const Tensor x = ref_gate_input(g, x_raw);
    const Tensor zm = g.activation == "tanh_magnitude"
                          ? ops::linear(x, G(kind, "magnitude_weight"), G(kind, "magnitude_bias"))
                          : Tensor();
    return ref_soft(g, ops::linear(x, G(kind, "weight"), G(kind, "bias")), zm, step);
  };
  auto gate_of = [&](const std::string& kind, const Tensor& x) {
    return ref_effective(gates.at(kind), soft_of(kind, x), step);
  };

  const Tensor x = has("input") ? h * gate_of("input", h) : h;
  Tensor qkv = ops::linear(x, P("qkv.weight"), P("qkv.bias"));
  Tensor q = heads(ops::slice(qkv, 2, 0, C), H), k = heads(ops::slice(qkv, 2, C, 2 * C), H),
         v = heads(ops::slice(qkv, 2, 2 * C, 3 * C), H);
  RefGate g;
  if (has("score")) {
    const models::GateConfig& sg = gates.at("score");
    if (ref_option(sg, "form", "additive") == "multiplicative") {
      // S_ij·g_j (·g_i for query_key) = (g_i q_i)·(g_j k_j)/√d.
      Tensor gh = ops::unsqueeze(ops::permute(ref_per_head(sg, gate_of("score", h), H, 1, 1.0), {0, 2, 1}), 3);
      k = k * gh;
      if (ref_option(sg, "source", "key") == "query_key") q = q * gh;
    } else {
      g.key_bias =
          ops::permute(ref_per_head(sg, ref_log_effective(sg, soft_of("score", h), step), H, 1, 0.0), {0, 2, 1});
    }
  }
  if (has("forget")) {
    // c = (log g) · U with U_li = [l ≤ i]: the prefix sums as a product, not a scan.
    const models::GateConfig& fg = gates.at("forget");
    Tensor ls = ops::permute(ref_per_head(fg, ref_log_effective(fg, soft_of("forget", h), step), H, 1, 0.0), {0, 2, 1});
    std::vector<double> u(static_cast<std::size_t>(T * T));
    for (std::int64_t l = 0; l < T; ++l)
      for (std::int64_t i = 0; i < T; ++i) u[static_cast<std::size_t>(l * T + i)] = l <= i;
    g.forget_cum =
        ops::reshape(ops::matmul(ops::reshape(ls, {B, H, 1, T}), Tensor::from(u, {T, T}, h.dtype())), {B, H, T});
  }
  if (has("pair")) {
    const models::GateConfig& pg = gates.at("pair");
    const double inv_tau = 1.0 / ref_tau(pg, step);
    const bool shared = ref_option(pg, "shared_projection", false).get<bool>();
    const Tensor wq = G("pair", shared ? "weight" : "wq"), wk = G("pair", shared ? "weight" : "wk");
    // heads: the listed heads carry the gate, their parameter rows in head order; a head without it
    // has M = 1 (α = 0 there), its G unused.
    const nlohmann::json listed = ref_option(pg, "heads", "all");
    std::vector<std::int64_t> carried;
    for (std::int64_t n = 0; n < H; ++n)
      if (listed.is_string() || std::find(listed.begin(), listed.end(), n) != listed.end()) carried.push_back(n);
    auto row_of = [&](std::int64_t n) {
      return static_cast<std::int64_t>(std::find(carried.begin(), carried.end(), n) - carried.begin());
    };
    const Tensor qn = ref_gate_input(pg, q), kn = ref_gate_input(pg, k);
    auto head_term = [&](const Tensor& x, const Tensor& w, std::int64_t n) {  // [B, 1, T]: x_n · w_row(n)
      return ops::sum(
          ops::slice(x, 1, n, n + 1) * ops::reshape(ops::slice(w, 0, row_of(n), row_of(n) + 1), {1, 1, 1, d}), {3});
    };
    // groups: head n takes the sums over its group's heads, and its group's bias.
    const std::int64_t groups = ref_option(pg, "groups", 1).get<std::int64_t>();
    std::vector<Tensor> ga, gb;
    std::vector<double> alpha_mask;
    for (std::int64_t n = 0; n < H; ++n) {
      const bool has = std::find(carried.begin(), carried.end(), n) != carried.end();
      alpha_mask.push_back(has ? 1.0 : 0.0);
      if (!has) {
        ga.push_back(Tensor::zeros({B, 1, T}, h.dtype()));
        gb.push_back(Tensor::zeros({B, 1, T}, h.dtype()));
        continue;
      }
      const std::int64_t g0 = n - n % groups, unit = row_of(g0) / groups;
      Tensor sa = head_term(qn, wq, g0), sb = head_term(kn, wk, g0);
      for (std::int64_t m = g0 + 1; m < g0 + groups; ++m) {
        sa = sa + head_term(qn, wq, m);
        sb = sb + head_term(kn, wk, m);
      }
      ga.push_back(sa + ops::reshape(ops::slice(G("pair", "bias"), 0, unit, unit + 1), {1, 1, 1}));
      gb.push_back(sb);
    }
    const Tensor a = ops::concat(ga, 1), b = ops::concat(gb, 1);
    const Tensor u = ops::mul_scalar(ops::unsqueeze(a, 3) + ops::unsqueeze(b, 2), inv_tau);
    g.pair_g =
        pg.activation == "softplus" ? host_map(u, [](double x) { return std::log1p(std::exp(x)); }) : ops::sigmoid(u);
    if (ref_option(pg, "hard", false).get<bool>()) {
      const double theta = ref_option(pg, "hard_threshold", 0.5).get<double>();
      g.pair_g = host_map(g.pair_g, [&](double x) { return x > theta ? 1.0 : 0.0; });
    }
    // A ramp r: α(rG + 1 − r) + 1 − α = (αr)G + 1 − αr; per head [1, H, 1, 1], 0 without the gate.
    g.pair_alpha = ops::mul_scalar(ops::sigmoid(G("pair", "alpha")), ref_ramp(pg, step)) *
                   Tensor::from(alpha_mask, {1, H, 1, 1}, h.dtype());
  }
  // rope: the attention's q, k are rotated; the gates read them as they were (pair's a and b, the
  // context gate's q).
  const Tensor qa = c.rope() ? rotated(q) : q, ka = c.rope() ? rotated(k) : k;
  Tensor yh;
  if (has("routed")) {
    const models::GateConfig& rg = gates.at("routed");
    const std::vector<std::int64_t> windows = rg.int_list_option("windows");
    const std::int64_t E = static_cast<std::int64_t>(windows.size()), top_k = rg.int_option("top_k");
    Tensor z = ops::linear(h, G("routed", "weight"), G("routed", "bias"));
    Tensor r = ops::softmax(z);
    std::vector<double> zv = z.to_vector(), mask(zv.size(), 0.0);
    for (std::int64_t t = 0; t < B * T; ++t) {
      std::vector<std::int64_t> order(static_cast<std::size_t>(E));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](std::int64_t e1, std::int64_t e2) {
        return zv[static_cast<std::size_t>(t * E + e1)] > zv[static_cast<std::size_t>(t * E + e2)];
      });
      for (std::int64_t s = 0; s < top_k; ++s)
        mask[static_cast<std::size_t>(t * E + order[static_cast<std::size_t>(s)])] = 1;
    }
    Tensor kept = r * Tensor::from(mask, z.shape(), z.dtype());
    // top_k 1: the chosen expert keeps its probability (Switch); top_k ≥ 2: renormalised.
    Tensor rt = top_k == 1 ? kept : kept / ops::sum(kept, {2}, true);
    for (std::int64_t e = 0; e < E; ++e) {
      Tensor ye = naive_attention(qa, ka, v, g, windows[static_cast<std::size_t>(e)]) *
                  ops::reshape(ops::slice(rt, 2, e, e + 1), {B, 1, T, 1});
      yh = yh.defined() ? yh + ye : ye;
    }
    // The ramp blends the mixture in from the plain causal attention.
    const double ramp = ref_ramp(rg, step);
    if (ramp < 1.0) yh = yh * ramp + naive_attention(qa, ka, v, g, 0) * (1.0 - ramp);
  } else {
    yh = naive_attention(qa, ka, v, g, 0);
  }
  if (has("context")) {
    // Per head: [q_n; y_n] → g (d values, or 1 headwise), mixed in on the listed heads only.
    const models::GateConfig& cg = gates.at("context");
    const nlohmann::json listed = ref_option(cg, "heads", "all");
    std::vector<Tensor> out;
    for (std::int64_t n = 0; n < H; ++n) {
      Tensor qn = ops::slice(q, 1, n, n + 1), yn = ops::slice(yh, 1, n, n + 1);
      bool carried = listed.is_string();
      for (const auto& e : listed.is_string() ? nlohmann::json::array() : listed) carried = carried || e == n;
      if (carried) {
        Tensor gate = gate_of("context", ops::concat({qn, yn}, 3));
        yn = gate * yn + (ops::neg(gate) + 1.0) * qn;
      }
      out.push_back(yn);
    }
    yh = ops::concat(out, 1);
  }
  Tensor y = unheads(yh);
  if (has("output")) {
    const models::GateConfig& og = gates.at("output");
    const bool headwise = og.string_option("granularity") == "headwise";
    Tensor gate = ref_per_head(og, gate_of("output", h), H, headwise ? 1 : d, 1.0);
    if (headwise)
      y = ops::reshape(ops::reshape(y, {B, T, H, d}) * ops::reshape(gate, {B, T, H, 1}), {B, T, C});
    else
      y = y * gate;
  }
  return ops::linear(y, P("proj.weight"), P("proj.bias"));
}

inline Tensor reference_logits(GPT& m, const Tensor& idx) {
  const ModelConfig& c = m.config();
  const std::int64_t T = idx.size(1);
  Tensor x = ops::embedding(m.parameter("wte.weight"), idx);
  if (c.learned_positions()) x = x + ops::embedding(m.parameter("wpe.weight"), Tensor::arange(T));
  for (std::int64_t i = 0; i < c.n_layer; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    auto P = [&](const std::string& n) { return m.parameter(p + n); };
    x = x + reference_attention(m, i, ops::layer_norm(x, P("ln1.weight"), P("ln1.bias"), 1e-5));
    Tensor h = ops::layer_norm(x, P("ln2.weight"), P("ln2.bias"), 1e-5);
    x = x + ops::linear(ops::gelu(ops::linear(h, P("mlp.fc.weight"), P("mlp.fc.bias"))), P("mlp.proj.weight"),
                        P("mlp.proj.bias"));
  }
  x = ops::layer_norm(x, m.parameter("ln_f.weight"), m.parameter("ln_f.bias"), 1e-5);
  return ops::linear(x, m.parameter("wte.weight"));
}

// The model's logits against the reference's, with the gates pushed away from their neutral start.
inline void expect_matches_reference(const ModelConfig& c) {
  GPT model(c, 11);
  perturb_gate_parameters(model, 5);
  model.eval();
  Tensor idx = tokens(2, 6, c.vocab_size, 3);
  NoGradGuard no_grad;
  EXPECT_TRUE(all_close(model.forward(idx).logits, reference_logits(model, idx), 1e-9, 1e-9));
}

}  // namespace gattn::test
