// Cached attention (generation): argument checks and the CPU kernel call.
#include "ops/attention/cached_attention.h"

#include <cmath>
#include <string>

#include "ops/attention/cpu/cached_attention.h"
#include "ops/common.h"

namespace gattn::ops {

namespace {

constexpr const char* kOp = "cached_attention";

void check_input(const Tensor& t, const Shape& want, const Tensor& q, const char* name) {
  if (!t.defined()) return;
  check_floating(t, kOp);
  check_same_dtype(q, t, kOp);
  if (t.device() != Device::cpu) throw DeviceError(std::string(kOp) + ": " + name + " is not a CPU tensor");
  if (t.requires_grad())
    throw AutogradError(std::string(kOp) + ": " + name + " requires grad; cached attention is inference only");
  if (t.shape() != want)
    throw ShapeError(std::string(kOp) + ": " + name + " has shape " + shape_str(t.shape()) + ", expected " +
                     shape_str(want));
}

// An i32 CPU tensor of shape `want`, or undefined.
void check_index_input(const Tensor& t, const Shape& want, const char* name) {
  if (!t.defined()) return;
  if (t.dtype() != DType::i32 || t.device() != Device::cpu || t.shape() != want)
    throw ShapeError(std::string(kOp) + ": " + name + " must be an i32 CPU tensor " + shape_str(want) + ", got " +
                     t.str());
}

template <class T>
Tensor run(const CachedAttentionInputs& in) {
  const std::int64_t B = in.q.size(0), H = in.q.size(1), Tq = in.q.size(2), d = in.q.size(3);
  Tensor out = Tensor::empty({B, H, Tq, d}, in.q.dtype());
  cpu::CachedAttentionParams<T> p;
  std::vector<T> alpha_by_head;  // α per head in T, when given
  p.BH = B * H;
  p.group = in.k.size(1) > 0 ? H / in.k.size(1) : 1;
  p.Tq = Tq;
  p.length = in.length;
  p.capacity = in.k.size(2);
  p.d = d;
  p.window = in.window;
  p.scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(d)));
  p.q = in.q.data<T>();
  p.k = in.k.data<T>();
  p.v = in.v.data<T>();
  if (in.row_bias.defined()) p.row_bias = in.row_bias.data<T>();
  if (in.col_bias.defined()) p.col_bias = in.col_bias.data<T>();
  if (in.modulation_row.defined()) {
    p.modulation_row = in.modulation_row.data<T>();
    p.modulation_col = in.modulation_col.data<T>();
    p.alpha = static_cast<T>(in.modulation_alpha);
    if (!in.modulation_alpha_by_head.empty()) {
      alpha_by_head.assign(in.modulation_alpha_by_head.begin(), in.modulation_alpha_by_head.end());
      p.alpha_by_head = alpha_by_head.data();
      p.heads = H;
    }
    p.inv_tau = static_cast<T>(1.0 / in.modulation_temperature);
    p.hard = !std::isnan(in.modulation_hard_threshold);
    if (p.hard) p.hard_threshold = static_cast<T>(in.modulation_hard_threshold);
    p.softplus = in.modulation_softplus;
  }
  if (in.key_positions.defined()) p.key_positions = in.key_positions.data<std::int32_t>();
  p.top_k_keys = in.top_k_keys;
  if (in.skip_rows.defined()) p.skip_rows = in.skip_rows.data<std::int32_t>();
  Tensor accumulated = in.key_attention;  // a handle: the kernel adds into the caller's storage
  if (accumulated.defined()) p.key_attention = accumulated.data<T>();
  p.out = out.data<T>();
  cpu::cached_attention_forward(p);
  return out;
}

}  // namespace

Tensor cached_attention(const CachedAttentionInputs& in) {
  if (!in.q.defined() || !in.k.defined() || !in.v.defined())
    throw ValueError(std::string(kOp) + ": q, k and v must be defined");
  if (in.q.dim() != 4) throw ShapeError(std::string(kOp) + ": q must be [B, H, Tq, d], got " + shape_str(in.q.shape()));
  const std::int64_t B = in.q.size(0), H = in.q.size(1), Tq = in.q.size(2), d = in.q.size(3);
  // k and v: [B, H_kv, capacity, d], one shape, H_kv key/value heads each serving H / H_kv query heads.
  const std::string shapes =
      "q " + shape_str(in.q.shape()) + ", k " + shape_str(in.k.shape()) + ", v " + shape_str(in.v.shape());
  if (in.k.dim() != 4 || in.k.shape() != in.v.shape() || in.k.size(0) != B || in.k.size(3) != d)
    throw ShapeError(std::string(kOp) + ": k and v must be [B, H_kv, capacity, d], one shape with q's B and d, got " +
                     shapes);
  const std::int64_t H_kv = in.k.size(1), capacity = in.k.size(2);
  if (H_kv == 0 ? H != 0 : H % H_kv != 0)
    throw ShapeError(std::string(kOp) + ": k and v have " + std::to_string(H_kv) + " heads, which must divide q's " +
                     std::to_string(H) + " (each key/value head serves an equal group of query heads), got " + shapes);
  check_input(in.q, in.q.shape(), in.q, "q");
  check_input(in.k, {B, H_kv, capacity, d}, in.q, "k");
  check_input(in.v, {B, H_kv, capacity, d}, in.q, "v");
  if (Tq < 1 || in.length < Tq || in.length > capacity)
    throw ShapeError(std::string(kOp) + ": need 1 <= Tq <= length <= capacity, got Tq=" + std::to_string(Tq) +
                     " length=" + std::to_string(in.length) + " capacity=" + std::to_string(capacity));
  if (in.window < 0) throw ValueError(std::string(kOp) + ": window must be >= 0, got " + std::to_string(in.window));
  check_input(in.row_bias, {B, H, Tq}, in.q, "row_bias");
  check_input(in.col_bias, {B, H, capacity}, in.q, "col_bias");
  if (in.modulation_row.defined() != in.modulation_col.defined())
    throw ValueError(std::string(kOp) + ": modulation_row and modulation_col must be given together");
  check_input(in.modulation_row, {B, H, Tq}, in.q, "modulation_row");
  check_input(in.modulation_col, {B, H, capacity}, in.q, "modulation_col");
  if (!in.modulation_alpha_by_head.empty() && static_cast<std::int64_t>(in.modulation_alpha_by_head.size()) != H)
    throw ShapeError(std::string(kOp) + ": modulation_alpha_by_head has " +
                     std::to_string(in.modulation_alpha_by_head.size()) + " values, expected one per query head (" +
                     std::to_string(H) + ")");
  if (in.modulation_row.defined() && !(in.modulation_temperature > 0))
    throw ValueError(std::string(kOp) + ": modulation_temperature must be > 0");
  check_index_input(in.key_positions, {B, H, capacity}, "key_positions");
  check_index_input(in.skip_rows, {B, H, Tq}, "skip_rows");
  check_input(in.key_attention, {B, H, capacity}, in.q, "key_attention");
  if (in.top_k_keys < 0)
    throw ValueError(std::string(kOp) + ": top_k_keys must be >= 0, got " + std::to_string(in.top_k_keys));
  return in.q.dtype() == DType::f64 ? run<double>(in) : run<float>(in);
}

}  // namespace gattn::ops
