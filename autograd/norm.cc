// Normalization ops: argument checks with PyTorch's messages, one fused kernel per forward, and the
// backward recorded right below it calling the fused backward kernel.
#include "autograd/norm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/kernels/norm.h"
#include "autograd/norm_grad.h"
#include "autograd/shape_ops.h"
#include "base/format.h"

namespace normlab::autograd {

namespace k = kernels;

namespace {

void check_input(const Tensor& x, const char* op) {
  check(x.defined(), [&] { return std::string(op) + ": the input is an undefined tensor"; });
}

// An optional parameter must have the input's dtype.
void check_dtype(const Tensor& t, const Tensor& x, const char* op, const char* what) {
  if (t.defined() && t.dtype() != x.dtype())
    throw Error(std::string(op) + ": expected " + what + " to have the input's dtype " + dtype_name(x.dtype()) +
                ", got " + dtype_name(t.dtype()));
}

void check_eps(double eps, const char* op) {
  if (!(eps >= 0) || !std::isfinite(eps))
    throw Error(std::string(op) + ": eps must be a finite number >= 0, got " + base::py_float(eps));
}

}  // namespace

void check_momentum(double momentum, const std::string& who) {
  if (!(momentum >= 0 && momentum <= 1))  // also refuses NaN
    throw Error(who + ": momentum (the running-average factor) must be in [0, 1], got " + base::py_float(momentum));
}

namespace {

// The checks shared by layer_norm and rms_norm; returns the row length numel(normalized_shape).
int64_t check_normalized_shape(const Tensor& x, const Shape& ns, const Tensor& weight, const Tensor& bias,
                               const char* op) {
  check_input(x, op);
  if (ns.empty())
    throw Error(std::string(op) + ": Expected normalized_shape to be at least 1-dimensional, i.e., containing "
                "at least one element, but got normalized_shape = []");
  for (int64_t d : ns)
    if (d <= 0) throw Error(std::string(op) + ": normalized_shape must have positive sizes, got " + shape_str(ns));
  const Shape& s = x.shape();
  const size_t D = ns.size();
  if (s.size() < D || !std::equal(ns.begin(), ns.end(), s.end() - D)) {
    std::string star = "[*";
    for (int64_t d : ns) star += ", " + std::to_string(d);
    throw Error(std::string(op) + ": Given normalized_shape=" + shape_str(ns) + ", expected input with shape " +
                star + "], but got input of size " + shape_str(s));
  }
  for (auto [t, what] : {std::pair<const Tensor*, const char*>{&weight, "weight"}, {&bias, "bias"}}) {
    if (t->defined() && t->shape() != ns)
      throw Error(std::string(op) + ": Expected " + what + " to be of same shape as normalized_shape, but got " +
                  what + " of shape " + shape_str(t->shape()) + " and normalized_shape = " + shape_str(ns));
    check_dtype(*t, x, op, what);
  }
  return autograd::numel(ns);
}

}  // namespace

// ---- LayerNorm ------------------------------------------------------------------------------------

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  const int64_t n = check_normalized_shape(x, normalized_shape, weight, bias, "layer_norm");
  check_eps(eps, "layer_norm");
  const int64_t rows = x.numel() / n;
  // Per-row statistics in one buffer (3, rows): the mean as a pair mean + mean_lo (see
  // autograd/kernels/norm.h), then rstd.
  Tensor y = empty_like(x), stats = empty({3, rows}, x.dtype());
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* st = stats.data<T>();
    k::layer_norm_forward(rows, n, x.data<T>(), ptr<T>(weight), ptr<T>(bias), eps, y.data<T>(), st, st + rows,
                          st + 2 * rows);
  });
  // Saves x, weight and the per-row statistics; xhat is recomputed in the backward.
  return record("LayerNormBackward", y, {x, weight, bias},
                [x = saved(x), w = saved(weight), b = saved(bias), stats, rows, n, eps, ns = normalized_shape](
                    const Tensor& g, const Needs& need) {
                  const auto kernel = [&](const Tensor& dx, const Tensor& dw, const Tensor& db) {
                    dispatch(x.dtype(), [&](auto zero) {
                      using T = decltype(zero);
                      const T* st = stats.data<T>();
                      k::layer_norm_backward(rows, n, g.data<T>(), x.data<T>(), st, st + rows, st + 2 * rows,
                                             ptr<T>(w), ptr<T>(dx), ptr<T>(dw), ptr<T>(db));
                    });
                  };
                  if (grad_enabled()) {  // a create_graph pass: one recorded op, the formula its backward
                    NormStats st;
                    st.mu = reshape(add(narrow(stats, 0, 1), narrow(stats, 1, 1)), {rows, 1});
                    st.r = reshape(narrow(stats, 2, 1), {rows, 1});
                    st.eps = eps;
                    const NormLayout layout{NormKind::Rows, {rows, n}, {1}, {1, n}, {0}};
                    return recorded_norm_backward("LayerNormBackwardBackward", layout, st, g, x, w, ns, need,
                                                  kernel);
                  }
                  return norm_backward_into_buffers(need, x, w, b, kernel);
                }, Backward::Differentiable);
}

// ---- BatchNorm ------------------------------------------------------------------------------------

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  check_input(x, "batch_norm");
  if (x.dim() < 2)
    throw Error("batch_norm: expected an input of shape (N, C) or (N, C, *), got input of size " +
                shape_str(x.shape()));
  const int64_t N = x.size(0), C = x.size(1), L = C > 0 && N > 0 ? x.numel() / (N * C) : 0;
  int64_t m = N;
  for (int64_t d = 2; d < x.dim(); ++d) m *= x.size(d);
  if (running_mean.defined() != running_var.defined())
    throw Error("batch_norm: running_mean and running_var must both be defined or both undefined");
  for (auto [t, what] : {std::pair<const Tensor*, const char*>{&running_mean, "running_mean"},
                         {&running_var, "running_var"}, {&weight, "weight"}, {&bias, "bias"}}) {
    if (t->defined() && t->numel() != C)
      throw Error("batch_norm: " + std::string(what) + " should contain " + std::to_string(C) + " elements not " +
                  std::to_string(t->numel()) + " (one per channel of the input of size " + shape_str(x.shape()) +
                  ")");
    check_dtype(*t, x, "batch_norm", what);
  }
  check_eps(eps, "batch_norm");
  check_momentum(momentum, "batch_norm");
  if (!training && !running_mean.defined())
    throw Error("batch_norm: running_mean and running_var must be defined in evaluation mode (training=false)");
  if (training && m == 1)
    throw Error("Expected more than 1 value per channel when training, got input size " + shape_str(x.shape()));

  // Per-channel statistics used to normalize, in one buffer: mean, rstd and, in training, mean_lo
  // and the batch variance (the batch's mean as a pair mean + mean_lo, see autograd/kernels/norm.h); in
  // eval the running statistics (no mean_lo).
  Tensor stats = empty({training ? 4 : 2, C}, x.dtype()), y = empty_like(x);
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T *mu = stats.data<T>(), *r = mu + C;
    if (training) {
      T *lo = mu + 2 * C, *v = mu + 3 * C;
      k::batch_norm_stats(N, C, L, x.data<T>(), mu, lo, v);
      for (int64_t c = 0; c < C; ++c) r[c] = static_cast<T>(k::ref::inv_std(v[c], eps));
      if (running_mean.defined() && m > 0) {
        // PyTorch's update, in double: f * batch + (1 - f) * running, with the unbiased variance.
        // Written straight into the buffers: not an op, never recorded.
        T *rm = running_mean.data<T>(), *rv = running_var.data<T>();
        const double f = momentum, unbias = static_cast<double>(m) / static_cast<double>(m - 1);
        for (int64_t c = 0; c < C; ++c) {
          rm[c] = static_cast<T>(f * (static_cast<double>(mu[c]) + lo[c]) + (1 - f) * rm[c]);
          rv[c] = static_cast<T>(f * (v[c] * unbias) + (1 - f) * rv[c]);
        }
      }
    } else {
      const T *rm = running_mean.data<T>(), *rv = running_var.data<T>();
      for (int64_t c = 0; c < C; ++c) {
        mu[c] = rm[c];  // a copy: a later update of the running stats must not change this graph
        r[c] = static_cast<T>(k::ref::inv_std(rv[c], eps));
      }
    }
    k::batch_norm_normalize(N, C, L, x.data<T>(), mu, training ? mu + 2 * C : nullptr, r, ptr<T>(weight),
                            ptr<T>(bias), y.data<T>());
  });
  // In training the statistics depend on x, which couples the whole batch in the backward.
  return record("BatchNormBackward", y, {x, weight, bias},
                [x = saved(x), w = saved(weight), b = saved(bias), stats, training, N, C, L, eps](
                    const Tensor& g, const Needs& need) {
                  const auto kernel = [&](const Tensor& dx, const Tensor& dw, const Tensor& db) {
                    dispatch(x.dtype(), [&](auto zero) {
                      using T = decltype(zero);
                      const T* mu = stats.data<T>();
                      k::batch_norm_backward(N, C, L, g.data<T>(), x.data<T>(), mu, training ? mu + 2 * C : nullptr,
                                             mu + C, ptr<T>(w), training, ptr<T>(dx), ptr<T>(dw), ptr<T>(db));
                    });
                  };
                  if (grad_enabled()) {  // a create_graph pass: one recorded op, the formula its backward
                    NormStats st;
                    st.mu = reshape(training ? add(narrow(stats, 0, 1), narrow(stats, 2, 1)) : narrow(stats, 0, 1),
                                    {1, C, 1});
                    st.r = reshape(narrow(stats, 1, 1), {1, C, 1});
                    st.batch_stats = training;
                    st.eps = eps;
                    const NormLayout layout{NormKind::Channels, {N, C, L}, {0, 2}, {1, C, 1}, {0, 2}};
                    return recorded_norm_backward(training ? "BatchNormBackwardBackward" : "BatchNormEvalBackwardBackward",
                                                  layout, st, g, x, w, {C}, need, kernel);
                  }
                  return norm_backward_into_buffers(need, x, w, b, kernel);
                }, Backward::Differentiable);
}

// ---- GroupNorm ------------------------------------------------------------------------------------

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  check_input(x, "group_norm");
  if (x.dim() < 2)
    throw Error("group_norm: expected an input of shape (N, C, *), got input of size " + shape_str(x.shape()));
  const int64_t N = x.size(0), C = x.size(1), G = num_groups;
  if (G <= 0) throw Error("group_norm: num_groups must be positive, got " + std::to_string(G));
  if (C % G != 0)
    throw Error("group_norm: Expected number of channels in input to be divisible by num_groups, but got input "
                "of shape " + shape_str(x.shape()) + " and num_groups=" + std::to_string(G));
  for (auto [t, what] : {std::pair<const Tensor*, const char*>{&weight, "weight"}, {&bias, "bias"}}) {
    if (t->defined() && t->shape() != Shape{C})
      throw Error(std::string("group_norm: Expected ") + what + " to be a vector of size equal to the number of "
                  "channels in input, but got " + what + " of shape " + shape_str(t->shape()) +
                  " and input of shape " + shape_str(x.shape()));
    check_dtype(*t, x, "group_norm", what);
  }
  check_eps(eps, "group_norm");
  int64_t S = 1;
  for (int64_t d = 2; d < x.dim(); ++d) S *= x.size(d);
  // Per-(sample, group) statistics: the mean as a pair mean + mean_lo, and rstd.
  Tensor y = empty_like(x), mean = empty({N * G}, x.dtype()), mean_lo = empty({N * G}, x.dtype()),
         rstd = empty({N * G}, x.dtype());
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    k::group_norm_forward(N, C, S, G, x.data<T>(), ptr<T>(weight), ptr<T>(bias), eps, y.data<T>(), mean.data<T>(),
                          mean_lo.data<T>(), rstd.data<T>());
  });
  return record("GroupNormBackward", y, {x, weight, bias},
                [x = saved(x), w = saved(weight), b = saved(bias), mean, mean_lo, rstd, N, C, S, G, eps](
                    const Tensor& g, const Needs& need) {
                  const auto kernel = [&](const Tensor& dx, const Tensor& dw, const Tensor& db) {
                    dispatch(x.dtype(), [&](auto zero) {
                      using T = decltype(zero);
                      k::group_norm_backward(N, C, S, G, g.data<T>(), x.data<T>(), mean.data<T>(), mean_lo.data<T>(),
                                             rstd.data<T>(), ptr<T>(w), ptr<T>(dx), ptr<T>(dw), ptr<T>(db));
                    });
                  };
                  if (grad_enabled()) {  // a create_graph pass: one recorded op, the formula its backward
                    NormStats st;
                    st.mu = reshape(add(mean, mean_lo), {N, G, 1, 1});
                    st.r = reshape(rstd, {N, G, 1, 1});
                    st.eps = eps;
                    const NormLayout layout{NormKind::Groups, {N, G, C / G, S}, {2, 3}, {1, G, C / G, 1}, {0, 3}};
                    return recorded_norm_backward("GroupNormBackwardBackward", layout, st, g, x, w, {C}, need, kernel);
                  }
                  return norm_backward_into_buffers(need, x, w, b, kernel);
                }, Backward::Differentiable);
}

// ---- RMSNorm --------------------------------------------------------------------------------------

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps) {
  const int64_t n = check_normalized_shape(x, normalized_shape, weight, Tensor(), "rms_norm");
  const double e = eps ? *eps
                       : (x.dtype() == DType::Float32 ? std::numeric_limits<float>::epsilon()
                                                      : std::numeric_limits<double>::epsilon());
  check_eps(e, "rms_norm");
  const int64_t rows = x.numel() / n;
  Tensor y = empty_like(x), rstd = empty({rows}, x.dtype());
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    k::rms_norm_forward(rows, n, x.data<T>(), ptr<T>(weight), e, y.data<T>(), rstd.data<T>());
  });
  return record("RmsNormBackward", y, {x, weight},
                [x = saved(x), w = saved(weight), rstd, rows, n, e, ns = normalized_shape](const Tensor& g,
                                                                                         const Needs& need) {
                  const auto kernel = [&](const Tensor& dx, const Tensor& dw, const Tensor&) {
                    dispatch(x.dtype(), [&](auto zero) {
                      using T = decltype(zero);
                      k::rms_norm_backward(rows, n, g.data<T>(), x.data<T>(), rstd.data<T>(), ptr<T>(w), ptr<T>(dx),
                                           ptr<T>(dw));
                    });
                  };
                  if (grad_enabled()) {  // a create_graph pass: one recorded op, the formula its backward
                    NormStats st;
                    st.r = reshape(rstd, {rows, 1});
                    st.eps = e;
                    st.centered = false;
                    const NormLayout layout{NormKind::Rows, {rows, n}, {1}, {1, n}, {0}};
                    return recorded_norm_backward("RmsNormBackwardBackward", layout, st, g, x, w, ns, need, kernel);
                  }
                  return norm_backward_into_buffers(need, x, w, Tensor(), kernel);
                }, Backward::Differentiable);
}

}  // namespace normlab::autograd
