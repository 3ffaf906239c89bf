// matmul (batched, with transposes) and linear, forward and backward, all through cpu::gemm /
// cpu::batched_gemm: every product is a BLAS call with transpose flags, never a transposed copy.
#include "ops/matmul.h"

#include "ops/autocast.h"
#include "ops/common.h"
#include "ops/cpu/bias_gelu.h"
#include "ops/cpu/gemm.h"
#include "ops/unary.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/elementwise.h"
#include "ops/cuda/gemm.h"
#include "ops/cuda/gemm_lt.h"
#include "ops/cuda/host_util.h"
#include "ops/cuda/reduce.h"
#include "ops/cuda/unary.h"
#endif

namespace gattn::ops {

namespace {

// matmul's dtypes: f32/f64 on the CPU; f32 (TF32 tensor cores unless switched off) or bf16 (f32
// accumulation) on CUDA.
void check_matmul_operand(const Tensor& t, const char* op) {
  if (t.defined() && t.device() == Device::cuda && t.dtype() == DType::bf16) return;
  check_floating_any_device(t, op);
}

// Whether a product of these operands runs as mixed precision: f32 tensors on the GPU inside a bf16
// AutocastScope. Its operands are then cast to bf16 and its result stays f32 (GemmType::bf16_f32out).
bool autocast_product(const Tensor& a) {
  return a.device() == Device::cuda && a.dtype() == DType::f32 && autocast_bf16();
}

// A GEMM operand as the product reads it: a bf16 copy under mixed precision, else the tensor itself.
Tensor gemm_operand(const Tensor& t, bool mixed) { return mixed ? t.detach().to(DType::bf16) : t; }

// For i < batch: C_i = op(X_i) op(Y_i) (cpu::batched_gemm's contract) on C's device. With X and Y
// in bf16 and C in f32 this is mixed precision's product.
void batched_product(std::int64_t batch, bool tx, bool ty, std::int64_t M, std::int64_t N, std::int64_t K,
                     const Tensor& X, std::int64_t sx, const Tensor& Y, std::int64_t sy, Tensor& C, std::int64_t sc) {
#ifdef GATTN_WITH_CUDA
  if (C.device() == Device::cuda) {
    const cuda::GemmType type = X.dtype() == DType::f32    ? cuda::GemmType::f32
                                : C.dtype() == DType::bf16 ? cuda::GemmType::bf16
                                                           : cuda::GemmType::bf16_f32out;
    cuda::batched_gemm(type, batch, tx, ty, M, N, K, X.raw_data(), sx, Y.raw_data(), sy, C.raw_data(), sc,
                       cuda::stream());
    return;
  }
#endif
  dispatch_float(C.dtype(), "matmul", [&]<class T>() {
    cpu::batched_gemm<T>(batch, tx, ty, M, N, K, X.data<T>(), sx, Y.data<T>(), sy, C.data<T>(), sc);
  });
}

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
  common_device(op, {a, b});
  check_matmul_operand(a, op);
  check_matmul_operand(b, op);
  check_same_dtype(a, b, op);
  if (a.dim() < 2 || b.dim() < 2)
    throw ShapeError(std::string(op) + ": " + operands_str(a, b, ta, tb) +
                     ": both operands need at least 2 dimensions");
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
                       shape_str(batch_a) + " and " + shape_str(batch_b) +
                       " (b must be 2-D or have a's batch dimensions)");
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

Tensor matmul(const Tensor& a_in, const Tensor& b_in, bool trans_a, bool trans_b) {
  const MatmulDims d = matmul_dims(a_in, b_in, trans_a, trans_b);
  // Under mixed precision the product (and its backward) reads bf16 copies; those are also what
  // the backward keeps, at half the memory of the f32 operands.
  const bool mixed = autocast_product(a_in);
  const Tensor a = gemm_operand(a_in, mixed), b = gemm_operand(b_in, mixed);
  const DType out_type = a_in.dtype();
  Tensor out = Tensor::empty(d.out_shape, out_type, a.device());
  const std::int64_t sa = d.M * d.K, sb = d.shared_b ? 0 : d.K * d.N, sg = d.M * d.N;
  batched_product(d.batch, trans_a, trans_b, d.M, d.N, d.K, a, sa, b, sb, out, sg);
  return autograd::record("matmul", out, {a_in, b_in},
                          [a = a.detach(), b = b.detach(), d, trans_a, trans_b, out_type](
                              const Tensor& g_in, const std::vector<bool>& needs) {
                            // g in the operands' type (bf16 under mixed precision); the gradients in the inputs' type.
                            const Tensor g = g_in.dtype() == a.dtype() ? g_in : g_in.to(a.dtype());
                            const std::int64_t sa = d.M * d.K, sb = d.shared_b ? 0 : d.K * d.N, sg = d.M * d.N;
                            Tensor da, db;
                            if (needs[0]) {
                              da = Tensor::empty(a.shape(), out_type, a.device());
                              if (!trans_a)  // dA_i [M, K] = g_i · op(B_i)ᵀ
                                batched_product(d.batch, false, !trans_b, d.M, d.K, d.N, g, sg, b, sb, da, sa);
                              else  // A_i is op(A_i)ᵀ, so dA_i [K, M] = (g_i · op(B_i)ᵀ)ᵀ = op(B_i) · g_iᵀ
                                batched_product(d.batch, trans_b, true, d.K, d.M, d.N, b, sb, g, sg, da, sa);
                            }
                            if (needs[1]) {
                              db = Tensor::empty(b.shape(), out_type, b.device());
                              // For a shared 2-D B the per-batch gradients are summed (stride 0 output).
                              const std::int64_t sdb = d.shared_b ? 0 : d.K * d.N;
                              if (!trans_b)  // dB_i [K, N] = op(A_i)ᵀ · g_i
                                batched_product(d.batch, !trans_a, false, d.K, d.N, d.M, a, sa, g, sg, db, sdb);
                              else  // dB_i [N, K] = (op(A_i)ᵀ · g_i)ᵀ = g_iᵀ · op(A_i)
                                batched_product(d.batch, true, trans_a, d.N, d.K, d.M, g, sg, a, sa, db, sdb);
                            }
                            return std::vector<Tensor>{da, db};
                          });
}

namespace {

// What linear's forward and backward share: the checked problem [rows, in] · [out, in]ᵀ.
struct LinearDims {
  std::int64_t rows = 0, in_f = 0, out_f = 0;
  Shape out_shape;
};

LinearDims check_linear(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  common_device(op, {x, weight, bias});
  check_floating_any_device(x, op);
  check_floating_any_device(weight, op);
  check_same_dtype(x, weight, op);
  const std::string name = op;
  if (x.dim() < 1) throw ShapeError(name + ": input " + shape_str(x.shape()) + " needs at least 1 dimension");
  if (weight.dim() != 2)
    throw ShapeError(name + ": input " + shape_str(x.shape()) + " and weight " + shape_str(weight.shape()) +
                     ": weight must be 2-D [out, in]");
  LinearDims d;
  d.out_f = weight.size(0);
  d.in_f = weight.size(1);
  if (x.size(-1) != d.in_f)
    throw ShapeError(name + ": input " + shape_str(x.shape()) + " and weight " + shape_str(weight.shape()) +
                     " have incompatible in-features " + std::to_string(x.size(-1)) + " and " + std::to_string(d.in_f));
  if (bias.defined()) {
    check_floating_any_device(bias, op);
    check_same_dtype(x, bias, op);
    if (bias.shape() != Shape{d.out_f})
      throw ShapeError(name + ": bias " + shape_str(bias.shape()) + " does not match weight " +
                       shape_str(weight.shape()) + " (expected [" + std::to_string(d.out_f) + "])");
  }
  if (x.device() == Device::cuda && x.dtype() != DType::f32)
    throw DTypeError(name + ": CUDA tensors must be f32, got " + std::string(dtype_name(x.dtype())));
  const Shape lead(x.shape().begin(), x.shape().end() - 1);
  d.rows = shape_numel(lead);
  d.out_shape = lead;
  d.out_shape.push_back(d.out_f);
  return d;
}

// y = x·Wᵀ + b into the preallocated y. On CUDA with `pre_gelu`, y = GELU(x·Wᵀ + b) and pre_gelu
// receives x·Wᵀ + b (cuBLASLt's GELU_AUX epilogue, or the plain GEMM plus the GELU kernel where
// cuBLASLt has no algorithm). xs and ws are the GEMM operands (bf16 under mixed precision).
void linear_forward_into(const LinearDims& d, const Tensor& xs, const Tensor& ws, const Tensor& bias, Tensor& y,
                         Tensor* pre_gelu) {
#ifdef GATTN_WITH_CUDA
  if (y.device() == Device::cuda) {
    const cuda::GemmType type = xs.dtype() == DType::bf16 ? cuda::GemmType::bf16_f32out : cuda::GemmType::f32;
    auto* py = static_cast<float*>(y.raw_data());
    const auto* pb = bias.defined() ? static_cast<const float*>(bias.raw_data()) : nullptr;
    float* pre = pre_gelu ? static_cast<float*>(pre_gelu->raw_data()) : nullptr;
    cuda::LinearEpilogue epi{pb, pre_gelu != nullptr, pre};
    if (cuda::linear_lt(type, d.rows, d.out_f, d.in_f, xs.raw_data(), ws.raw_data(), epi, py, cuda::stream())) return;
    // No cuBLASLt algorithm for this problem: prefill the bias, GEMM with beta 1, GELU separately.
    float* target = pre ? pre : py;
    if (pb) cuda::fill_rows_f32(target, d.rows, d.out_f, pb, cuda::stream());
    cuda::gemm(type, false, true, d.rows, d.out_f, d.in_f, 1.0f, xs.raw_data(), d.in_f, ws.raw_data(), d.in_f,
               pb ? 1.0f : 0.0f, target, d.out_f, cuda::stream());
    if (pre) cuda::unary_forward_f32(cuda::UnaryOp::gelu, pre, py, d.rows * d.out_f, cuda::stream());
    return;
  }
#endif
  (void)pre_gelu;  // CPU callers compose GELU from ops::gelu
  dispatch_float(y.dtype(), "linear", [&]<class T>() {
    T* py = y.data<T>();
    // y = bias (broadcast over rows), then y = x · Wᵀ + 1·y in the same GEMM.
    if (bias.defined()) cpu::fill_rows<T>(py, d.rows, d.out_f, bias.data<T>());
    cpu::gemm<T>(false, true, d.rows, d.out_f, d.in_f, T(1), xs.data<T>(), d.in_f, ws.data<T>(), d.in_f,
                 bias.defined() ? T(1) : T(0), py, d.out_f);
  });
}

// With X = x flattened to [rows, in] and G = g as [rows, out]: dX = G · W [rows, in]; dW = Gᵀ · X
// [out, in] (one GEMM over all rows); db_j = Σ_i G_ij. x and w are the saved GEMM operands.
std::vector<Tensor> linear_backward(const LinearDims& d, const Tensor& x, const Tensor& w, bool mixed, const Tensor& g,
                                    const std::vector<bool>& needs) {
  const std::int64_t rows = d.rows, in_f = d.in_f, out_f = d.out_f;
  Tensor dx, dw, db;
#ifdef GATTN_WITH_CUDA
  if (x.device() == Device::cuda) {
    // Mixed precision: G rounded to bf16 for the two products (f32 results); db sums the f32 G.
    const cuda::GemmType type = mixed ? cuda::GemmType::bf16_f32out : cuda::GemmType::f32;
    const Tensor gs = mixed ? g.to(DType::bf16) : g;
    if (needs[0]) {
      dx = Tensor::empty(x.shape(), DType::f32, x.device());
      cuda::gemm(type, false, false, rows, in_f, out_f, 1.0f, gs.raw_data(), out_f, w.raw_data(), in_f, 0.0f,
                 dx.raw_data(), in_f, cuda::stream());
    }
    if (needs[1]) {
      dw = Tensor::empty(w.shape(), DType::f32, w.device());
      cuda::gemm(type, true, false, out_f, in_f, rows, 1.0f, gs.raw_data(), out_f, x.raw_data(), in_f, 0.0f,
                 dw.raw_data(), in_f, cuda::stream());
    }
    if (needs.size() > 2 && needs[2]) {
      db = Tensor::empty({out_f}, g.dtype(), g.device());
      cuda::sum_blocks_f32(static_cast<const float*>(g.raw_data()), static_cast<float*>(db.raw_data()), 1, rows, out_f,
                           1.0, cuda::stream());
    }
    return {dx, dw, db};
  }
#endif
  (void)mixed;
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
  return {dx, dw, db};
}

// linear_gelu on the CPU: the GEMM into pre-activations, then bias and GELU in one pass
// (cpu::bias_gelu_forward, which also keeps tanh(u) for the backward); backward GELU' and the bias
// gradient in one pass, then linear's products.
Tensor linear_gelu_cpu(const LinearDims& d, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  Tensor pre = Tensor::empty(d.out_shape, x.dtype());
  Tensor t = Tensor::empty(d.out_shape, x.dtype());
  Tensor y = Tensor::empty(d.out_shape, x.dtype());
  dispatch_float(x.dtype(), "linear_gelu", [&]<class T>() {
    cpu::gemm<T>(false, true, d.rows, d.out_f, d.in_f, T(1), x.data<T>(), d.in_f, weight.data<T>(), d.in_f, T(0),
                 pre.data<T>(), d.out_f);
    cpu::bias_gelu_forward<T>(pre.data<T>(), bias.defined() ? bias.data<T>() : nullptr, t.data<T>(), y.data<T>(),
                              d.rows, d.out_f);
  });
  return autograd::record(
      "linear_gelu", y, {x, weight, bias},
      [x = x.detach(), w = weight.detach(), pre, t, d](const Tensor& g, const std::vector<bool>& needs) {
        const bool want_db = needs.size() > 2 && needs[2];
        Tensor dpre = Tensor::empty(pre.shape(), pre.dtype());
        Tensor db = want_db ? Tensor::empty({d.out_f}, pre.dtype()) : Tensor();
        Tensor scratch =  // the bias gradient's per-chunk partial sums
            want_db ? Tensor::empty({cpu::bias_grad_chunks(d.rows) * d.out_f}, pre.dtype()) : Tensor();
        dispatch_float(pre.dtype(), "linear_gelu backward", [&]<class T>() {
          cpu::gelu_backward_bias<T>(g.data<T>(), pre.data<T>(), t.data<T>(), dpre.data<T>(),
                                     want_db ? db.data<T>() : nullptr, want_db ? scratch.data<T>() : nullptr, d.rows,
                                     d.out_f);
        });
        std::vector<Tensor> grads = linear_backward(d, x, w, false, dpre, {needs[0], needs[1]});  // dx, dw
        grads.resize(3);
        grads[2] = db;
        return grads;
      });
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const LinearDims d = check_linear("linear", x, weight, bias);
  Tensor y = Tensor::empty(d.out_shape, x.dtype(), x.device());
  // Mixed precision: bf16 copies of x and W feed the GEMM (and are what backward keeps); y, the
  // bias and every gradient stay f32.
  const bool mixed = autocast_product(x);
  const Tensor xs = gemm_operand(x, mixed), ws = gemm_operand(weight, mixed);
  linear_forward_into(d, xs, ws, bias, y, nullptr);
  return autograd::record(
      "linear", y, {x, weight, bias},
      [x = xs.detach(), w = ws.detach(), d, mixed](const Tensor& g, const std::vector<bool>& needs) {
        return linear_backward(d, x, w, mixed, g, needs);
      });
}

Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const LinearDims d = check_linear("linear_gelu", x, weight, bias);
  if (x.device() != Device::cuda) return linear_gelu_cpu(d, x, weight, bias);
#ifdef GATTN_WITH_CUDA
  const bool mixed = autocast_product(x);
  const Tensor xs = gemm_operand(x, mixed), ws = gemm_operand(weight, mixed);
  Tensor y = Tensor::empty(d.out_shape, DType::f32, x.device());
  Tensor pre = Tensor::empty(d.out_shape, DType::f32, x.device());  // x·Wᵀ + b, saved for GELU'
  linear_forward_into(d, xs, ws, bias, y, &pre);
  return autograd::record(
      "linear_gelu", y, {x, weight, bias},
      [x = xs.detach(), w = ws.detach(), pre, d, mixed](const Tensor& g, const std::vector<bool>& needs) {
        // Through GELU first (dpre = g · GELU'(pre)), then linear's backward.
        Tensor dpre = Tensor::empty(pre.shape(), DType::f32, pre.device());
        cuda::unary_backward_f32(cuda::UnaryOp::gelu, static_cast<const float*>(g.raw_data()),
                                 static_cast<const float*>(pre.raw_data()), static_cast<float*>(dpre.raw_data()),
                                 pre.numel(), cuda::stream());
        return linear_backward(d, x, w, mixed, dpre, needs);
      });
#else
  return gelu(linear(x, weight, bias));
#endif
}

}  // namespace gattn::ops
