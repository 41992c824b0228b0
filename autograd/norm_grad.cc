// The normalizations' first derivatives as one recorded op in a create_graph pass, and its backward:
// the double-backward formula of norm_grad.h, of recorded ops.
#include "autograd/norm_grad.h"

#include <algorithm>
#include <vector>

#include "autograd/elementwise.h"
#include "autograd/kernels/norm.h"
#include "autograd/reduce.h"
#include "autograd/shape_ops.h"

namespace normlab::autograd {

namespace {

namespace k = kernels;

// The sum of the defined terms (undefined when none is).
Tensor plus(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return add(a, b);
}

using Allreduce = std::function<void(double*, int64_t)>;

// t summed over the ranks (every rank calls it with the same shape): a recorded op whose backward is
// the same sum of the output's gradient (each rank's copy of the sum feeds that rank's loss).
Tensor summed_over_ranks(const Tensor& t, const Allreduce& allreduce_sum) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  Tensor out = empty_like(t);
  dispatch(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    std::copy(t.data<T>(), t.data<T>() + t.numel(), v.begin());
    allreduce_sum(v.data(), t.numel());
    std::transform(v.begin(), v.end(), out.data<T>(), [](double d) { return static_cast<T>(d); });
  });
  return record("AllreduceSumBackward", out, {t},
                [allreduce_sum](const Tensor& g, const Needs&) {
                  return std::vector<Tensor>{summed_over_ranks(g, allreduce_sum)};
                },
                Backward::Differentiable);
}

// The fused double backward (grad mode off): x viewed as (O, P, I), the element (o, p, i) at
// (o P + p) I + i. A group is one o (Rows, Groups) or one p (Channels); the parameter of (o, p, i)
// is pbase + i pstride: Rows i, Channels p, Groups (o mod G) P + p.
//   sweep 1, per group: sums of a, h, a xhat, h xhat, a h, u, u xhat   (h = g w, u = ggw g, a = ggx)
//   sweep 2, per element, with the means m(.) of those sums over the group's count M:
//     F(v)  = r (v - m(v) - xhat m(v xhat))                      (RMSNorm: no m(v) terms)
//     dg    = w F(a) + ggw xhat + ggb
//     dx    = r^2 [xhat (3 m(h xhat) m(a xhat) - m(a h) + m(a) m(h)) - m(a xhat) (h - m(h))
//                  - m(h xhat) (a - m(a))] + F(u)
//     dw[j] += g F(a)
// With constant statistics (BatchNorm in eval) F(v) = r v, dx = r u, and no sweep 1.
template <typename T>
struct FusedIo {
  const T *x, *g, *w, *a, *ggw, *ggb, *mu, *r;
  T *dg, *dx;
  double* dw;  // accumulated in double, numel(param) zeros on entry
};

template <typename T>
void fused_double_backward(const NormLayout& L, const NormStats& st, const FusedIo<T>& io) {
  const Shape& v = L.view;
  int64_t O = v[0], P = 1, I = v[1], G = 1;
  if (L.kind == NormKind::Channels) P = v[1], I = v[2];
  if (L.kind == NormKind::Groups) O = v[0] * v[1], G = v[1], P = v[2], I = v[3];
  const bool by_p = L.kind == NormKind::Channels, centered = st.centered, batch = st.batch_stats;
  const int64_t groups = by_p ? P : O, local = by_p ? O * I : P * I;
  const double M = st.allreduce_sum ? st.count : static_cast<double>(local);
  // Visits every element in a fixed order: f(group, at, first parameter, parameter stride).
  const auto each_segment = [&](auto&& f) {
    for (int64_t o = 0; o < O; ++o)
      for (int64_t p = 0; p < P; ++p) {
        const int64_t pbase = L.kind == NormKind::Rows ? 0 : L.kind == NormKind::Channels ? p : (o % G) * P + p;
        f(by_p ? p : o, (o * P + p) * I, pbase, L.kind == NormKind::Rows ? 1 : 0);
      }
  };
  const auto xhat_of = [&](int64_t grp, int64_t at) {
    return (static_cast<double>(io.x[at]) - (centered ? static_cast<double>(io.mu[grp]) : 0.0)) * io.r[grp];
  };
  std::vector<double> sums(static_cast<size_t>(7 * groups), 0.0);
  if (batch) {
    each_segment([&](int64_t grp, int64_t at, int64_t pb, int64_t ps) {
      double s[7] = {0, 0, 0, 0, 0, 0, 0};
      for (int64_t i = 0; i < I; ++i) {
        const int64_t j = pb + i * ps;
        const double xh = xhat_of(grp, at + i), gg = io.g[at + i], h = io.w ? gg * io.w[j] : gg;
        const double a = io.a ? io.a[at + i] : 0.0, u = io.ggw ? io.ggw[j] * gg : 0.0;
        s[0] += a, s[1] += h, s[2] += a * xh, s[3] += h * xh, s[4] += a * h, s[5] += u, s[6] += u * xh;
      }
      for (int k = 0; k < 7; ++k) sums[static_cast<size_t>(7 * grp + k)] += s[k];
    });
    if (st.allreduce_sum) st.allreduce_sum(sums.data(), 7 * groups);
    for (double& s : sums) s /= M;
    if (!centered)
      for (int64_t grp = 0; grp < groups; ++grp)
        for (int k : {0, 1, 5}) sums[static_cast<size_t>(7 * grp + k)] = 0;
  }
  each_segment([&](int64_t grp, int64_t at, int64_t pb, int64_t ps) {
    const double* m = sums.data() + 7 * grp;
    const double r = io.r[grp], ma = m[0], mh = m[1], qx = m[2], rx = m[3], mah = m[4], mu_u = m[5], mux = m[6];
    const double k = 3 * rx * qx - mah + ma * mh;
    for (int64_t i = 0; i < I; ++i) {
      const int64_t j = pb + i * ps;
      const double xh = xhat_of(grp, at + i), gg = io.g[at + i], w = io.w ? io.w[j] : 1.0, h = gg * w;
      const double a = io.a ? io.a[at + i] : 0.0, u = io.ggw ? io.ggw[j] * gg : 0.0;
      const double Fa = batch ? r * (a - ma - xh * qx) : r * a;
      if (io.dg) io.dg[at + i] = static_cast<T>(w * Fa + (io.ggw ? io.ggw[j] * xh : 0.0) + (io.ggb ? io.ggb[j] : 0.0));
      if (io.dx)
        io.dx[at + i] = static_cast<T>(batch ? r * r * (xh * k - qx * (h - mh) - rx * (a - ma)) + r * (u - mu_u - xh * mux)
                                             : r * u);
      if (io.dw) io.dw[j] += gg * Fa;
    }
  });
}

// BatchNorm's (Channels) double backward with grad mode off, vectorized: x (N, C, L). Three sweeps
// of BatchNorm's backward sums give, per channel, S(g), S(g xhat), S(a), S(a xhat), S(a g) (over
// the ranks for SyncBatchNorm; means m(.) = S(.) / M), and with h = w g, u = ggw g every gradient of
// the formula above is a per-channel combination A a + B (x - mu) + G g + D, one channel_combine
// sweep each (rx = w m(g xhat), qx = m(a xhat), k = 3 rx qx - w m(a g) + w m(a) m(g)):
//   dg: A = w r, B = (ggw - w r qx) r, G = 0, D = ggb - w r m(a)
//   dx: A = -r^2 rx, B = (r^2 k - r ggw m(g xhat)) r, G = r ggw - r^2 qx w,
//       D = r^2 qx w m(g) + r^2 rx m(a) - r ggw m(g)
//   dw = r (S(a g) - m(a) S(g) - qx S(g xhat)), with this rank's own sums S.
// In eval: dg = w r a + ggw r (x - mu) + ggb, dx = r ggw g, dw = r S(a g).
template <typename T>
void fused_channels(const NormLayout& L, const NormStats& st, const FusedIo<T>& io) {
  const int64_t N = L.view[0], C = L.view[1], Ls = L.view[2];
  const bool batch = st.batch_stats;
  const double M = st.allreduce_sum ? st.count : static_cast<double>(N * Ls);
  const size_t Cs = static_cast<size_t>(C);
  std::vector<T> zeros(Cs, T(0)), ones(Cs, T(1)), sums(5 * Cs, T(0)), coef(5 * Cs);
  T *s_gx = sums.data(), *s_g = s_gx + C, *s_ax = s_g + C, *s_a = s_ax + C, *s_ag = s_a + C;
  std::vector<T> unused(Cs);
  if (batch) k::batch_norm_backward(N, C, Ls, io.g, io.x, io.mu, nullptr, io.r, nullptr, false, nullptr, s_gx, s_g);
  if (batch && io.a)
    k::batch_norm_backward(N, C, Ls, io.a, io.x, io.mu, nullptr, io.r, nullptr, false, nullptr, s_ax, s_a);
  if (io.a && (batch || io.dw))  // S(a g): x = a, mean 0, rstd 1
    k::batch_norm_backward(N, C, Ls, io.g, io.a, zeros.data(), nullptr, ones.data(), nullptr, false, nullptr, s_ag,
                           unused.data());
  std::vector<double> m(sums.begin(), sums.end());  // the means, over the ranks
  if (st.allreduce_sum) st.allreduce_sum(m.data(), 5 * C);
  for (double& v : m) v /= M;
  const auto put = [&](T* at, double A, double B, double G, double D, int64_t c) {
    at[c] = static_cast<T>(A), at[C + c] = static_cast<T>(B), at[2 * C + c] = static_cast<T>(G);
    at[3 * C + c] = static_cast<T>(D), at[4 * C + c] = io.mu[c];
  };
  std::vector<T> coef_x(5 * Cs);
  for (int64_t c = 0; c < C; ++c) {
    const double r = io.r[c], w = io.w ? io.w[c] : 1.0, gw = io.ggw ? io.ggw[c] : 0.0, gb = io.ggb ? io.ggb[c] : 0.0;
    const double mgx = m[c], mg = m[C + c], qx = m[2 * C + c], ma = m[3 * C + c], mag = m[4 * C + c];
    if (!batch) {
      put(coef.data(), w * r, gw * r, 0, gb, c);
      put(coef_x.data(), 0, 0, r * gw, 0, c);
      if (io.dw) io.dw[c] = r * static_cast<double>(s_ag[c]);
      continue;
    }
    const double rx = w * mgx, k = 3 * rx * qx - w * mag + ma * w * mg, r2 = r * r;
    put(coef.data(), w * r, (gw - w * r * qx) * r, 0, gb - w * r * ma, c);
    put(coef_x.data(), -r2 * rx, (r2 * k - r * gw * mgx) * r, r * gw - r2 * qx * w,
        r2 * qx * w * mg + r2 * rx * ma - r * gw * mg, c);
    if (io.dw) io.dw[c] = r * (static_cast<double>(s_ag[c]) - ma * s_g[c] - qx * s_gx[c]);
  }
  if (io.dg) k::channel_combine(N, C, Ls, io.a, io.x, static_cast<const T*>(nullptr), coef.data(), io.dg);
  if (io.dx) k::channel_combine(N, C, Ls, io.a, io.x, io.g, coef_x.data(), io.dx);
}

// norm_double_backward with grad mode off: the fused kernel on contiguous buffers.
std::vector<Tensor> fused(const NormLayout& L, const NormStats& st, const Tensor& x, const Tensor& g,
                          const Tensor& w, const Tensor& ggx, const Tensor& ggw, const Tensor& ggb, const Needs& need) {
  const bool any_x = ggx.defined() || ggw.defined();
  Tensor dg = need[0] && (any_x || ggb.defined()) ? empty_like(g) : Tensor();
  Tensor dx = need[1] && any_x ? empty_like(x) : Tensor();
  Tensor dw = need.size() > 2 && need[2] && ggx.defined() ? empty_like(w) : Tensor();
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    std::vector<double> dw_acc(dw.defined() ? static_cast<size_t>(dw.numel()) : 0, 0.0);
    const FusedIo<T> io{x.data<T>(), g.data<T>(), ptr<T>(w), ptr<T>(ggx), ptr<T>(ggw), ptr<T>(ggb),
                        st.centered ? st.mu.data<T>() : nullptr, st.r.data<T>(), dg.defined() ? dg.data<T>() : nullptr,
                        dx.defined() ? dx.data<T>() : nullptr,
                        dw.defined() ? dw_acc.data() : nullptr};
    if (L.kind == NormKind::Channels)
      fused_channels(L, st, io);
    else
      fused_double_backward(L, st, io);
    if (dw.defined()) std::transform(dw_acc.begin(), dw_acc.end(), dw.data<T>(), [](double d) { return static_cast<T>(d); });
  });
  return {dg, dx, dw};
}

}  // namespace

std::vector<Tensor> norm_double_backward(const NormLayout& L, const NormStats& stats, const Tensor& x_in,
                                         const Tensor& g_in, const Tensor& w_in, const Tensor& ggx_in,
                                         const Tensor& ggw_in, const Tensor& ggb_in, const Needs& need) {
  if (!grad_enabled()) return fused(L, stats, x_in, g_in, w_in, ggx_in, ggw_in, ggb_in, need);
  const auto& dims = L.stat_dims;
  const auto mean_of = [&](const Tensor& t) {
    if (!stats.allreduce_sum) return mean(t, dims, true);
    return div(summed_over_ranks(sum(t, dims, true), stats.allreduce_sum), stats.count);
  };
  const Tensor x = reshape(x_in, L.view), g = reshape(g_in, L.view);
  const Tensor a = ggx_in.defined() ? reshape(ggx_in, L.view) : Tensor();
  const Tensor s = w_in.defined() ? reshape(w_in, L.param_view) : Tensor();
  const Tensor ggw = ggw_in.defined() ? reshape(ggw_in, L.param_view) : Tensor();
  const Tensor ggb = ggb_in.defined() ? reshape(ggb_in, L.param_view) : Tensor();
  Tensor mu = stats.mu, r = stats.r;
  const bool centered = stats.centered;
  if (stats.batch_stats && grad_enabled()) {  // a pass through this formula: the statistics as functions of x
    const Tensor c = centered ? sub(x, mu = mean_of(x)) : x;
    r = pow(add(mean_of(mul(c, c)), stats.eps), -0.5);
  }
  const Tensor xhat = mul(centered ? sub(x, mu) : x, r);
  const Tensor h = s.defined() ? mul(g, s) : g;
  // F(u) = r (u - mean(u) - xhat mean(u xhat)): the vector-Jacobian product of xhat(x).
  const auto F = [&](const Tensor& u) {
    if (!stats.batch_stats) return mul(u, r);
    const Tensor along = mul(xhat, mean_of(mul(u, xhat)));
    return mul(centered ? sub(sub(u, mean_of(u)), along) : sub(u, along), r);
  };
  const Tensor Fa = a.defined() ? F(a) : Tensor();
  Tensor dg, dx, dw;
  if (need[0]) {
    if (Fa.defined()) dg = s.defined() ? mul(Fa, s) : Fa;
    if (ggw.defined()) dg = plus(dg, mul(ggw, xhat));
    if (ggb.defined()) dg = plus(dg, expand(ggb, L.view));
    if (dg.defined() && dg.shape() != L.view) dg = expand(dg, L.view);
  }
  if (need[1]) {
    if (a.defined() && stats.batch_stats) {
      const Tensor qx = mean_of(mul(a, xhat)), rx = mean_of(mul(h, xhat));
      Tensor k = sub(mul(mul(rx, qx), 3.0), mean_of(mul(a, h))), hc = h, ac = a;
      if (centered) {
        const Tensor ma = mean_of(a), mh = mean_of(h);
        k = add(k, mul(ma, mh));
        hc = sub(h, mh);
        ac = sub(a, ma);
      }
      const Tensor bracket = sub(sub(mul(xhat, k), mul(qx, hc)), mul(rx, ac));
      dx = mul(bracket, mul(r, r));
    }
    if (ggw.defined()) dx = plus(dx, F(mul(ggw, g)));
    if (dx.defined() && dx.shape() != L.view) dx = expand(dx, L.view);
  }
  if (need.size() > 2 && need[2] && Fa.defined()) dw = reshape(sum(mul(g, Fa), L.param_dims, true), w_in.shape());
  return {dg.defined() ? reshape(dg, g_in.shape()) : Tensor(), dx.defined() ? reshape(dx, x_in.shape()) : Tensor(),
          dw};
}

std::vector<Tensor> norm_backward_into_buffers(const Needs& need, const Tensor& x, const Tensor& w,
                                               const Tensor& b, const NormBackwardKernel& kernel) {
  const auto buffer = [&need](size_t i, const Tensor& t) {
    return i < need.size() && need[i] && t.defined() ? empty_like(t) : Tensor();
  };
  std::vector<Tensor> out{buffer(0, x), buffer(1, w), buffer(2, b)};
  kernel(out[0], out[1], out[2]);
  out.resize(need.size());
  return out;
}

std::vector<Tensor> recorded_norm_backward(const char* name, const NormLayout& layout, const NormStats& stats,
                                           const Tensor& g, const Tensor& x, const Tensor& w,
                                           const Shape& param_shape, const Needs& need,
                                           const NormBackwardKernel& kernel) {
  const int64_t nx = x.numel(), np = autograd::numel(param_shape);
  const bool want_x = need[0], want_w = need.size() > 1 && need[1], want_b = need.size() > 2 && need[2];
  // The three gradients one after another in one buffer: the op's one output.
  const int64_t ow = want_x ? nx : 0, ob = ow + (want_w ? np : 0), total = ob + (want_b ? np : 0);
  Tensor packed = empty({total}, x.dtype());
  const auto part = [&packed](bool want, int64_t at, const Shape& s) {
    return want ? reshape(narrow(packed, at, autograd::numel(s)), s) : Tensor();
  };
  kernel(part(want_x, 0, x.shape()), part(want_w, ow, param_shape), part(want_b, ob, param_shape));
  const Shape xs = x.shape();
  packed = record(name, packed, {g, x, w},
                  [layout, stats, x = saved(x), g = saved(g), w = saved(w), xs, param_shape, want_x, want_w, want_b,
                   nx, np, ow, ob](const Tensor& gp, const Needs& n) {
                    const auto piece = [&gp](bool want, int64_t at, int64_t len, const Shape& s) {
                      return want ? reshape(narrow(gp, at, len), s) : Tensor();
                    };
                    return norm_double_backward(layout, stats, x, g, w, piece(want_x, 0, nx, xs),
                                                piece(want_w, ow, np, param_shape), piece(want_b, ob, np, param_shape),
                                                n);
                  },
                  Backward::Differentiable);
  std::vector<Tensor> out{part(want_x, 0, xs), part(want_w, ow, param_shape), part(want_b, ob, param_shape)};
  out.resize(need.size());  // RMSNorm has no bias
  return out;
}

}  // namespace normlab::autograd
