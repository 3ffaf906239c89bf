// flash_attention on CUDA tensors: argument checks, the choice between the fused kernels and the
// composed attention, and the fused path's autograd record (ops/attention/cuda_attention.h).
#include "ops/attention/cuda_attention.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/tensor/random.h"
#include "ops/attention/attention_args.h"
#include "ops/attention/composed_attention.h"
#include "ops/autocast.h"
#include "ops/common.h"
#include "ops/reduce.h"
#ifdef GATTN_WITH_CUDA
#include "core/cuda/copy.h"
#include "ops/attention/cuda/flash_attention.h"
#include "ops/cuda/host_util.h"
#include "ops/cuda/scratch.h"
#endif

namespace gattn::ops {

namespace {

constexpr const char* kOp = "flash_attention";

void check_args(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms,
                const AttentionOptions& options) {
  static const AttentionDTypes cuda_dtypes{[](DType t) { return t == DType::f32 || t == DType::bf16; }, "f32 or bf16",
                                           false};
  check_attention_args(q, k, v, terms, options, cuda_dtypes);
}

// x converted to dtype, with a gradient path back to x's dtype (Tensor::to records no history).
Tensor cast_with_grad(const Tensor& x, DType dtype) {
  if (!x.defined() || x.dtype() == dtype) return x;
  const DType from = x.dtype();
  return autograd::record("to_dtype", x.to(dtype), {x}, [from](const Tensor& g, const std::vector<bool>&) {
    return std::vector<Tensor>{g.to(from)};
  });
}

AttentionTerms terms_as(const AttentionTerms& terms, DType dtype) {
  AttentionTerms t = terms;
  t.row_bias = cast_with_grad(terms.row_bias, dtype);
  t.col_bias = cast_with_grad(terms.col_bias, dtype);
  t.modulation_row = cast_with_grad(terms.modulation_row, dtype);
  t.modulation_col = cast_with_grad(terms.modulation_col, dtype);
  t.modulation_alpha = cast_with_grad(terms.modulation_alpha, dtype);
  return t;
}

// bf16 inputs the fused kernels cannot take: the composed attention in f32, outputs back in bf16.
AttentionResult composed_from_bf16(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms,
                                   const AttentionOptions& options) {
  AttentionResult r = composed_attention(cast_with_grad(q, DType::f32), cast_with_grad(k, DType::f32),
                                         cast_with_grad(v, DType::f32), terms_as(terms, DType::f32), options);
  r.out = cast_with_grad(r.out, q.dtype());
  r.row_entropy = cast_with_grad(r.row_entropy, q.dtype());
  r.modulation_entropy = cast_with_grad(r.modulation_entropy, q.dtype());
  r.modulation_sum = cast_with_grad(r.modulation_sum, q.dtype());
  return r;
}

#ifdef GATTN_WITH_CUDA

// The kernels load q, k, v and d_out 16 bytes at a time (ops/attention/cuda/flash_mma.cuh, stage_rows).
bool aligned16(const Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.raw_data()) % 16 == 0; }

cuda::FlashElem elem_of(const Tensor& t) {
  return t.dtype() == DType::bf16 ? cuda::FlashElem::bf16 : cuda::FlashElem::f32;
}
// Device pointers for the kernels: kernel_data, never data(), which is the host's and refuses CUDA
// tensors (every fused call threw on a GPU before this).
float* f32_or_null(const Tensor& t) { return t.defined() ? t.kernel_data<float>() : nullptr; }

// What the backward needs, detached (no reference cycle through the outputs).
struct SavedFlash {
  Tensor q, k, v, row_bias, col_bias, modulation_row, modulation_col;  // bias and modulation terms f32
  Tensor alpha_by_head;                                                // f32 [H] when α is per head
  Tensor active;                                                       // active_queries: i32 [B, Tq] or undefined
  Tensor out, lse;
  Tensor row_entropy, row_asum;  // f32, with the entropy output only
  cuda::FlashParams params;      // pointers refreshed from the tensors above in backward
};

void set_pointers(cuda::FlashParams& p, const SavedFlash& s) {
  p.q = s.q.raw_data();
  p.k = s.k.raw_data();
  p.v = s.v.raw_data();
  p.row_bias = f32_or_null(s.row_bias);
  p.col_bias = f32_or_null(s.col_bias);
  p.modulation_row = f32_or_null(s.modulation_row);
  p.modulation_col = f32_or_null(s.modulation_col);
  p.alpha_by_head = f32_or_null(s.alpha_by_head);
  p.active = s.active.defined() ? s.active.kernel_data<std::int32_t>() : nullptr;
}

AttentionResult fused(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms_in,
                      const AttentionOptions& options) {
  const AttentionTerms terms = terms_as(terms_in, DType::f32);
  const bool modulated = terms.modulation_row.defined();
  const std::int64_t B = q.size(0), H = q.size(1), Tn = q.size(2), Tk = k.size(2), d = q.size(3), BH = B * H;
  const Shape row_shape{B, H, Tn};

  SavedFlash s;
  s.q = q.detach();
  s.k = k.detach();
  s.v = v.detach();
  if (terms.row_bias.defined()) s.row_bias = terms.row_bias.detach();
  if (terms.col_bias.defined()) s.col_bias = terms.col_bias.detach();
  if (options.active_queries.defined()) s.active = options.active_queries.detach();
  cuda::FlashParams& p = s.params;
  p.B = B;
  p.H = H;
  p.H_kv = k.size(1);
  p.Tq = Tn;
  p.Tk = Tk;
  p.d = d;
  p.causal = options.causal;
  p.window = options.window;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  p.elem = elem_of(q);
  p.prune_threshold = options.causal ? options.prune_threshold : 0.0;
  if (modulated) {
    s.modulation_row = terms.modulation_row.detach();
    s.modulation_col = terms.modulation_col.detach();
    if (terms.modulation_alpha.numel() == 1)
      p.alpha = static_cast<float>(terms.modulation_alpha.item());
    else
      s.alpha_by_head = terms.modulation_alpha.detach();
    p.inv_tau = static_cast<float>(1.0 / terms.modulation_temperature);
    p.hard = !std::isnan(terms.modulation_hard_threshold);
    if (p.hard) p.hard_threshold = static_cast<float>(terms.modulation_hard_threshold);
    if (terms.modulation_noise) {
      // Same words as the CPU op: B·H·Tq·Tk reserved, entry (bh, i, j) at offset + (bh·Tq + i)·Tk + j.
      const GeneratorState state = terms.modulation_noise->state();
      p.noise = true;
      p.noise_seed = state.seed;
      p.noise_stream = state.stream;
      p.noise_offset =
          terms.modulation_noise->reserve(static_cast<std::uint64_t>(BH) * static_cast<std::uint64_t>(Tn * Tk));
    }
    p.softplus = terms.modulation_softplus;
    if (terms.modulation_dropout > 0.0) {
      // Its own B·H·Tq·Tk words after the noise's, as the CPU op reserves them.
      const GeneratorState state = terms.modulation_dropout_noise->state();
      p.dropout = static_cast<float>(terms.modulation_dropout);
      p.dropout_seed = state.seed;
      p.dropout_stream = state.stream;
      p.dropout_offset =
          terms.modulation_dropout_noise->reserve(static_cast<std::uint64_t>(BH) * static_cast<std::uint64_t>(Tn * Tk));
    }
  }
  set_pointers(p, s);

  Tensor out = Tensor::empty(q.shape(), q.dtype(), Device::cuda);
  Tensor lse = Tensor::empty(row_shape, DType::f32, Device::cuda);
  Tensor row_entropy, row_asum, row_sink;
  cuda::FlashForwardOutputs o;
  o.out = out.raw_data();
  o.lse = lse.kernel_data<float>();
  const long long n_qb = cuda::flash_query_blocks(Tn);
  long long tile_counts[2] = {0, 0};  // pruned, visited
  std::vector<cuda::FlashMoments> moments;
  cuda::Scratch moments_dev(
      options.stats && modulated ? static_cast<std::size_t>(BH * n_qb) * sizeof(cuda::FlashMoments) : 0);
  if (options.stats || options.entropy_output) {
    row_entropy = Tensor::empty(row_shape, DType::f32, Device::cuda);
    row_asum = Tensor::empty(row_shape, DType::f32, Device::cuda);
    o.row_entropy = row_entropy.kernel_data<float>();
    o.row_asum = row_asum.kernel_data<float>();
  }
  Tensor sum_partial;  // [B, H, query blocks] of Σ G, with the modulation sum output
  if (options.modulation_sum) {
    sum_partial = Tensor::empty({B, H, n_qb}, DType::f32, Device::cuda);
    o.modulation_sum_partial = sum_partial.kernel_data<float>();
  }
  if (options.stats) {
    row_sink = Tensor::empty(row_shape, DType::f32, Device::cuda);
    o.row_sink = row_sink.kernel_data<float>();
    if (modulated) o.modulation_moments = moments_dev.as<cuda::FlashMoments>();
    o.tile_counts = tile_counts;
  }
  cuda::flash_attention_forward(p, o, cuda::stream());

  if (options.stats) {
    // Reduced on the device: two scalars cross to the host, not B·H·T values per layer.
    autograd::NoGradGuard no_grad;
    AttentionStats st;
    st.entropy_sum += sum(row_entropy).item();  // skipped rows hold 0
    st.sink_sum += sum(row_sink).item();        // 0 for i = 0 when causal, where key 0 is hidden and on skipped rows
    // The sink counts queries i ≥ 1 when causal (query 0 sees key 0 alone), every query when not.
    const std::int64_t first_sink_row = options.causal ? 1 : 0;
    if (s.active.defined()) {
      // Counts of the active rows (of every head): one small read of the [B, Tq] mask.
      const std::vector<double> active = s.active.to_vector();
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t i = 0; i < Tn; ++i)
          if (active[static_cast<std::size_t>(b * Tn + i)] != 0.0) {
            st.entropy_count += H;
            if (i >= first_sink_row) st.sink_count += H;
          }
    } else {
      st.entropy_count = BH * Tn;
      st.sink_count = BH * (Tn - first_sink_row);
    }
    if (modulated) {
      moments.resize(static_cast<std::size_t>(BH * n_qb));
      cuda::copy_bytes(moments.data(), Device::cpu, moments_dev.as<void>(), Device::cuda,
                       moments.size() * sizeof(cuda::FlashMoments));
      st.modulation_by_head.resize(static_cast<std::size_t>(H));
      for (std::size_t t = 0; t < moments.size(); ++t) {  // partial t is (bh, query block) = (t / n_qb, t % n_qb)
        const cuda::FlashMoments& m = moments[t];
        GateMoments g;
        g.sum = m.sum;
        g.sum_sq = m.sum_sq;
        g.count = m.count;
        g.below_0_1 = m.below_0_1;
        g.above_0_9 = m.above_0_9;
        st.modulation.merge(g);
        st.modulation_by_head[static_cast<std::size_t>(static_cast<long long>(t) / n_qb % H)].merge(g);
      }
    }
    st.pruned_tiles = tile_counts[0];
    st.visited_tiles = tile_counts[1];
    options.stats->merge(st);
  }

  s.out = out.detach();
  s.lse = lse;
  if (options.entropy_output) {
    s.row_entropy = row_entropy.detach();
    s.row_asum = row_asum;
  }
  Tensor mod_sum;
  if (options.modulation_sum) {
    autograd::NoGradGuard no_grad;
    mod_sum = sum(sum_partial, {2});  // [B, H], the blocks in a fixed order
  }
  // The outputs: y, then the row entropy and the modulation sum when asked for.
  std::vector<Tensor> outputs{out};
  if (options.entropy_output) outputs.push_back(row_entropy);
  if (options.modulation_sum) outputs.push_back(mod_sum);
  const int entropy_slot = options.entropy_output ? 1 : -1;
  const int sum_slot = options.modulation_sum ? static_cast<int>(outputs.size()) - 1 : -1;
  std::vector<Tensor> inputs = attention_inputs(q, k, v, terms);
  auto backward = [s, entropy_slot, sum_slot](const std::vector<Tensor>& grads, const std::vector<bool>& needs) {
    const AttentionNeeds want = attention_needs(needs);
    const Tensor& d_out_in = grads[0];
    auto grad_of = [&grads](int slot) {
      return slot >= 0 && grads[static_cast<std::size_t>(slot)].defined()
                 ? grads[static_cast<std::size_t>(slot)].to(DType::f32)
                 : Tensor();
    };
    const Tensor d_entropy = grad_of(entropy_slot), d_sum = grad_of(sum_slot);
    const Shape& qs = s.q.shape();
    const Shape& ks = s.k.shape();
    const Shape rs{qs[0], qs[1], qs[2]}, cs{qs[0], qs[1], ks[2]};  // the terms are per query head
    const DType io = s.q.dtype();
    Tensor d_out = d_out_in.defined() ? d_out_in.to(io) : Tensor::zeros(qs, io, Device::cuda);
    if (!aligned16(d_out)) d_out = d_out.clone();  // a view at an odd offset: a fresh, aligned copy
    Tensor dq = Tensor::empty(qs, io, Device::cuda), dk = Tensor::empty(ks, io, Device::cuda),
           dv = Tensor::empty(ks, io, Device::cuda);
    auto maybe = [&](bool wanted, const Shape& shape) {
      return wanted ? Tensor::empty(shape, DType::f32, Device::cuda) : Tensor();
    };
    Tensor drb = maybe(want.row_bias, rs), dcb = maybe(want.col_bias, cs);
    Tensor dmr = maybe(want.modulation_row, rs), dmc = maybe(want.modulation_col, cs);
    const std::int64_t n_kb = cuda::flash_key_blocks(ks[2]);
    Tensor alpha_partial =
        want.modulation_alpha ? Tensor::empty({qs[0] * qs[1] * n_kb}, DType::f32, Device::cuda) : Tensor();
    cuda::FlashParams p = s.params;
    set_pointers(p, s);
    cuda::FlashBackwardInputs in;
    in.out = s.out.raw_data();
    in.lse = s.lse.kernel_data<float>();
    in.d_out = d_out.raw_data();
    if (d_entropy.defined()) {
      in.d_row_entropy = d_entropy.kernel_data<float>();
      in.row_entropy = s.row_entropy.kernel_data<float>();
      in.row_asum = s.row_asum.kernel_data<float>();
    }
    if (d_sum.defined()) in.d_modulation_sum = d_sum.kernel_data<float>();
    cuda::FlashBackwardOutputs g;
    g.dq = dq.raw_data();
    g.dk = dk.raw_data();
    g.dv = dv.raw_data();
    g.d_row_bias = f32_or_null(drb);
    g.d_col_bias = f32_or_null(dcb);
    g.d_modulation_row = f32_or_null(dmr);
    g.d_modulation_col = f32_or_null(dmc);
    g.d_alpha_partial = f32_or_null(alpha_partial);
    cuda::flash_attention_backward(p, in, g, cuda::stream());
    Tensor d_alpha;
    if (want.modulation_alpha) {
      autograd::NoGradGuard no_grad;
      // The CUDA reduction's fixed tree: deterministic. Per (b, h, key block): into α's one value, or
      // into each head's.
      d_alpha = s.alpha_by_head.defined() ? sum(alpha_partial.alias(Shape{qs[0], qs[1], n_kb}), {0, 2})
                                          : sum(alpha_partial).alias(Shape{1});
    }
    // In attention_inputs' order.
    return std::vector<Tensor>{
        want.q ? dq : Tensor(), want.k ? dk : Tensor(), want.v ? dv : Tensor(), drb, dcb, dmr, dmc, d_alpha};
  };
  std::vector<Tensor> recorded = autograd::record_multi(kOp, outputs, inputs, backward);
  AttentionResult result;
  result.out = recorded[0];
  // The entropy and the sum in q's dtype, as the CPU op and the composed path give them (a no-op for f32).
  if (entropy_slot >= 0)
    result.row_entropy = cast_with_grad(recorded[static_cast<std::size_t>(entropy_slot)], q.dtype());
  if (sum_slot >= 0) result.modulation_sum = cast_with_grad(recorded[static_cast<std::size_t>(sum_slot)], q.dtype());
  return result;
}

#endif  // GATTN_WITH_CUDA

}  // namespace

bool cuda_attention_fused(const Tensor& q, const AttentionOptions& options) {
#ifdef GATTN_WITH_CUDA
  const bool bf16_products = q.dtype() == DType::bf16 || (q.dtype() == DType::f32 && autocast_bf16());
  return bf16_products && q.dim() == 4 && cuda::flash_head_dim_supported(q.size(3)) && !options.modulation_entropy;
#else
  (void)q;
  (void)options;
  return false;
#endif
}

AttentionResult cuda_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms,
                               const AttentionOptions& options) {
  check_args(q, k, v, terms, options);
#ifdef GATTN_WITH_CUDA
  if (cuda_attention_fused(q, options) && aligned16(q) && aligned16(k) && aligned16(v))
    return fused(q, k, v, terms, options);
#endif
  if (q.dtype() == DType::bf16) return composed_from_bf16(q, k, v, terms, options);
  return composed_attention(q, k, v, terms_as(terms, DType::f32), options);
}

}  // namespace gattn::ops
