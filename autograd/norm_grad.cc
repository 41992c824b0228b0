// The normalizations' first derivatives as one recorded op in a create_graph pass, and its backward:
// the double-backward formula of norm_grad.h, of recorded ops.
#include "autograd/norm_grad.h"

#include "autograd/elementwise.h"
#include "autograd/reduce.h"
#include "autograd/shape_ops.h"

namespace normlab::autograd {

namespace {

// The sum of the defined terms (undefined when none is).
Tensor plus(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return add(a, b);
}

}  // namespace

std::vector<Tensor> norm_double_backward(const NormLayout& L, const NormStats& stats, const Tensor& x_in,
                                         const Tensor& g_in, const Tensor& w_in, const Tensor& ggx_in,
                                         const Tensor& ggw_in, const Tensor& ggb_in, const Needs& need) {
  const auto& dims = L.stat_dims;
  const auto mean_of = [&dims](const Tensor& t) { return mean(t, dims, true); };
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
