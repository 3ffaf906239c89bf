// The fused gated attention op: argument checks, output allocation, the kernel calls and the
// autograd record (one node, three outputs: y, row entropy, pair gate entropy).
#include "ops/attention.h"

#include <cmath>

#include "framework/autograd/node.h"
#include "ops/common.h"
#include "ops/cpu/flash_attention.h"
#include "ops/cuda_attention.h"

namespace gattn::ops {

double GateMoments::std() const {
  if (count == 0) return 0.0;
  double m = mean();
  double var = sum_sq / static_cast<double>(count) - m * m;
  return var > 0 ? std::sqrt(var) : 0.0;
}

void AttentionStats::merge(const AttentionStats& o) {
  entropy_sum += o.entropy_sum;
  entropy_count += o.entropy_count;
  sink_sum += o.sink_sum;
  sink_count += o.sink_count;
  pair_gate.merge(o.pair_gate);
}

namespace {

void check_term(const Tensor& t, const Shape& want, const Tensor& q, const char* name) {
  if (!t.defined()) return;
  check_floating(t, "flash_attention");
  check_same_dtype(q, t, "flash_attention");
  if (t.shape() != want)
    throw ShapeError(std::string("flash_attention: ") + name + " has shape " + shape_str(t.shape()) + ", expected " +
                     shape_str(want) + " for q " + shape_str(q.shape()));
}

// Everything the backward needs, captured detached (no reference cycle through the outputs).
struct SavedAttention {
  Tensor q, k, v, key_bias, forget_cum, pair_row, pair_col;
  double alpha = 0;
  Tensor out, lse, row_entropy, row_asum;
  AttentionOptions options;
  double inv_tau = 1;
  bool noise = false;
  GeneratorState noise_state;
};

template <class T>
cpu::FlashAttentionParams<T> make_params(const SavedAttention& s) {
  cpu::FlashAttentionParams<T> p;
  p.B = s.q.size(0);
  p.H = s.q.size(1);
  p.T_len = s.q.size(2);
  p.d = s.q.size(3);
  p.window = s.options.window;
  p.scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(p.d)));
  p.q = s.q.data<T>();
  p.k = s.k.data<T>();
  p.v = s.v.data<T>();
  if (s.key_bias.defined()) p.key_bias = s.key_bias.data<T>();
  if (s.forget_cum.defined()) p.forget_cum = s.forget_cum.data<T>();
  if (s.pair_row.defined()) {
    p.pair_row = s.pair_row.data<T>();
    p.pair_col = s.pair_col.data<T>();
    p.alpha = static_cast<T>(s.alpha);
    p.inv_tau = static_cast<T>(s.inv_tau);
    p.noise = s.noise;
    p.noise_seed = s.noise_state.seed;
    p.noise_stream = s.noise_state.stream;
    p.noise_offset = s.noise_state.offset;
  }
  return p;
}

template <class T> T* ptr_or_null(Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }
template <class T> const T* ptr_or_null(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }

}  // namespace

AttentionResult flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionGateTerms& gate,
                                const AttentionOptions& options) {
  const char* op = "flash_attention";
  // CUDA tensors: the fused CUDA kernels or the composed attention (ops/cuda_attention.h), with
  // their own dtype rules (bf16 allowed there).
  if (common_device(op, {q, k, v, gate.key_bias, gate.forget_cum, gate.pair_row, gate.pair_col, gate.pair_alpha}) !=
      Device::cpu)
    return cuda_attention(q, k, v, gate, options);
  check_floating(q, op);
  check_floating(k, op);
  check_floating(v, op);
  check_same_dtype(q, k, op);
  check_same_dtype(q, v, op);
  if (q.dim() != 4) throw ShapeError("flash_attention: q must be [B, H, T, d], got " + shape_str(q.shape()));
  if (k.shape() != q.shape() || v.shape() != q.shape())
    throw ShapeError("flash_attention: q, k, v shapes differ: " + shape_str(q.shape()) + ", " + shape_str(k.shape()) + ", " +
                     shape_str(v.shape()));
  if (q.size(2) == 0 || q.size(3) == 0) throw ShapeError("flash_attention: empty sequence or head dim in " + shape_str(q.shape()));
  if (options.window < 0) throw ValueError("flash_attention: window must be >= 0, got " + std::to_string(options.window));
  const Shape row_shape{q.size(0), q.size(1), q.size(2)};
  check_term(gate.key_bias, row_shape, q, "key_bias");
  check_term(gate.forget_cum, row_shape, q, "forget_cum");
  check_term(gate.pair_row, row_shape, q, "pair_row");
  check_term(gate.pair_col, row_shape, q, "pair_col");
  const bool pair = gate.pair_row.defined() || gate.pair_col.defined() || gate.pair_alpha.defined();
  if (pair && (!gate.pair_row.defined() || !gate.pair_col.defined() || !gate.pair_alpha.defined()))
    throw ValueError("flash_attention: pair needs pair_row, pair_col and pair_alpha together");
  if (pair) check_term(gate.pair_alpha, Shape{1}, q, "pair_alpha");
  if (options.pair_gate_entropy && !pair) throw ValueError("flash_attention: pair_gate_entropy asked without pair terms");
  if (pair && !(gate.pair_temperature > 0))
    throw ValueError("flash_attention: pair temperature must be > 0, got " + std::to_string(gate.pair_temperature));
  SavedAttention s;
  s.q = q.detach();
  s.k = k.detach();
  s.v = v.detach();
  s.key_bias = gate.key_bias.defined() ? gate.key_bias.detach() : Tensor();
  s.forget_cum = gate.forget_cum.defined() ? gate.forget_cum.detach() : Tensor();
  if (pair) {
    s.pair_row = gate.pair_row.detach();
    s.pair_col = gate.pair_col.detach();
    s.alpha = gate.pair_alpha.item();
    s.inv_tau = 1.0 / gate.pair_temperature;
    if (gate.pair_noise) {
      s.noise = true;
      s.noise_state = gate.pair_noise->state();
      // One word per (b, h, i, j) pair: reserve them so the next draw starts after.
      s.noise_state.offset = gate.pair_noise->reserve(static_cast<std::uint64_t>(q.size(0) * q.size(1)) *
                                                      static_cast<std::uint64_t>(q.size(2) * q.size(2)));
    }
  }
  s.options = options;
  s.options.stats = nullptr;

  const std::int64_t BH = q.size(0) * q.size(1), Tn = q.size(2);
  const bool want_entropy = options.entropy_output || options.stats;
  AttentionResult result;
  Tensor out = Tensor::empty(q.shape(), q.dtype());
  Tensor lse = Tensor::empty(row_shape, q.dtype());
  Tensor row_entropy = want_entropy ? Tensor::empty(row_shape, q.dtype()) : Tensor();
  Tensor row_asum = want_entropy ? Tensor::empty(row_shape, q.dtype()) : Tensor();
  Tensor row_sink = options.stats ? Tensor::empty(row_shape, q.dtype()) : Tensor();
  Tensor gate_entropy = options.pair_gate_entropy ? Tensor::empty({q.size(0), q.size(1)}, q.dtype()) : Tensor();
  const std::int64_t n_qt = (Tn + cpu::kAttnTileQ - 1) / cpu::kAttnTileQ;
  std::vector<GateMoments> moments(options.stats && pair ? static_cast<std::size_t>(BH * n_qt) : 0);

  dispatch_float(q.dtype(), op, [&]<class T>() {
    cpu::FlashForwardOutputs<T> o;
    o.out = out.data<T>();
    o.lse = lse.data<T>();
    o.row_entropy = ptr_or_null<T>(row_entropy);
    o.row_asum = ptr_or_null<T>(row_asum);
    o.row_sink = ptr_or_null<T>(row_sink);
    o.gate_entropy = ptr_or_null<T>(gate_entropy);
    o.gate_moments = moments.empty() ? nullptr : moments.data();
    cpu::flash_attention_forward(make_params<T>(s), o);
  });

  if (options.stats) {
    AttentionStats st;
    std::vector<double> ent = row_entropy.to_vector(), sink = row_sink.to_vector();
    const std::int64_t w = options.window;
    for (std::int64_t bh = 0; bh < BH; ++bh)
      for (std::int64_t i = 0; i < Tn; ++i) {
        st.entropy_sum += ent[static_cast<std::size_t>(bh * Tn + i)];
        ++st.entropy_count;
        if (i >= 1) {  // SPEC §4: queries i ≥ 1 (A_00 = 1 always); key 0 may be outside a window
          st.sink_sum += (w == 0 || i < w) ? sink[static_cast<std::size_t>(bh * Tn + i)] : 0.0;
          ++st.sink_count;
        }
      }
    for (const GateMoments& g : moments) st.pair_gate.merge(g);
    options.stats->merge(st);
  }

  s.out = out.detach();
  s.lse = lse;
  if (options.entropy_output) {
    s.row_entropy = row_entropy;
    s.row_asum = row_asum;
  }
  result.out = out;
  result.row_entropy = options.entropy_output ? row_entropy : Tensor();
  result.gate_entropy = gate_entropy;

  std::vector<Tensor> outputs{out};
  if (result.row_entropy.defined()) outputs.push_back(result.row_entropy);
  if (result.gate_entropy.defined()) outputs.push_back(result.gate_entropy);
  const int entropy_slot = result.row_entropy.defined() ? 1 : -1;
  const int gate_slot = result.gate_entropy.defined() ? static_cast<int>(outputs.size()) - 1 : -1;

  std::vector<Tensor> inputs{q, k, v, gate.key_bias, gate.forget_cum, gate.pair_row, gate.pair_col,
                             pair ? gate.pair_alpha : Tensor()};
  auto backward = [s, entropy_slot, gate_slot](const std::vector<Tensor>& grads, const std::vector<bool>& needs) {
    const Tensor& d_out = grads[0];
    const Tensor d_entropy = entropy_slot >= 0 ? grads[static_cast<std::size_t>(entropy_slot)] : Tensor();
    const Tensor d_gate = gate_slot >= 0 ? grads[static_cast<std::size_t>(gate_slot)] : Tensor();
    const Shape& qs = s.q.shape();
    const Shape rs{qs[0], qs[1], qs[2]};
    auto maybe = [&](std::size_t i, const Shape& shape) { return needs[i] ? Tensor::empty(shape, s.q.dtype()) : Tensor(); };
    Tensor dq = maybe(0, qs), dk = maybe(1, qs), dv = maybe(2, qs);
    Tensor dkb = maybe(3, rs), dfc = maybe(4, rs), dpr = maybe(5, rs), dpc = maybe(6, rs);
    Tensor d_alpha;
    dispatch_float(s.q.dtype(), "flash_attention backward", [&]<class T>() {
      cpu::FlashBackwardInputs<T> in;
      in.out = s.out.data<T>();
      in.lse = s.lse.data<T>();
      in.d_out = ptr_or_null<T>(d_out);
      in.d_row_entropy = ptr_or_null<T>(d_entropy);
      in.row_entropy = ptr_or_null<T>(s.row_entropy);
      in.row_asum = ptr_or_null<T>(s.row_asum);
      in.d_gate_entropy = ptr_or_null<T>(d_gate);
      std::vector<T> alpha_partial(needs[7] ? static_cast<std::size_t>(qs[0] * qs[1]) : 0);
      cpu::FlashBackwardOutputs<T> g;
      g.dq = ptr_or_null<T>(dq);
      g.dk = ptr_or_null<T>(dk);
      g.dv = ptr_or_null<T>(dv);
      g.d_key_bias = ptr_or_null<T>(dkb);
      g.d_forget_cum = ptr_or_null<T>(dfc);
      g.d_pair_row = ptr_or_null<T>(dpr);
      g.d_pair_col = ptr_or_null<T>(dpc);
      g.d_alpha_partial = alpha_partial.empty() ? nullptr : alpha_partial.data();
      cpu::flash_attention_backward(make_params<T>(s), in, g);
      if (needs[7]) {
        double total = 0;
        for (T x : alpha_partial) total += static_cast<double>(x);
        d_alpha = Tensor::full({1}, total, s.q.dtype());
      }
    });
    return std::vector<Tensor>{dq, dk, dv, dkb, dfc, dpr, dpc, d_alpha};
  };
  std::vector<Tensor> recorded = autograd::record_multi("flash_attention", outputs, inputs, backward);
  result.out = recorded[0];
  if (entropy_slot >= 0) result.row_entropy = recorded[static_cast<std::size_t>(entropy_slot)];
  if (gate_slot >= 0) result.gate_entropy = recorded[static_cast<std::size_t>(gate_slot)];
  return result;
}

}  // namespace gattn::ops
