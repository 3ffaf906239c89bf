// gradcheck implementation: one backward for the analytic gradient, two forwards per element for
// the numeric one.
#include "core/autograd/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/autograd/grad_mode.h"
#include "core/tensor/random.h"

namespace gattn::autograd {

namespace {
double weighted_sum(const Tensor& y, const std::vector<double>& w) {
  std::vector<double> v = y.to_vector();
  double s = 0;
  for (std::size_t i = 0; i < v.size(); ++i) s += v[i] * w[i];
  return s;
}
}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& opt, const std::vector<int>& no_grad_inputs) {
  GradcheckResult result;
  std::ostringstream report;
  std::vector<Tensor> xs;
  std::vector<bool> check(inputs.size(), false);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (is_floating(in.dtype())) {
      Tensor x = in.to(DType::f64).clone();
      bool differentiate =
          std::find(no_grad_inputs.begin(), no_grad_inputs.end(), static_cast<int>(i)) == no_grad_inputs.end();
      if (differentiate) x.set_requires_grad(true);
      check[i] = differentiate;
      xs.push_back(x);
    } else {
      xs.push_back(in);
    }
  }

  // Analytic: backward of y with gradient w.
  Tensor y = f(xs);
  Generator gen(opt.seed);
  Tensor w = Tensor::empty(y.shape(), DType::f64);
  gen.uniform_(w, -1.0, 1.0);
  std::vector<double> wv = w.to_vector();
  if (!y.grad_fn()) {
    result.ok = false;
    result.report = "gradcheck: the function's output has no autograd history";
    return result;
  }
  y.backward(w.to(y.dtype()));

  NoGradGuard no_grad;
  int failures = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!check[i]) continue;
    Tensor x = xs[i];
    Tensor analytic = x.grad().defined() ? x.grad() : Tensor::zeros(x.shape(), DType::f64);
    double* px = x.data<double>();
    double worst = 0;
    std::int64_t worst_at = -1;
    for (std::int64_t k = 0; k < x.numel(); ++k) {
      double saved = px[k];
      px[k] = saved + opt.eps;
      double plus = weighted_sum(f(xs), wv);
      px[k] = saved - opt.eps;
      double minus = weighted_sum(f(xs), wv);
      px[k] = saved;
      double numeric = (plus - minus) / (2 * opt.eps);
      double a = analytic.at(k);
      double err = std::abs(a - numeric);
      double excess = err - (opt.atol + opt.rtol * std::abs(numeric));
      if (!(excess <= 0)) {  // also catches NaN
        result.ok = false;
        if (failures++ < 8)
          report << "input " << i << " " << x.str() << " element " << k << ": analytic " << a << " numeric " << numeric
                 << "\n";
      }
      if (err > worst || std::isnan(err)) {
        worst = err;
        worst_at = k;
      }
    }
    report << "input " << i << ": max abs error " << worst << " at element " << worst_at << "\n";
  }
  result.report = report.str();
  return result;
}

}  // namespace gattn::autograd
