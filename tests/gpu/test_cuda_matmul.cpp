// cuBLAS matmul and linear against the CPU ops: every transpose combination, batched and shared
// operands, odd sizes; f32 with TF32 off within 1e-5, TF32 on and bf16 within their documented
// bounds. Skips without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cuda_test_util.h"
#include "ops/matmul.h"

namespace gattn {
namespace {

using test::cuda_matches_cpu;
using test::ExactF32;
using test::frand;
using test::Tolerance;

struct MatmulCase {
  Shape a, b;
  bool ta, tb;
};

const std::vector<MatmulCase> kCases = {{{1, 1}, {1, 1}, false, false},
                                        {{7, 33}, {33, 5}, false, false},
                                        {{33, 7}, {33, 5}, true, false},
                                        {{7, 33}, {5, 33}, false, true},
                                        {{33, 7}, {5, 33}, true, true},
                                        {{3, 17, 65}, {65, 9}, false, false},
                                        {{3, 65, 17}, {9, 65}, true, true},
                                        {{4, 17, 33}, {4, 33, 19}, false, false},
                                        {{4, 33, 17}, {4, 19, 33}, true, true},
                                        {{2, 3, 31, 16}, {2, 3, 31, 16}, false, true},
                                        {{2, 3, 31, 16}, {2, 3, 31, 16}, true, false},
                                        {{129, 257}, {257, 65}, false, false}};

TEST(CudaMatmul, MatchesCpuWithExactF32) {
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  std::uint64_t seed = 80;
  for (const MatmulCase& c : kCases) {
    const Tensor a = frand(c.a, ++seed), b = frand(c.b, ++seed);
    // Sums of up to 257 products of values in [-1, 1]: an absolute floor for results near 0.
    EXPECT_TRUE(cuda_matches_cpu([c](const auto& in) { return ops::matmul(in[0], in[1], c.ta, c.tb); }, {a, b},
                                 {1e-5, 1e-5}, {1e-5, 1e-5}))
        << shape_str(c.a) << (c.ta ? "ᵀ" : "") << " @ " << shape_str(c.b) << (c.tb ? "ᵀ" : "");
  }
}

TEST(CudaMatmul, Tf32StaysWithinItsBound) {
  GATTN_REQUIRE_DEVICE();
  // TF32 rounds each input to 10 mantissa bits (relative error ≤ 2^-11), so each of the K = 512
  // products of values in [-1, 1] is off by at most ~1e-3 and their sum by a few 1e-3 in practice
  // (random signs); the documented bound is |err| ≤ 2e-2 + 1e-2·|ref|. 1e-5 would fail here.
  const Tensor a = frand({64, 512}, 90), b = frand({512, 48}, 91);
  const Tensor got = ops::matmul(a.to(Device::cuda), b.to(Device::cuda));
  EXPECT_TRUE(test::all_close(got, ops::matmul(a, b), 2e-2, 1e-2));
}

TEST(CudaMatmul, Bf16OperandsAccumulateInF32) {
  GATTN_REQUIRE_DEVICE();
  // bf16 inputs carry 8 mantissa bits (relative rounding 2^-9 each); the products are summed in f32.
  // Compared with the f32 product of the same (rounded) values, only the output's bf16 rounding
  // remains: |err| ≤ 2^-8 relative, plus a small absolute floor for results near 0.
  const Tensor a = frand({33, 200}, 92).to(DType::bf16).to(DType::f32),
               b = frand({200, 17}, 93).to(DType::bf16).to(DType::f32);
  const Tensor got = ops::matmul(a.to(DType::bf16).to(Device::cuda), b.to(DType::bf16).to(Device::cuda));
  EXPECT_EQ(got.dtype(), DType::bf16);
  EXPECT_TRUE(test::all_close(got.to(Device::cpu).to(DType::f32), ops::matmul(a, b), 1e-2, 4e-3));
}

TEST(CudaMatmul, LinearMatchesCpuWithAndWithoutBias) {
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  for (const auto& [xs, out_f] :
       std::vector<std::pair<Shape, std::int64_t>>{{{1, 1}, 1}, {{7, 33}, 5}, {{2, 9, 65}, 130}, {{4097, 16}, 3}}) {
    const std::int64_t in_f = xs.back();
    const Tensor x = frand(xs, 94), w = frand({out_f, in_f}, 95), b = frand({out_f}, 96);
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::linear(in[0], in[1], in[2]); }, {x, w, b},
                                 {1e-5, 1e-5}, {2e-5, 1e-5}))
        << shape_str(xs) << " -> " << out_f;
    EXPECT_TRUE(
        cuda_matches_cpu([](const auto& in) { return ops::linear(in[0], in[1]); }, {x, w}, {1e-5, 1e-5}, {2e-5, 1e-5}))
        << shape_str(xs) << " -> " << out_f << " without bias";
  }
}

// linear_gelu: cuBLASLt's GELU_AUX(_BIAS) epilogue where out is a multiple of 8, the plain GEMM
// plus the GELU kernel elsewhere (out = 5, 130 % 8 = 2): both against the CPU's gelu(linear(...)).
// The epilogue's GELU must be the tanh approximation (ops::gelu, GPT-2's); the erf form differs
// by up to ~1e-3, which 1e-5 would catch.
TEST(CudaMatmul, LinearGeluMatchesTheCpuComposition) {
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  for (const auto& [xs, out_f] : std::vector<std::pair<Shape, std::int64_t>>{
           {{7, 33}, 5}, {{2, 9, 64}, 256}, {{2, 9, 65}, 130}, {{300, 48}, 3072}}) {
    const std::int64_t in_f = xs.back();
    const Tensor x = frand(xs, 97, -2, 2), w = frand({out_f, in_f}, 98), b = frand({out_f}, 99);
    // cuBLASLt's GELU epilogue is the tanh form, and the hardware may evaluate tanh with
    // tanh.approx.f32 (relative error up to 2^-10.99): GELU(z) = ½z(1 + tanh(u)) is then off by up to
    // ½|z|·2^-11 = |z|·2^-12. So the output's bound scales with the largest pre-activation; the
    // gradients use gattn's own GELU derivative on the exact saved pre-activation and keep theirs.
    auto out_tol = [&](const Tensor& bias) {
      double z_max = 0;
      for (double z : ops::linear(x, w, bias).to_vector()) z_max = std::max(z_max, std::abs(z));
      return Tolerance{1e-5 + z_max * 0x1p-12, 1e-5};
    };
    // dx sums out_f products: the CPU's GEMM (oneDNN) and the device's add them in different orders,
    // so the bound grows with that length (2.2e-5 apart at out_f = 3072 on values near 0.2).
    const Tolerance grad_tol{2e-5 + 1e-8 * static_cast<double>(out_f), 1e-5};
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::linear_gelu(in[0], in[1], in[2]); }, {x, w, b},
                                 out_tol(b), grad_tol))
        << shape_str(xs) << " -> " << out_f;
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::linear_gelu(in[0], in[1]); }, {x, w},
                                 out_tol(Tensor()), grad_tol))
        << shape_str(xs) << " -> " << out_f << " without bias";
  }
}

}  // namespace
}  // namespace gattn
