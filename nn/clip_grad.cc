// Gradient clipping by total norm: the per-gradient norms, their norm, and the in-place scaling.
#include "nn/clip_grad.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/elementwise.h"
#include "base/format.h"

namespace normlab::nn {

namespace {

// sum_i f(g_i) in double, in a fixed order: element i goes to partial sum i mod 8 (independent
// chains), and the partial sums are added in order. The 8 sums are named variables: as an array
// indexed in an inner loop GCC kept them in memory, a load and a store per element; as named
// variables they stay in registers.
template <typename T, class F>
double sum_of(const T* g, int64_t n, F f) {
  constexpr int64_t kParts = 8;
  double p0 = 0, p1 = 0, p2 = 0, p3 = 0, p4 = 0, p5 = 0, p6 = 0, p7 = 0;
  int64_t i = 0;
  for (; i + kParts <= n; i += kParts) {
    p0 += f(static_cast<double>(g[i])), p1 += f(static_cast<double>(g[i + 1]));
    p2 += f(static_cast<double>(g[i + 2])), p3 += f(static_cast<double>(g[i + 3]));
    p4 += f(static_cast<double>(g[i + 4])), p5 += f(static_cast<double>(g[i + 5]));
    p6 += f(static_cast<double>(g[i + 6])), p7 += f(static_cast<double>(g[i + 7]));
  }
  double part[kParts] = {p0, p1, p2, p3, p4, p5, p6, p7};
  for (int64_t l = 0; i < n; ++i, ++l) part[l] += f(static_cast<double>(g[i]));
  double s = 0;
  for (double v : part) s += v;
  return s;
}

// The p-norm of one gradient, summed in double: (sum |g|^p)^(1/p), max |g| for inf.
template <typename T>
double grad_norm(const T* g, int64_t n, double p) {
  if (std::isinf(p)) {
    double m = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = std::fabs(static_cast<double>(g[i]));
      if (!(v <= m)) m = v;  // NaN propagates: once m is NaN, v <= m is false for every v
      if (std::isnan(m)) return m;
    }
    return m;
  }
  if (p == 2) return std::sqrt(sum_of(g, n, [](double v) { return v * v; }));
  if (p == 1) return sum_of(g, n, [](double v) { return std::fabs(v); });
  return std::pow(sum_of(g, n, [p](double v) { return std::pow(std::fabs(v), p); }), 1 / p);
}

}  // namespace

double clip_grad_norm_(const std::vector<autograd::Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  if (!(norm_type > 0))  // also refuses NaN
    throw Error("clip_grad_norm_: norm_type must be > 0 (or inf), got " + base::py_float(norm_type));
  if (!(max_norm >= 0))
    throw Error("clip_grad_norm_: max_norm must be >= 0, got " + base::py_float(max_norm));
  std::vector<autograd::Tensor> grads;
  for (const autograd::Tensor& p : params)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0;
  // total = the norm of the vector of per-gradient norms (same p), in parameter order.
  const bool inf = std::isinf(norm_type);
  double total = 0;
  for (const autograd::Tensor& g : grads) {
    const double n = autograd::dispatch(g.dtype(), [&](auto zero) {
      using T = decltype(zero);
      return grad_norm<T>(g.data<T>(), g.numel(), norm_type);
    });
    if (inf) total = std::isnan(n) || std::isnan(total) ? std::numeric_limits<double>::quiet_NaN() : std::max(total, n);
    else total += norm_type == 2 ? n * n : norm_type == 1 ? n : std::pow(n, norm_type);
  }
  if (!inf) total = norm_type == 2 ? std::sqrt(total) : norm_type == 1 ? total : std::pow(total, 1 / norm_type);
  if (error_if_nonfinite && !std::isfinite(total))
    throw Error("clip_grad_norm_: the total norm of order " + base::py_float(norm_type) +
                " of the gradients is non-finite (" + base::py_float(total) +
                "), so it cannot be clipped; pass error_if_nonfinite=false to scale the gradients by it anyway");
  // coef = min(max_norm / (total + 1e-6), 1), in double, then rounded to each gradient's dtype.
  const double coef = std::min(max_norm / (total + 1e-6), 1.0);
  for (const autograd::Tensor& g : grads) autograd::mul_(g, coef);  // g *= T(coef)
  return total;
}

}  // namespace normlab::nn
