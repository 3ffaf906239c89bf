// The fused attention op: argument checks, output allocation, the kernel calls and the autograd
// record (one node, four outputs: y, row entropy, modulation entropy, modulation sum).
#include "ops/attention/attention.h"

#include <cmath>

#include "core/autograd/node.h"
#include "ops/attention/attention_args.h"
#include "ops/attention/cpu/flash_attention.h"
#include "ops/attention/cuda_attention.h"
#include "ops/common.h"

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
  modulation.merge(o.modulation);
  if (modulation_by_head.size() < o.modulation_by_head.size()) modulation_by_head.resize(o.modulation_by_head.size());
  for (std::size_t h = 0; h < o.modulation_by_head.size(); ++h) modulation_by_head[h].merge(o.modulation_by_head[h]);
  pruned_tiles += o.pruned_tiles;
  visited_tiles += o.visited_tiles;
}

namespace {

// Everything the backward needs, captured detached (no reference cycle through the outputs).
struct SavedAttention {
  Tensor q, k, v, row_bias, col_bias, modulation_row, modulation_col;
  double alpha = 0;
  Tensor alpha_by_head;  // [H] when α is per head (then `alpha` is unused), else undefined
  Tensor active;         // i32 [B, Tq] or undefined
  Tensor out, lse, row_entropy, row_asum;
  AttentionOptions options;
  double inv_tau = 1;
  double hard_threshold = std::numeric_limits<double>::quiet_NaN();  // NaN: soft modulation
  bool noise = false;
  GeneratorState noise_state;
  bool softplus = false;
  double dropout = 0;
  GeneratorState dropout_state;
};

template <class T>
cpu::FlashAttentionParams<T> make_params(const SavedAttention& s) {
  cpu::FlashAttentionParams<T> p;
  p.B = s.q.size(0);
  p.H = s.q.size(1);
  p.H_kv = s.k.size(1);
  p.Tq = s.q.size(2);
  p.Tk = s.k.size(2);
  p.d = s.q.size(3);
  p.causal = s.options.causal;
  p.window = s.options.window;
  p.scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(p.d)));
  p.q = s.q.data<T>();
  p.k = s.k.data<T>();
  p.v = s.v.data<T>();
  if (s.row_bias.defined()) p.row_bias = s.row_bias.data<T>();
  if (s.col_bias.defined()) p.col_bias = s.col_bias.data<T>();
  if (s.modulation_row.defined()) {
    p.modulation_row = s.modulation_row.data<T>();
    p.modulation_col = s.modulation_col.data<T>();
    p.alpha = static_cast<T>(s.alpha);
    if (s.alpha_by_head.defined()) p.alpha_by_head = s.alpha_by_head.data<T>();
    p.inv_tau = static_cast<T>(s.inv_tau);
    p.hard = !std::isnan(s.hard_threshold);
    if (p.hard) p.hard_threshold = static_cast<T>(s.hard_threshold);
    p.noise = s.noise;
    p.noise_seed = s.noise_state.seed;
    p.noise_stream = s.noise_state.stream;
    p.noise_offset = s.noise_state.offset;
    p.softplus = s.softplus;
    p.dropout = static_cast<T>(s.dropout);
    p.dropout_seed = s.dropout_state.seed;
    p.dropout_stream = s.dropout_state.stream;
    p.dropout_offset = s.dropout_state.offset;
  }
  if (s.active.defined()) p.active = s.active.data<std::int32_t>();
  p.prune_threshold = s.options.prune_threshold;
  return p;
}

template <class T>
T* ptr_or_null(Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}
template <class T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

void check_attention_args(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms,
                          const AttentionOptions& options, const AttentionDTypes& dtypes) {
  const std::string op = "flash_attention";
  for (const Tensor* t : {&q, &k, &v}) {
    if (!t->defined()) throw ValueError(op + ": undefined tensor argument");
    if (!dtypes.allowed(t->dtype())) throw DTypeError(op + ": q, k, v must be " + dtypes.words + ", got " + t->str());
  }
  check_same_dtype(q, k, op.c_str());
  check_same_dtype(q, v, op.c_str());
  if (q.dim() != 4) throw ShapeError(op + ": q must be [B, H, Tq, d], got " + shape_str(q.shape()));
  // k and v have one shape, with q's B and d, H_kv heads dividing H (grouped-query attention; H_kv
  // = H without grouping) and a length Tk that may differ from Tq (cross-attention).
  const std::string shapes =
      "q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", v " + shape_str(v.shape());
  if (k.dim() != 4 || k.shape() != v.shape() || k.size(0) != q.size(0) || k.size(3) != q.size(3))
    throw ShapeError(op + ": k and v must be [B, H_kv, Tk, d], one shape with q's B and d, got " + shapes);
  if (k.size(1) == 0 ? q.size(1) != 0 : q.size(1) % k.size(1) != 0)
    throw ShapeError(op + ": k and v have " + std::to_string(k.size(1)) + " heads, which must divide q's " +
                     std::to_string(q.size(1)) + " (each key/value head serves an equal group of query heads), got " +
                     shapes);
  if (q.size(2) == 0 || k.size(2) == 0 || q.size(3) == 0)
    throw ShapeError(op + ": empty sequence or head dim in q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()));
  if (options.window < 0) throw ValueError(op + ": window must be >= 0, got " + std::to_string(options.window));
  if (!options.causal && options.window != 0)
    throw ValueError(op + ": window " + std::to_string(options.window) +
                     " needs causal attention (a window is a causal mask); set window 0 with causal false");
  if (options.causal && q.size(2) != k.size(2))
    throw ValueError(op + ": a causal mask needs as many queries as keys, got Tq " + std::to_string(q.size(2)) +
                     " and Tk " + std::to_string(k.size(2)) + " (set causal false for cross-attention)");
  check_active_queries(options.active_queries, q, op.c_str());
  if (!(options.prune_threshold >= 0.0 && options.prune_threshold < 1.0))
    throw ValueError(op + ": prune_threshold must be in [0, 1), got " + std::to_string(options.prune_threshold));
  if (options.prune_threshold > 0.0 && !options.causal)
    throw ValueError(op + ": prune_threshold needs causal attention (its bound uses each row's own key)");
  auto check_term = [&](const Tensor& t, const Shape& want, const char* name) {
    if (!t.defined()) return;
    if (!dtypes.allowed(t.dtype()))
      throw DTypeError(op + ": " + name + " must be " + dtypes.words + ", got " + t.str());
    if (dtypes.terms_match_q) check_same_dtype(q, t, op.c_str());
    if (t.shape() != want)
      throw ShapeError(op + ": " + name + " has shape " + shape_str(t.shape()) + ", expected " + shape_str(want) +
                       " for q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()));
  };
  // Every term is per query head, whatever the key/value heads.
  const Shape rows{q.size(0), q.size(1), q.size(2)}, cols{q.size(0), q.size(1), k.size(2)};
  check_term(terms.row_bias, rows, "row_bias");
  check_term(terms.col_bias, cols, "col_bias");
  check_term(terms.modulation_row, rows, "modulation_row");
  check_term(terms.modulation_col, cols, "modulation_col");
  // α: one for every head, or one per query head.
  const Shape one_alpha{1}, head_alpha{q.size(1)};
  const Tensor& alpha = terms.modulation_alpha;
  if (alpha.defined() && alpha.shape() != one_alpha && alpha.shape() != head_alpha)
    throw ShapeError(op + ": modulation_alpha has shape " + shape_str(alpha.shape()) + ", expected [1] or " +
                     shape_str(head_alpha) + " (one α, or one per query head) for q " + shape_str(q.shape()));
  check_term(alpha, alpha.defined() ? alpha.shape() : one_alpha, "modulation_alpha");
  const bool modulated =
      terms.modulation_row.defined() || terms.modulation_col.defined() || terms.modulation_alpha.defined();
  if (modulated &&
      (!terms.modulation_row.defined() || !terms.modulation_col.defined() || !terms.modulation_alpha.defined()))
    throw ValueError(op + ": the modulation needs modulation_row, modulation_col and modulation_alpha together");
  if (options.modulation_entropy && !modulated)
    throw ValueError(op + ": modulation_entropy asked without modulation terms");
  if (options.modulation_sum && !modulated) throw ValueError(op + ": modulation_sum asked without modulation terms");
  if (modulated && terms.modulation_softplus && options.modulation_entropy)
    throw ValueError(op + ": modulation_entropy means nothing for a softplus modulation (its values exceed 1)");
  if (modulated && terms.modulation_softplus && options.prune_threshold > 0.0)
    throw ValueError(op + ": prune_threshold needs a modulation at most 1 (its bound), not a softplus one");
  if (!(terms.modulation_dropout >= 0.0 && terms.modulation_dropout < 1.0))
    throw ValueError(op + ": modulation_dropout must be in [0, 1), got " + std::to_string(terms.modulation_dropout));
  if (modulated && terms.modulation_dropout > 0.0 && !terms.modulation_dropout_noise)
    throw ValueError(op + ": modulation_dropout needs its random source (modulation_dropout_noise)");
  if (modulated && !(terms.modulation_temperature > 0))
    throw ValueError(op + ": modulation temperature must be > 0, got " + std::to_string(terms.modulation_temperature));
}

std::vector<Tensor> attention_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms) {
  const Tensor alpha = terms.modulation_row.defined() ? terms.modulation_alpha : Tensor();
  return {q, k, v, terms.row_bias, terms.col_bias, terms.modulation_row, terms.modulation_col, alpha};
}

AttentionNeeds attention_needs(const std::vector<bool>& needs) {
  AttentionNeeds n;
  n.q = needs[0];
  n.k = needs[1];
  n.v = needs[2];
  n.row_bias = needs[3];
  n.col_bias = needs[4];
  n.modulation_row = needs[5];
  n.modulation_col = needs[6];
  n.modulation_alpha = needs[7];
  return n;
}

void check_active_queries(const Tensor& active, const Tensor& q, const char* op) {
  if (!active.defined()) return;
  const Shape want{q.size(0), q.size(2)};
  if (active.dtype() != DType::i32 || active.shape() != want || active.device() != q.device())
    throw ValueError(std::string(op) + ": active_queries must be an i32 [B, Tq] = " + shape_str(want) +
                     " tensor on q's device (" + device_name(q.device()) + "), got " + active.str() + " on " +
                     device_name(active.device()));
}

AttentionResult flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms,
                                const AttentionOptions& options) {
  const char* op = "flash_attention";
  // CUDA tensors: the fused CUDA kernels or the composed attention (ops/attention/cuda_attention.h), with
  // their own dtype rules (bf16 allowed there). active_queries is checked against q's device below.
  if (common_device(op, {q, k, v, terms.row_bias, terms.col_bias, terms.modulation_row, terms.modulation_col,
                         terms.modulation_alpha}) != Device::cpu)
    return cuda_attention(q, k, v, terms, options);
  static const AttentionDTypes cpu_dtypes{[](DType t) { return t == DType::f32 || t == DType::f64; }, "f32 or f64",
                                          true};
  check_attention_args(q, k, v, terms, options, cpu_dtypes);
  const bool modulated = terms.modulation_row.defined();
  const Shape row_shape{q.size(0), q.size(1), q.size(2)};
  SavedAttention s;
  s.q = q.detach();
  s.k = k.detach();
  s.v = v.detach();
  s.row_bias = terms.row_bias.defined() ? terms.row_bias.detach() : Tensor();
  s.col_bias = terms.col_bias.defined() ? terms.col_bias.detach() : Tensor();
  if (modulated) {
    s.modulation_row = terms.modulation_row.detach();
    s.modulation_col = terms.modulation_col.detach();
    if (terms.modulation_alpha.numel() == 1)
      s.alpha = terms.modulation_alpha.item();
    else
      s.alpha_by_head = terms.modulation_alpha.detach();
    s.inv_tau = 1.0 / terms.modulation_temperature;
    s.hard_threshold = terms.modulation_hard_threshold;
    if (terms.modulation_noise) {
      s.noise = true;
      s.noise_state = terms.modulation_noise->state();
      // One word per (b, h, i, j) entry, skipped rows included: reserve them so the next draw starts after.
      s.noise_state.offset = terms.modulation_noise->reserve(static_cast<std::uint64_t>(q.size(0) * q.size(1)) *
                                                             static_cast<std::uint64_t>(q.size(2) * k.size(2)));
    }
    s.softplus = terms.modulation_softplus;
    if (terms.modulation_dropout > 0.0) {
      // Its own B·H·Tq·Tk words, reserved after the noise's (the same generator may serve both).
      s.dropout = terms.modulation_dropout;
      s.dropout_state = terms.modulation_dropout_noise->state();
      s.dropout_state.offset = terms.modulation_dropout_noise->reserve(
          static_cast<std::uint64_t>(q.size(0) * q.size(1)) * static_cast<std::uint64_t>(q.size(2) * k.size(2)));
    }
  }
  if (options.active_queries.defined()) s.active = options.active_queries.detach();
  s.options = options;
  s.options.stats = nullptr;
  s.options.active_queries = Tensor();  // kept once, in s.active

  const std::int64_t B = q.size(0), H = q.size(1), BH = B * H, Tn = q.size(2);
  const bool want_entropy = options.entropy_output || options.stats;
  AttentionResult result;
  Tensor out = Tensor::empty(q.shape(), q.dtype());
  Tensor lse = Tensor::empty(row_shape, q.dtype());
  Tensor row_entropy = want_entropy ? Tensor::empty(row_shape, q.dtype()) : Tensor();
  Tensor row_asum = want_entropy ? Tensor::empty(row_shape, q.dtype()) : Tensor();
  Tensor row_sink = options.stats ? Tensor::empty(row_shape, q.dtype()) : Tensor();
  Tensor mod_entropy = options.modulation_entropy ? Tensor::empty({B, H}, q.dtype()) : Tensor();
  Tensor mod_sum = options.modulation_sum ? Tensor::empty({B, H}, q.dtype()) : Tensor();
  const std::int64_t n_qt = (Tn + cpu::kAttnTileQ - 1) / cpu::kAttnTileQ;
  std::vector<GateMoments> moments(options.stats && modulated ? static_cast<std::size_t>(BH * n_qt) : 0);
  std::int64_t tile_counts[2] = {0, 0};  // pruned, visited

  dispatch_float(q.dtype(), op, [&]<class T>() {
    cpu::FlashForwardOutputs<T> o;
    o.out = out.data<T>();
    o.lse = lse.data<T>();
    o.row_entropy = ptr_or_null<T>(row_entropy);
    o.row_asum = ptr_or_null<T>(row_asum);
    o.row_sink = ptr_or_null<T>(row_sink);
    o.modulation_entropy = ptr_or_null<T>(mod_entropy);
    o.modulation_sum = ptr_or_null<T>(mod_sum);
    o.modulation_moments = moments.empty() ? nullptr : moments.data();
    o.tile_counts = options.stats ? tile_counts : nullptr;
    cpu::flash_attention_forward(make_params<T>(s), o);
  });

  if (options.stats) {
    AttentionStats st;
    std::vector<double> ent = row_entropy.to_vector(), sink = row_sink.to_vector();
    const std::int32_t* active = s.active.defined() ? s.active.data<std::int32_t>() : nullptr;
    const std::int64_t w = options.window;
    // Causal: queries i ≥ 1 (query 0 sees key 0 alone); not causal: every query.
    const std::int64_t first_sink_row = options.causal ? 1 : 0;
    for (std::int64_t bh = 0; bh < BH; ++bh)
      for (std::int64_t i = 0; i < Tn; ++i) {
        if (active && active[(bh / H) * Tn + i] == 0) continue;  // a skipped row is not counted
        st.entropy_sum += ent[static_cast<std::size_t>(bh * Tn + i)];
        ++st.entropy_count;
        if (i >= first_sink_row) {  // key 0 may be outside a window
          st.sink_sum += (w == 0 || i < w) ? sink[static_cast<std::size_t>(bh * Tn + i)] : 0.0;
          ++st.sink_count;
        }
      }
    if (modulated) st.modulation_by_head.resize(static_cast<std::size_t>(H));
    for (std::size_t t = 0; t < moments.size(); ++t) {  // partial t is (bh, query tile) = (t / n_qt, t % n_qt)
      st.modulation.merge(moments[t]);
      st.modulation_by_head[static_cast<std::size_t>(static_cast<std::int64_t>(t) / n_qt % H)].merge(moments[t]);
    }
    st.pruned_tiles = tile_counts[0];
    st.visited_tiles = tile_counts[1];
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
  result.modulation_entropy = mod_entropy;
  result.modulation_sum = mod_sum;

  // The outputs present, in order: y, then the row entropy, modulation entropy and modulation sum
  // when asked for; a slot is an output's place in that list (−1 when absent).
  std::vector<Tensor> outputs{out};
  auto slot_of = [&outputs](const Tensor& t) {
    if (!t.defined()) return -1;
    outputs.push_back(t);
    return static_cast<int>(outputs.size()) - 1;
  };
  const int entropy_slot = slot_of(result.row_entropy);
  const int mod_slot = slot_of(result.modulation_entropy);
  const int sum_slot = slot_of(result.modulation_sum);

  std::vector<Tensor> inputs = attention_inputs(q, k, v, terms);
  auto backward = [s, entropy_slot, mod_slot, sum_slot](const std::vector<Tensor>& grads,
                                                        const std::vector<bool>& needs) {
    const AttentionNeeds want = attention_needs(needs);
    const Tensor& d_out = grads[0];
    auto grad_of = [&grads](int slot) { return slot >= 0 ? grads[static_cast<std::size_t>(slot)] : Tensor(); };
    const Tensor d_entropy = grad_of(entropy_slot), d_mod = grad_of(mod_slot), d_sum = grad_of(sum_slot);
    const Shape& qs = s.q.shape();
    const Shape& ks = s.k.shape();
    const Shape rs{qs[0], qs[1], qs[2]}, cs{qs[0], qs[1], ks[2]};  // the terms are per query head
    auto maybe = [&](bool wanted, const Shape& shape) { return wanted ? Tensor::empty(shape, s.q.dtype()) : Tensor(); };
    Tensor dq = maybe(want.q, qs), dk = maybe(want.k, ks), dv = maybe(want.v, ks);
    Tensor drb = maybe(want.row_bias, rs), dcb = maybe(want.col_bias, cs);
    Tensor dmr = maybe(want.modulation_row, rs), dmc = maybe(want.modulation_col, cs);
    Tensor d_alpha;
    dispatch_float(s.q.dtype(), "flash_attention backward", [&]<class T>() {
      cpu::FlashBackwardInputs<T> in;
      in.out = s.out.data<T>();
      in.lse = s.lse.data<T>();
      in.d_out = ptr_or_null<T>(d_out);
      in.d_row_entropy = ptr_or_null<T>(d_entropy);
      in.row_entropy = ptr_or_null<T>(s.row_entropy);
      in.row_asum = ptr_or_null<T>(s.row_asum);
      in.d_modulation_entropy = ptr_or_null<T>(d_mod);
      in.d_modulation_sum = ptr_or_null<T>(d_sum);
      std::vector<T> alpha_partial(want.modulation_alpha ? static_cast<std::size_t>(qs[0] * qs[1]) : 0);
      cpu::FlashBackwardOutputs<T> g;
      g.dq = ptr_or_null<T>(dq);
      g.dk = ptr_or_null<T>(dk);
      g.dv = ptr_or_null<T>(dv);
      g.d_row_bias = ptr_or_null<T>(drb);
      g.d_col_bias = ptr_or_null<T>(dcb);
      g.d_modulation_row = ptr_or_null<T>(dmr);
      g.d_modulation_col = ptr_or_null<T>(dmc);
      g.d_alpha_partial = alpha_partial.empty() ? nullptr : alpha_partial.data();
      cpu::flash_attention_backward(make_params<T>(s), in, g);
      if (want.modulation_alpha) {
        // The partials are per (b, h): summed in order into α's one value, or into each head's.
        const std::int64_t heads = s.alpha_by_head.defined() ? qs[1] : 1;
        std::vector<double> total(static_cast<std::size_t>(heads), 0.0);
        for (std::size_t bh = 0; bh < alpha_partial.size(); ++bh)
          total[bh % static_cast<std::size_t>(heads)] += static_cast<double>(alpha_partial[bh]);
        d_alpha = Tensor::from(total, {heads}, s.q.dtype());
      }
    });
    return std::vector<Tensor>{dq, dk, dv, drb, dcb, dmr, dmc, d_alpha};  // in attention_inputs' order
  };
  std::vector<Tensor> recorded = autograd::record_multi("flash_attention", outputs, inputs, backward);
  result.out = recorded[0];
  if (entropy_slot >= 0) result.row_entropy = recorded[static_cast<std::size_t>(entropy_slot)];
  if (mod_slot >= 0) result.modulation_entropy = recorded[static_cast<std::size_t>(mod_slot)];
  if (sum_slot >= 0) result.modulation_sum = recorded[static_cast<std::size_t>(sum_slot)];
  return result;
}

}  // namespace gattn::ops
