// sync_batch_norm: the global batch's statistics from every rank's count, mean and M2 (Chan's
// parallel combination, in rank order), and the input's gradient from the global sums; the
// collectives are the caller's.
#include "autograd/sync_batch_norm.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/kernels/norm.h"
#include "autograd/norm.h"
#include "autograd/norm_grad.h"
#include "autograd/shape_ops.h"
#include "base/format.h"

namespace normlab::autograd {

namespace k = kernels;

namespace {

// One channel's count, mean and M2, combined over the ranks in rank order (Chan, Golub & LeVeque):
//   n = na + nb,  delta = mean_b - mean_a,  mean = mean_a + delta nb / n,  M2 = M2a + M2b + delta^2 na nb / n.
struct Moments {
  double n = 0, mean = 0, m2 = 0;
  void add(double nb, double mean_b, double m2_b) {
    if (nb == 0) return;
    const double total = n + nb, delta = mean_b - mean;
    mean += delta * nb / total;
    m2 += m2_b + delta * delta * n * nb / total;
    n = total;
  }
};

}  // namespace

Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, double momentum, double eps, const RankCollectives& ranks) {
  if (!x.defined() || x.dim() < 2)
    throw Error("sync_batch_norm: expected an input of shape (N, C, *), got " +
                (x.defined() ? "input of size " + shape_str(x.shape()) : std::string("an undefined tensor")));
  check_momentum(momentum, "sync_batch_norm");
  const int64_t N = x.size(0), C = x.size(1), L = N > 0 && C > 0 ? x.numel() / (N * C) : 0, m = N * L;
  // This rank's (count, mean, M2) per channel, then every rank's, combined in rank order.
  std::vector<double> mine(1 + 2 * C, 0.0);
  mine[0] = static_cast<double>(m);
  const Tensor xc = x;
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> mu(C), lo(C), var(C);
    if (m > 0) k::batch_norm_stats(N, C, L, xc.data<T>(), mu.data(), lo.data(), var.data());
    for (int64_t c = 0; c < C; ++c) {
      mine[1 + c] = static_cast<double>(mu[c]) + lo[c];
      mine[1 + C + c] = static_cast<double>(var[c]) * static_cast<double>(m);
    }
  });
  const std::vector<double> all = ranks.allgather(mine.data(), static_cast<int64_t>(mine.size()));
  std::vector<Moments> g(C);
  for (int r = 0; r < ranks.size; ++r) {
    const double* p = all.data() + static_cast<size_t>(r) * mine.size();
    for (int64_t c = 0; c < C; ++c) g[c].add(p[0], p[1 + c], p[1 + C + c]);
  }
  const double M = C > 0 ? g[0].n : 0;
  if (M <= 1)  // every rank sees the same global count, so every rank throws (no rank left waiting)
    throw Error("Expected more than 1 value per channel when training, got input size " + shape_str(x.shape()) +
                " on rank " + std::to_string(ranks.rank) + " and " + base::py_float(M) +
                " value(s) per channel over all " + std::to_string(ranks.size) + " ranks");

  // Global mean (as hi + lo) and inverse std; the running statistics with the unbiased variance.
  Tensor stats = empty({3, C}, x.dtype()), y = empty_like(x);
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T *mu = stats.data<T>(), *lo = mu + C, *r = lo + C;
    for (int64_t c = 0; c < C; ++c) {
      mu[c] = static_cast<T>(g[c].mean);
      lo[c] = static_cast<T>(g[c].mean - static_cast<double>(mu[c]));
      r[c] = static_cast<T>(k::ref::inv_std(g[c].m2 / M, eps));
    }
    if (running_mean.defined()) {
      T *rm = running_mean.data<T>(), *rv = running_var.data<T>();
      for (int64_t c = 0; c < C; ++c) {
        rm[c] = static_cast<T>(momentum * g[c].mean + (1 - momentum) * rm[c]);
        rv[c] = static_cast<T>(momentum * (g[c].m2 / (M - 1)) + (1 - momentum) * rv[c]);
      }
    }
    k::batch_norm_normalize(N, C, L, xc.data<T>(), mu, lo, r, ptr<T>(weight), ptr<T>(bias), y.data<T>());
  });
  return record(
      "SyncBatchNormBackward", y, {x, weight, bias},
      [x = saved(xc), w = saved(weight), b = saved(bias), stats, N, C, L, M, eps,
       allreduce_sum = ranks.allreduce_sum](const Tensor& grad, const Needs& need) {
        const auto kernel = [&](const Tensor& dx, const Tensor& dw, const Tensor& db) {
          dispatch(x.dtype(), [&](auto zero) {
            using T = decltype(zero);
            const T *mu = stats.data<T>(), *lo = mu + C, *r = lo + C;
            // This rank's sum(dy xhat) and sum(dy) per channel (BatchNorm's backward sums)...
            std::vector<T> sdyxh(C), sdy(C);
            k::batch_norm_backward(N, C, L, grad.data<T>(), x.data<T>(), mu, lo, r, nullptr, false, nullptr,
                                   sdyxh.data(), sdy.data());
            if (dw.defined()) std::copy(sdyxh.begin(), sdyxh.end(), dw.data<T>());
            if (db.defined()) std::copy(sdy.begin(), sdy.end(), db.data<T>());
            if (!dx.defined()) return;
            // ... summed over the ranks: dx = (gamma r / M)(M dy - sum dy - xhat sum(dy xhat)).
            std::vector<double> sums(2 * C);
            for (int64_t c = 0; c < C; ++c) sums[c] = sdy[c], sums[C + c] = sdyxh[c];
            allreduce_sum(sums.data(), 2 * C);
            const T* gamma = ptr<T>(w);
            const T *dy = grad.data<T>(), *xp = x.data<T>();
            T* out = dx.data<T>();
            for (int64_t c = 0; c < C; ++c) {
              const double rc = r[c], kc = (gamma ? gamma[c] : 1.0) * rc, a = sums[c] / M, bb = sums[C + c] / M;
              const double mean = static_cast<double>(mu[c]) + lo[c];
              for (int64_t i = 0; i < N; ++i)
                for (int64_t l = 0; l < L; ++l) {
                  const int64_t at = (i * C + c) * L + l;
                  const double xhat = (xp[at] - mean) * rc;
                  out[at] = static_cast<T>(kc * (dy[at] - a - xhat * bb));
                }
            }
          });
        };
        if (grad_enabled()) {  // a create_graph pass: one recorded op, the formula (global means) its backward
          NormStats st;
          st.mu = reshape(add(narrow(stats, 0, 1), narrow(stats, 1, 1)), {1, C, 1});
          st.r = reshape(narrow(stats, 2, 1), {1, C, 1});
          st.allreduce_sum = allreduce_sum;
          st.count = M;
          st.eps = eps;
          const NormLayout layout{NormKind::Channels, {N, C, L}, {0, 2}, {1, C, 1}, {0, 2}};
          return recorded_norm_backward("SyncBatchNormBackwardBackward", layout, st, grad, x, w, {C}, need, kernel);
        }
        return norm_backward_into_buffers(need, x, w, b, kernel);
      },
      Backward::Differentiable);
}

}  // namespace normlab::autograd
