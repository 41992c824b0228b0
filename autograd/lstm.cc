// The LSTM step op: shape checks, one fused kernel call forward, and its backward recorded right
// below it calling the fused backward kernel.
#include "autograd/lstm.h"

#include <algorithm>
#include <string>
#include <vector>

#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/kernels/lstm.h"
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

// In a create_graph pass the steps' backward formulas (kernels/lstm.h) are computed again from the
// saved inputs with recorded ops, so that their own derivatives flow on.
struct GateActs {
  Tensor i, f, g, o;  // each (B, H)
};

GateActs gate_acts(const Tensor& G, int64_t H) {
  return {sigmoid(narrow(G, 1, 0, H)), sigmoid(narrow(G, 1, H, H)), tanh(narrow(G, 1, 2 * H, H)),
          sigmoid(narrow(G, 1, 3 * H, H))};
}

// dG (B, 4H) from the gradients of the four activations: sigma' = s (1 - s), tanh' = 1 - t^2.
Tensor gates_grad(const GateActs& a, const Tensor& di, const Tensor& df, const Tensor& dg, const Tensor& d_o) {
  const auto dsig = [](const Tensor& d, const Tensor& s) { return mul(d, mul(s, rsub(1, s))); };
  return cat({dsig(di, a.i), dsig(df, a.f), mul(dg, rsub(1, mul(a.g, a.g))), dsig(d_o, a.o)}, 1);
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
                  if (grad_enabled()) {  // the formulas of kernels/lstm.h, recorded
                    const Tensor dh = select(g, 0, 0), dc = select(g, 0, 1);
                    const GateActs a = gate_acts(G, H);
                    const Tensor t = tanh(add(mul(a.f, cp), mul(a.i, a.g)));
                    const Tensor dct = add(dc, mul(mul(dh, a.o), rsub(1, mul(t, t))));
                    return std::vector<Tensor>{
                        need[0] ? gates_grad(a, mul(dct, a.g), mul(dct, cp), mul(dct, a.i), mul(dh, t)) : Tensor(),
                        need[1] ? mul(dct, a.f) : Tensor()};
                  }
                  // g (2, B, H): dh then dc. dG is always computed (dc_prev needs the same pass).
                  Tensor dG = empty({B, 4 * H}, g.dtype()), dcp = need[1] ? empty({B, H}, g.dtype()) : Tensor();
                  dispatch(g.dtype(), [&](auto zero) {
                    using T = decltype(zero);
                    const T* gd = g.data<T>();
                    k::lstm_cell_backward(B, H, gd, gd + B * H, acts.data<T>(), cp.data<T>(),
                                          st.data<T>() + B * H, dG.data<T>(), need[1] ? dcp.data<T>() : nullptr);
                  });
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
                  if (grad_enabled()) {  // the formulas of kernels/lstm.h, recorded
                    const Tensor d_o = select(g, 0, 0), dc = select(g, 0, 1);
                    const GateActs a = gate_acts(G, H);
                    return std::vector<Tensor>{
                        need[0] ? gates_grad(a, mul(dc, a.g), mul(dc, cp), mul(dc, a.i), d_o) : Tensor(),
                        need[1] ? mul(dc, a.f) : Tensor()};
                  }
                  // g (2, B, H): d o then dc.
                  Tensor dG = empty({B, 4 * H}, g.dtype()), dcp = need[1] ? empty({B, H}, g.dtype()) : Tensor();
                  dispatch(g.dtype(), [&](auto zero) {
                    using T = decltype(zero);
                    const T* gd = g.data<T>();
                    k::lstm_gates_backward(B, H, gd, gd + B * H, acts.data<T>(), cp.data<T>(), dG.data<T>(),
                                           need[1] ? dcp.data<T>() : nullptr);
                  });
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
  return record("LstmOutputBackward", h, {o, y}, [o = saved(o), y = saved(y)](const Tensor& g, const Needs&) {
    if (grad_enabled()) {  // do = dh t, dy = dh o (1 - t^2), t = tanh(y), recorded
      const Tensor t = tanh(y);
      return std::vector<Tensor>{mul(g, t), mul(mul(g, o), rsub(1, mul(t, t)))};
    }
    Tensor d_o = empty_like(o), dy = empty_like(y);
    dispatch(g.dtype(), [&](auto zero) {
      using T = decltype(zero);
      k::lstm_output_backward(o.numel(), g.data<T>(), o.data<T>(), y.data<T>(), d_o.data<T>(), dy.data<T>());
    });
    return std::vector<Tensor>{d_o, dy};
  }, Backward::Differentiable);
}

}  // namespace normlab::autograd
