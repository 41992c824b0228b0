// The LSTM step op: shape checks, one fused kernel call forward, and its backward recorded right
// below it calling the fused backward kernel.
#include "autograd/lstm.h"

#include <algorithm>
#include <functional>
#include <utility>
#include <string>
#include <vector>

#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/kernels/lstm.h"
#include "autograd/lstm_grad.h"
#include "autograd/shape_ops.h"

namespace normlab::autograd {

namespace k = kernels;

namespace {

// Checks gates (B, 4H) and c_prev (B, H) of one dtype; returns H.
int64_t check_step(const Tensor& gates, const Tensor& c_prev, const std::string& op) {
  check(gates.defined() && c_prev.defined(), [&] { return op + ": gates and c_prev must be defined tensors"; });
  const Shape& gs = gates.shape();
  if (gs.size() != 2 || gs[1] % 4 != 0)
    throw Error(op + ": expected gates of shape (B, 4H) (2-D, the second size a multiple of 4), got " +
                shape_str(gs));
  const int64_t B = gs[0], H = gs[1] / 4;
  if (c_prev.shape() != Shape{B, H})
    throw Error(op + ": expected c_prev of shape " + shape_str({B, H}) + " for gates of shape " + shape_str(gs) +
                ", got " + shape_str(c_prev.shape()));
  if (c_prev.dtype() != gates.dtype())
    throw Error(op + ": expected c_prev to have the gates' dtype " + dtype_name(gates.dtype()) + ", got " +
                dtype_name(c_prev.dtype()));
  return H;
}

// A step's gradients with respect to {gates, c_prev, g} from the cotangent gp of its packed first
// derivatives [dG (B, 4H) | dc_prev (B, H)]: lstm_grad.h's formula, per element in double with grad
// mode off, of recorded ops with grad mode on.
std::vector<Tensor> step_grads(bool cell, const Tensor& G, const Tensor& cp, const Tensor& g, const Tensor& gp,
                               int64_t B, int64_t H, const Needs& need) {
  using lstm_grad::StepCot;
  using lstm_grad::StepIn;
  if (grad_enabled()) {
    const Tensor aG = reshape(narrow(gp, 0, B * 4 * H), {B, 4 * H});
    const auto block = [H](const Tensor& t, int64_t k) { return narrow(t, 1, k * H, H); };
    const StepIn<Tensor> in{block(G, 0), block(G, 1), block(G, 2), block(G, 3), cp, select(g, 0, 0), select(g, 0, 1)};
    const StepCot<Tensor> a{block(aG, 0), block(aG, 1), block(aG, 2), block(aG, 3),
                            reshape(narrow(gp, B * 4 * H, B * H), {B, H})};
    const auto r = lstm_grad::step_double_backward(cell, in, a);
    return {need[0] ? cat({r.Gi, r.Gf, r.Gg, r.Go}, 1) : Tensor(), need[1] ? r.cp : Tensor(),
            need[2] ? stack({r.d1, r.dc}, 0) : Tensor()};
  }
  Tensor gG = empty({B, 4 * H}, G.dtype()), gcp = empty({B, H}, G.dtype()), gg = empty({2, B, H}, G.dtype());
  dispatch(G.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *Gp = G.data<T>(), *cpp = cp.data<T>(), *gd = g.data<T>(), *ap = gp.data<T>();
    T *oG = gG.data<T>(), *ocp = gcp.data<T>(), *og = gg.data<T>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j) {
        const int64_t row = b * 4 * H + j, at = b * H + j;
        const StepIn<double> in{Gp[row], Gp[row + H], Gp[row + 2 * H], Gp[row + 3 * H], cpp[at], gd[at],
                                gd[B * H + at]};
        const StepCot<double> a{ap[row], ap[row + H], ap[row + 2 * H], ap[row + 3 * H], ap[B * 4 * H + at]};
        const auto r = lstm_grad::step_double_backward(cell, in, a);
        oG[row] = static_cast<T>(r.Gi), oG[row + H] = static_cast<T>(r.Gf), oG[row + 2 * H] = static_cast<T>(r.Gg);
        oG[row + 3 * H] = static_cast<T>(r.Go), ocp[at] = static_cast<T>(r.cp);
        og[at] = static_cast<T>(r.d1), og[B * H + at] = static_cast<T>(r.dc);
      }
  });
  return {need[0] ? gG : Tensor(), need[1] ? gcp : Tensor(), need[2] ? gg : Tensor()};
}

// A step's backward in a create_graph pass: dG and dc_prev from the fused kernel (the first-order
// values, bit for bit), recorded as one op `name` of {gates, c_prev, g} whose backward is step_grads.
std::vector<Tensor> recorded_step(const char* name, bool cell, const Tensor& G, const Tensor& cp, const Tensor& g,
                                  int64_t B, int64_t H, const Needs& need,
                                  const std::function<void(const Tensor& dG, const Tensor& dcp)>& kernel) {
  Tensor packed = empty({B * 5 * H}, G.dtype());
  const auto parts = [B, H](const Tensor& p) {
    return std::pair{reshape(narrow(p, 0, B * 4 * H), {B, 4 * H}), reshape(narrow(p, B * 4 * H, B * H), {B, H})};
  };
  {
    const auto [dG, dcp] = parts(packed);
    kernel(dG, dcp);
  }
  packed = record(name, packed, {G, cp, g},
                  [cell, G = saved(G), cp = saved(cp), g = saved(g), B, H](const Tensor& gp, const Needs& n) {
                    return step_grads(cell, G, cp, g, gp, B, H, n);
                  },
                  Backward::Differentiable);
  const auto [dG, dcp] = parts(packed);
  return {need[0] ? dG : Tensor(), need[1] ? dcp : Tensor()};
}

// lstm_output's gradients with respect to {o, y, g} from the cotangents (a_o, a_y) of its first
// derivatives (d_o, dy): lstm_grad.h's formula, per element in double, or of recorded ops under grad mode.
std::vector<Tensor> output_grads(const Tensor& o, const Tensor& y, const Tensor& g, const Tensor& a_o,
                                 const Tensor& a_y, const Needs& need) {
  Tensor g_o, g_y, g_dh;
  if (grad_enabled()) {
    lstm_grad::output_double_backward(o, y, g, a_o, a_y, g_o, g_y, g_dh);
  } else {
    g_o = empty_like(o), g_y = empty_like(o), g_dh = empty_like(o);
    dispatch(o.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T *op = o.data<T>(), *yp = y.data<T>(), *gd = g.data<T>(), *ao = a_o.data<T>(), *ay = a_y.data<T>();
      T *go = g_o.data<T>(), *gy = g_y.data<T>(), *gh = g_dh.data<T>();
      for (int64_t i = 0; i < o.numel(); ++i) {
        double r_o, r_y, r_dh;
        lstm_grad::output_double_backward<double>(op[i], yp[i], gd[i], ao[i], ay[i], r_o, r_y, r_dh);
        go[i] = static_cast<T>(r_o), gy[i] = static_cast<T>(r_y), gh[i] = static_cast<T>(r_dh);
      }
    });
  }
  return {need[0] ? g_o : Tensor(), need[1] ? g_y : Tensor(), need[2] ? g_dh : Tensor()};
}

}  // namespace

Tensor lstm_cell(const Tensor& gates, const Tensor& c_prev) {
  const int64_t H = check_step(gates, c_prev, "lstm_cell"), B = gates.shape()[0];
  // The activations (B, 4H) are saved for the backward; the state holds h then c.
  Tensor state = empty({2, B, H}, gates.dtype()), acts = empty({B, 4 * H}, gates.dtype());
  dispatch(gates.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* s = state.data<T>();
    k::lstm_cell_forward(B, H, gates.data<T>(), c_prev.data<T>(), acts.data<T>(), s + B * H, s);
  });
  return record("LstmCellBackward", state, {gates, c_prev},
                [acts, G = saved(gates), cp = saved(c_prev), st = saved_output(state), B, H](const Tensor& g,
                                                                                           const Needs& need) {
                  // g (2, B, H): dh then dc. dG is always computed (dc_prev needs the same pass).
                  const auto kernel = [&](const Tensor& dG, const Tensor& dcp) {
                    dispatch(g.dtype(), [&](auto zero) {
                      using T = decltype(zero);
                      const T* gd = g.data<T>();
                      k::lstm_cell_backward(B, H, gd, gd + B * H, acts.data<T>(), cp.data<T>(), st.data<T>() + B * H,
                                            dG.data<T>(), dcp.defined() ? dcp.data<T>() : nullptr);
                    });
                  };
                  if (grad_enabled()) return recorded_step("LstmCellBackwardBackward", true, G, cp, g, B, H, need, kernel);
                  Tensor dG = empty({B, 4 * H}, g.dtype()), dcp = need[1] ? empty({B, H}, g.dtype()) : Tensor();
                  kernel(dG, dcp);
                  return std::vector<Tensor>{need[0] ? dG : Tensor(), dcp};
                }, Backward::Differentiable);
}

Tensor lstm_gates(const Tensor& gates, const Tensor& c_prev) {
  const int64_t H = check_step(gates, c_prev, "lstm_gates"), B = gates.shape()[0];
  Tensor state = empty({2, B, H}, gates.dtype()), acts = empty({B, 4 * H}, gates.dtype());
  dispatch(gates.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* s = state.data<T>();
    const T* a = acts.data<T>();
    k::lstm_gates_forward(B, H, gates.data<T>(), c_prev.data<T>(), acts.data<T>(), s + B * H);
    for (int64_t b = 0; b < B; ++b) std::copy(a + b * 4 * H + 3 * H, a + (b + 1) * 4 * H, s + b * H);  // o block
  });
  return record("LstmGatesBackward", state, {gates, c_prev},
                [acts, G = saved(gates), cp = saved(c_prev), B, H](const Tensor& g, const Needs& need) {
                  // g (2, B, H): d o then dc.
                  const auto kernel = [&](const Tensor& dG, const Tensor& dcp) {
                    dispatch(g.dtype(), [&](auto zero) {
                      using T = decltype(zero);
                      const T* gd = g.data<T>();
                      k::lstm_gates_backward(B, H, gd, gd + B * H, acts.data<T>(), cp.data<T>(), dG.data<T>(),
                                             dcp.defined() ? dcp.data<T>() : nullptr);
                    });
                  };
                  if (grad_enabled()) return recorded_step("LstmGatesBackwardBackward", false, G, cp, g, B, H, need, kernel);
                  Tensor dG = empty({B, 4 * H}, g.dtype()), dcp = need[1] ? empty({B, H}, g.dtype()) : Tensor();
                  kernel(dG, dcp);
                  return std::vector<Tensor>{need[0] ? dG : Tensor(), dcp};
                }, Backward::Differentiable);
}

Tensor lstm_output(const Tensor& o, const Tensor& y) {
  check(o.defined() && y.defined(), "lstm_output: o and y must be defined tensors");
  if (o.shape() != y.shape())
    throw Error("lstm_output: expected o and y of one shape, got " + shape_str(o.shape()) + " and " +
                shape_str(y.shape()));
  if (o.dtype() != y.dtype())
    throw Error("lstm_output: expected o and y of one dtype, got " + dtype_name(o.dtype()) + " and " +
                dtype_name(y.dtype()));
  Tensor h = empty_like(o);
  dispatch(o.dtype(), [&](auto zero) {
    using T = decltype(zero);
    k::lstm_output_forward(o.numel(), o.data<T>(), y.data<T>(), h.data<T>());
  });
  return record("LstmOutputBackward", h, {o, y}, [o = saved(o), y = saved(y)](const Tensor& g, const Needs& need) {
    const int64_t n = o.numel();
    const auto kernel = [&](const Tensor& d_o, const Tensor& dy) {
      dispatch(g.dtype(), [&](auto zero) {
        using T = decltype(zero);
        k::lstm_output_backward(n, g.data<T>(), o.data<T>(), y.data<T>(), d_o.data<T>(), dy.data<T>());
      });
    };
    if (!grad_enabled()) {
      Tensor d_o = empty_like(o), dy = empty_like(y);
      kernel(d_o, dy);
      return std::vector<Tensor>{d_o, dy};
    }
    // A create_graph pass: [d_o | dy] from the kernel as one recorded op of {o, y, g}, its backward
    // lstm_grad::output_double_backward (per element in double, or of recorded ops under grad mode).
    Tensor packed = empty({2 * n}, o.dtype());
    const auto parts = [n, s = o.shape()](const Tensor& p) {
      return std::pair{reshape(narrow(p, 0, n), s), reshape(narrow(p, n, n), s)};
    };
    {
      const auto [d_o, dy] = parts(packed);
      kernel(d_o, dy);
    }
    packed = record("LstmOutputBackwardBackward", packed, {o, y, g},
                    [o, y, g = saved(g), parts](const Tensor& gp, const Needs& nd) {
                      const auto [a_o, a_y] = parts(gp);
                      return output_grads(o, y, g, a_o, a_y, nd);
                    },
                    Backward::Differentiable);
    const auto [d_o, dy] = parts(packed);
    return std::vector<Tensor>{need[0] ? d_o : Tensor(), need[1] ? dy : Tensor()};
  }, Backward::Differentiable);
}

}  // namespace normlab::autograd
