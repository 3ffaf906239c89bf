// matmul (batched, with transposes) and linear, forward and backward, all through cpu::gemm /
// cpu::batched_gemm: every product is a BLAS call with transpose flags, never a transposed copy.
#include "ops/matmul.h"

#include "ops/common.h"
#include "ops/cpu/gemm.h"

namespace gattn::ops {

namespace {

// The problem matmul(a, b, ta, tb) describes: `batch` products of op(a_i) [M, K] by op(b_i) [K, N].
struct MatmulDims {
  std::int64_t batch = 1, M = 0, N = 0, K = 0;
  bool shared_b = true;  // b is 2-D and used by every batch
  Shape out_shape;
};

std::string operands_str(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  std::string s = "shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape());
  if (ta || tb) s += std::string(" (") + (ta ? "trans_a" : "") + (ta && tb ? ", " : "") + (tb ? "trans_b" : "") + ")";
  return s;
}

MatmulDims matmul_dims(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const char* op = "matmul";
  check_floating(a, op);
  check_floating(b, op);
  check_same_dtype(a, b, op);
  if (a.dim() < 2 || b.dim() < 2)
    throw ShapeError(std::string(op) + ": " + operands_str(a, b, ta, tb) + ": both operands need at least 2 dimensions");
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const std::size_t ra = sa.size(), rb = sb.size();
  MatmulDims d;
  d.shared_b = rb == 2;
  Shape batch_a(sa.begin(), sa.end() - 2);
  if (!d.shared_b) {
    Shape batch_b(sb.begin(), sb.end() - 2);
    if (batch_a != batch_b)
      throw ShapeError(std::string(op) + ": " + operands_str(a, b, ta, tb) + " have mismatched batch dimensions " +
                       shape_str(batch_a) + " and " + shape_str(batch_b) + " (b must be 2-D or have a's batch dimensions)");
  }
  d.M = ta ? sa[ra - 1] : sa[ra - 2];
  const std::int64_t ka = ta ? sa[ra - 2] : sa[ra - 1];
  const std::int64_t kb = tb ? sb[rb - 1] : sb[rb - 2];
  d.N = tb ? sb[rb - 2] : sb[rb - 1];
  if (ka != kb)
    throw ShapeError(std::string(op) + ": " + operands_str(a, b, ta, tb) + " have incompatible inner dimensions " +
                     std::to_string(ka) + " and " + std::to_string(kb));
  d.K = ka;
  d.batch = shape_numel(batch_a);
  d.out_shape = batch_a;
  d.out_shape.push_back(d.M);
  d.out_shape.push_back(d.N);
  return d;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  const MatmulDims d = matmul_dims(a, b, trans_a, trans_b);
  Tensor out = Tensor::empty(d.out_shape, a.dtype());
  const std::int64_t sa = d.M * d.K, sb = d.shared_b ? 0 : d.K * d.N, sg = d.M * d.N;
  dispatch_float(a.dtype(), "matmul", [&]<class T>() {
    cpu::batched_gemm<T>(d.batch, trans_a, trans_b, d.M, d.N, d.K, a.data<T>(), sa, b.data<T>(), sb, out.data<T>(), sg);
  });
  return autograd::record(
      "matmul", out, {a, b},
      [a = a.detach(), b = b.detach(), d, trans_a, trans_b](const Tensor& g, const std::vector<bool>& needs) {
        const std::int64_t sa = d.M * d.K, sb = d.shared_b ? 0 : d.K * d.N, sg = d.M * d.N;
        Tensor da, db;
        if (needs[0]) da = Tensor::empty(a.shape(), a.dtype());
        if (needs[1]) db = Tensor::empty(b.shape(), b.dtype());
        dispatch_float(a.dtype(), "matmul backward", [&]<class T>() {
          const T* pa = a.data<T>();
          const T* pb = b.data<T>();
          const T* pg = g.data<T>();
          if (needs[0]) {
            if (!trans_a)  // dA_i [M, K] = g_i · op(B_i)ᵀ
              cpu::batched_gemm<T>(d.batch, false, !trans_b, d.M, d.K, d.N, pg, sg, pb, sb, da.data<T>(), sa);
            else  // A_i is op(A_i)ᵀ, so dA_i [K, M] = (g_i · op(B_i)ᵀ)ᵀ = op(B_i) · g_iᵀ
              cpu::batched_gemm<T>(d.batch, trans_b, true, d.K, d.M, d.N, pb, sb, pg, sg, da.data<T>(), sa);
          }
          if (needs[1]) {
            // For a shared 2-D B the per-batch gradients are summed (stride 0 output).
            const std::int64_t sdb = d.shared_b ? 0 : d.K * d.N;
            if (!trans_b)  // dB_i [K, N] = op(A_i)ᵀ · g_i
              cpu::batched_gemm<T>(d.batch, !trans_a, false, d.K, d.N, d.M, pa, sa, pg, sg, db.data<T>(), sdb);
            else  // dB_i [N, K] = (op(A_i)ᵀ · g_i)ᵀ = g_iᵀ · op(A_i)
              cpu::batched_gemm<T>(d.batch, true, trans_a, d.N, d.K, d.M, pg, sg, pa, sa, db.data<T>(), sdb);
          }
        });
        return std::vector<Tensor>{da, db};
      });
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const char* op = "linear";
  check_floating(x, op);
  check_floating(weight, op);
  check_same_dtype(x, weight, op);
  if (x.dim() < 1) throw ShapeError("linear: input " + shape_str(x.shape()) + " needs at least 1 dimension");
  if (weight.dim() != 2)
    throw ShapeError("linear: input " + shape_str(x.shape()) + " and weight " + shape_str(weight.shape()) +
                     ": weight must be 2-D [out, in]");
  const std::int64_t out_f = weight.size(0), in_f = weight.size(1);
  if (x.size(-1) != in_f)
    throw ShapeError("linear: input " + shape_str(x.shape()) + " and weight " + shape_str(weight.shape()) +
                     " have incompatible in-features " + std::to_string(x.size(-1)) + " and " + std::to_string(in_f));
  if (bias.defined()) {
    check_floating(bias, op);
    check_same_dtype(x, bias, op);
    if (bias.shape() != Shape{out_f})
      throw ShapeError("linear: bias " + shape_str(bias.shape()) + " does not match weight " + shape_str(weight.shape()) +
                       " (expected [" + std::to_string(out_f) + "])");
  }
  const Shape lead(x.shape().begin(), x.shape().end() - 1);
  const std::int64_t rows = shape_numel(lead);
  Shape out_shape = lead;
  out_shape.push_back(out_f);
  Tensor y = Tensor::empty(out_shape, x.dtype());
  dispatch_float(x.dtype(), op, [&]<class T>() {
    T* py = y.data<T>();
    // y = bias (broadcast over rows), then y = x · Wᵀ + 1·y in the same GEMM.
    if (bias.defined()) cpu::fill_rows<T>(py, rows, out_f, bias.data<T>());
    cpu::gemm<T>(false, true, rows, out_f, in_f, T(1), x.data<T>(), in_f, weight.data<T>(), in_f,
                 bias.defined() ? T(1) : T(0), py, out_f);
  });
  return autograd::record(
      "linear", y, {x, weight, bias},
      [x = x.detach(), w = weight.detach(), rows, in_f, out_f](const Tensor& g, const std::vector<bool>& needs) {
        // With X = x flattened to [rows, in] and G = g as [rows, out]:
        // dX = G · W [rows, in]; dW = Gᵀ · X [out, in] (one GEMM over all rows); db_j = Σ_i G_ij.
        Tensor dx, dw, db;
        dispatch_float(x.dtype(), "linear backward", [&]<class T>() {
          const T* pg = g.data<T>();
          if (needs[0]) {
            dx = Tensor::empty(x.shape(), x.dtype());
            cpu::gemm<T>(false, false, rows, in_f, out_f, T(1), pg, out_f, w.data<T>(), in_f, T(0), dx.data<T>(), in_f);
          }
          if (needs[1]) {
            dw = Tensor::empty(w.shape(), w.dtype());
            cpu::gemm<T>(true, false, out_f, in_f, rows, T(1), pg, out_f, x.data<T>(), in_f, T(0), dw.data<T>(), in_f);
          }
          if (needs.size() > 2 && needs[2]) {
            db = Tensor::empty({out_f}, g.dtype());
            cpu::column_sums<T>(pg, rows, out_f, db.data<T>());
          }
        });
        return std::vector<Tensor>{dx, dw, db};
      });
}

}  // namespace gattn::ops
