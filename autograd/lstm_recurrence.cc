// The LSTM recurrence op: checks, the forward and backward of parts of the batch's rows through all
// steps (one parallel job each way), W_hh's gradient as one product, and the create_graph backward
// of recorded ops.
#include "autograd/lstm_recurrence.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/lstm.h"
#include "autograd/kernels/reduce.h"
#include "autograd/lstm_grad.h"
#include "autograd/lstm_rows.h"
#include "autograd/matmul.h"
#include "autograd/reduce.h"
#include "autograd/shape_ops.h"

namespace normlab::autograd {

namespace k = kernels;
using lstm_rows::Dims;

namespace {

// lstm_layer's input projection, run by each part on its own rows at each step (so that they are
// in its cache when the step reads them), when the rows are split: x (T, B, I), w W_ih (4H, I) as
// lstm_rows::packed_w_ih gives it for the pass, bias (4H) or null; the forward writes xp (T, B, 4H),
// the backward dx (T, B, I) (null: not wanted).
template <typename T>
struct Projection {
  const T* x = nullptr;
  const T* w = nullptr;
  const T* bias = nullptr;
  int64_t I = 0;
  T* xp = nullptr;
  T* dx = nullptr;
};

// The forward of rows r0 .. r1-1 through all steps. xp (T, B, 4H), w (4H, H) (or packed by
// lstm_rows::packed_w for the forward), h0 (B, H) or null,
// c0 (B, H) (zeros when the op got none); writes acts (T, B, 4H), cs (T, B, H) = c_0 .. c_{T-1},
// out (T + 1, B, H); G (B, 4H) is scratch. With a projection p, each step's xp rows are first
// computed into p->xp (= xp).
template <typename T>
void forward_rows(const Dims& d, const T* xp, const T* w, const T* h0, const T* c0, T* G, T* acts, T* cs, T* out,
                  int64_t r0, int64_t r1, const Projection<T>* p = nullptr) {
  const int64_t B = d.B, H = d.H, G4 = 4 * H, n = r1 - r0;
  for (int64_t t = 0; t < d.T; ++t) {
    const int64_t at = t * B + r0;  // the part's first row at step t
    if (p) lstm_rows::input_forward(d, p->I, n, p->x + at * p->I, p->w, p->bias, p->xp + at * G4);
    const T* h_prev = t == 0 ? (h0 ? h0 + r0 * H : nullptr) : out + (at - B) * H;
    const T* gates = xp + at * G4;
    if (h_prev) {  // G (n, 4H) = h_{t-1} (n, H) W_hh^T + xp_t: the residual added to the product's sums
      lstm_rows::hidden_forward(d, n, h_prev, w, gates, G + r0 * G4);
      gates = G + r0 * G4;
    }
    const T* c_prev = t == 0 ? c0 + r0 * H : cs + (at - B) * H;
    k::lstm_cell_forward(n, H, gates, c_prev, acts + at * G4, cs + at * H, out + at * H);
  }
  std::memcpy(out + (d.T * B + r0) * H, cs + ((d.T - 1) * B + r0) * H, static_cast<size_t>(n * H) * sizeof(T));
}

// The backward of rows r0 .. r1-1 through all steps, t = T-1 down to 0, from g (T + 1, B, H) (the
// gradients of h_0 .. h_{T-1} and of c_{T-1}):
//   dh_t = g_t + dG_{t+1} W_hh (g_{T-1} alone at the last step),  dc_{T-1} = g_T,
//   the cell's backward: dG_t and dc_{t-1} (kernels/lstm.h),
// and at the end dh0 = dG_0 W_hh, dc0 = dc_{-1} where wanted (null: not). Writes dG (T, B, 4H) (the
// gradient of xp); dh, dc, dc_next (B, H) are scratch; w as lstm_rows::packed_w gives it for the backward.
// With a projection p whose dx is wanted, each step's dx rows follow from its dG rows (p->w packed
// for the backward).
template <typename T>
void backward_rows(const Dims& d, const T* g, const T* w, const T* acts, const T* cs, const T* c0, T* dG, T* dh,
                   T* dc, T* dc_next, T* dh0, T* dc0, int64_t r0, int64_t r1, const Projection<T>* p = nullptr) {
  const int64_t B = d.B, H = d.H, G4 = 4 * H, n = r1 - r0;
  const size_t bytes = static_cast<size_t>(n * H) * sizeof(T);
  dh += r0 * H, dc += r0 * H, dc_next += r0 * H;
  std::memcpy(dh, g + ((d.T - 1) * B + r0) * H, bytes);
  std::memcpy(dc, g + (d.T * B + r0) * H, bytes);
  for (int64_t t = d.T - 1; t >= 0; --t) {
    const int64_t at = t * B + r0;
    if (t < d.T - 1) {
      lstm_rows::hidden_backward(d, n, dG + (at + B) * G4, w, g + at * H, dh);  // dh = dG_{t+1} W_hh + g_t
    }
    const T* c_prev = t == 0 ? c0 + r0 * H : cs + (at - B) * H;
    k::lstm_cell_backward(n, H, dh, dc, acts + at * G4, c_prev, cs + at * H, dG + at * G4,
                          t > 0 || dc0 ? dc_next : nullptr);
    if (p && p->dx) lstm_rows::input_backward(d, p->I, n, dG + at * G4, p->w, p->dx + at * p->I);
    std::swap(dc, dc_next);
  }
  if (dc0) std::memcpy(dc0 + r0 * H, dc, bytes);
  if (dh0) lstm_rows::hidden_backward(d, n, dG + r0 * G4, w, static_cast<const T*>(nullptr), dh0 + r0 * H);
}

// The gradients in a create_graph pass: the steps recomputed with recorded ops from the saved
// inputs, then the backward above written with them (the cell's derivative as in kernels/lstm.h),
// so that every gradient is a recorded function of the inputs and can be differentiated again.
std::vector<Tensor> recorded_grads(const Tensor& g, const Tensor& xp, const Tensor& w, const Tensor& h0,
                                   const Tensor& c0, const Dims& d, const Needs& need) {
  const int64_t T = d.T, H = d.H;
  const Tensor wt = transpose(w, 0, 1);
  struct Step {
    Tensor h_prev, c_prev, i, f, gg, o, tc;
  };
  std::vector<Step> st(static_cast<size_t>(T));
  Tensor h = h0, c = c0.defined() ? c0 : zeros({d.B, H}, xp.dtype());
  for (int64_t t = 0; t < T; ++t) {
    const Tensor G = h.defined() ? select(xp, 0, t) + matmul(h, wt) : select(xp, 0, t);
    Step& s = st[static_cast<size_t>(t)];
    s.h_prev = h, s.c_prev = c;
    s.i = sigmoid(narrow(G, 1, 0, H)), s.f = sigmoid(narrow(G, 1, H, H));
    s.gg = tanh(narrow(G, 1, 2 * H, H)), s.o = sigmoid(narrow(G, 1, 3 * H, H));
    c = s.f * c + s.i * s.gg;
    s.tc = tanh(c);
    h = s.o * s.tc;
  }
  std::vector<Tensor> dG(static_cast<size_t>(T));
  Tensor dh = select(g, 0, T - 1), dc = select(g, 0, T), dw;
  for (int64_t t = T - 1; t >= 0; --t) {
    const Step& s = st[static_cast<size_t>(t)];
    if (t < T - 1) dh = select(g, 0, t) + matmul(dG[static_cast<size_t>(t + 1)], w);
    const Tensor dct = dc + dh * s.o * (1.0 - s.tc * s.tc);
    dG[static_cast<size_t>(t)] = lstm_grad::gates_grad(dct, dh * s.tc, s.i, s.f, s.gg, s.o, s.c_prev);
    dc = dct * s.f;
    if (need[1] && s.h_prev.defined()) {
      const Tensor term = matmul(transpose(dG[static_cast<size_t>(t)], 0, 1), s.h_prev);
      dw = dw.defined() ? dw + term : term;
    }
  }
  if (need[1] && !dw.defined()) dw = zeros({4 * H, H}, xp.dtype());
  return {need[0] ? stack(dG, 0) : Tensor(), dw,
          need[2] && h0.defined() ? matmul(dG[0], w) : Tensor(), need[3] && c0.defined() ? dc : Tensor()};
}

// The checks both ops share: h0 and c0 (B, H) where defined (`inputs` names the tensors B and H
// come from, for the message), and every defined tensor of `others` of `first`'s dtype.
using Named = std::pair<const Tensor*, const char*>;
void check_states(const std::string& op, const Tensor& h0, const Tensor& c0, int64_t B, int64_t H,
                  const std::string& inputs) {
  for (const auto& [t, name] : {Named{&h0, "h0"}, Named{&c0, "c0"}})
    if (t->defined() && t->shape() != Shape{B, H})
      throw Error(op + ": expected " + name + " of shape " + shape_str({B, H}) + " (batch, hidden) for " + inputs +
                  ", got " + shape_str(t->shape()));
}
void check_dtypes(const std::string& op, const Named& first, std::initializer_list<Named> others) {
  const DType dt = first.first->dtype();
  for (const auto& [t, name] : others)
    if (t->defined() && t->dtype() != dt)
      throw Error(op + ": expected " + name + " to have " + first.second + "'s dtype " + dtype_name(dt) + ", got " +
                  dtype_name(t->dtype()));
}

void check_inputs(const Tensor& xp, const Tensor& w_hh, const Tensor& h0, const Tensor& c0) {
  const std::string op = "lstm_recurrence";
  check(xp.defined() && w_hh.defined(), [&] { return op + ": xp and w_hh must be defined tensors"; });
  const Shape& xs = xp.shape();
  if (xs.size() != 3 || xs[0] < 1 || xs[2] < 4 || xs[2] % 4 != 0)
    throw Error(op + ": expected xp of shape (T, B, 4H) with T >= 1 and H >= 1, got " + shape_str(xs));
  const int64_t B = xs[1], H = xs[2] / 4;
  if (w_hh.shape() != Shape{4 * H, H})
    throw Error(op + ": expected w_hh of shape " + shape_str({4 * H, H}) + " for xp of shape " + shape_str(xs) +
                ", got " + shape_str(w_hh.shape()));
  check_states(op, h0, c0, B, H, "xp of shape " + shape_str(xs));
  check_dtypes(op, {&xp, "xp"}, {{&w_hh, "w_hh"}, {&h0, "h0"}, {&c0, "c0"}});
}

void check_layer_inputs(const Tensor& x, const Tensor& w_ih, const Tensor& bias, const Tensor& w_hh, const Tensor& h0,
                        const Tensor& c0) {
  const std::string op = "lstm_layer";
  check(x.defined() && w_ih.defined() && w_hh.defined(),
        [&] { return op + ": x, w_ih and w_hh must be defined tensors"; });
  const Shape& ws = w_hh.shape();
  if (ws.size() != 2 || ws[1] < 1 || ws[0] != 4 * ws[1])
    throw Error(op + ": expected w_hh of shape (4H, H) with H >= 1, got " + shape_str(ws));
  const int64_t H = ws[1];
  const Shape& xs = x.shape();
  if (xs.size() != 3 || xs[0] < 1 || xs[2] < 1)
    throw Error(op + ": expected x of shape (T, B, I) with T >= 1 and I >= 1, got " + shape_str(xs));
  if (w_ih.shape() != Shape{4 * H, xs[2]})
    throw Error(op + ": expected w_ih of shape " + shape_str({4 * H, xs[2]}) + " for x of shape " + shape_str(xs) +
                " and w_hh of shape " + shape_str(ws) + ", got " + shape_str(w_ih.shape()));
  if (bias.defined() && bias.shape() != Shape{4 * H})
    throw Error(op + ": expected bias of shape " + shape_str({4 * H}) + " for w_hh of shape " + shape_str(ws) +
                ", got " + shape_str(bias.shape()));
  check_states(op, h0, c0, xs[1], H, "x of shape " + shape_str(xs) + " and w_hh of shape " + shape_str(ws));
  check_dtypes(op, {&x, "x"}, {{&w_ih, "w_ih"}, {&bias, "bias"}, {&w_hh, "w_hh"}, {&h0, "h0"}, {&c0, "c0"}});
}

}  // namespace

Tensor lstm_recurrence(const Tensor& xp, const Tensor& w_hh, const Tensor& h0, const Tensor& c0) {
  check_inputs(xp, w_hh, h0, c0);
  const Dims d{xp.size(0), xp.size(1), xp.size(2) / 4};
  const DType dt = xp.dtype();
  const int64_t B = d.B, H = d.H;
  Tensor out = empty({d.T + 1, B, H}, dt), acts = empty({d.T, B, 4 * H}, dt), cs = empty({d.T, B, H}, dt);
  const Tensor c_start = c0.defined() ? c0 : zeros({B, H}, dt);
  {
    const Tensor G = empty({B, 4 * H}, dt);
    const Tensor wp = lstm_rows::packed_w(d, false, w_hh);
    const Tensor& w = wp.defined() ? wp : w_hh;
    dispatch(dt, [&](auto zero) {
      using T = decltype(zero);
      const T* h = h0.defined() ? h0.data<T>() : nullptr;
      lstm_rows::on_row_parts(d, [&](int64_t r0, int64_t r1) {
        forward_rows(d, xp.data<T>(), w.data<T>(), h, c_start.data<T>(), G.data<T>(), acts.data<T>(),
                     cs.data<T>(), out.data<T>(), r0, r1);
      });
    });
  }
  return record("LstmRecurrenceBackward", out, {xp, w_hh, h0, c0},
                [xp = saved(xp), w = saved(w_hh), h0 = saved(h0), c0 = saved(c0), c_start, acts, cs,
                 o = saved_output(out), d](const Tensor& g, const Needs& need) {
                  if (grad_enabled()) return recorded_grads(g, xp, w, h0, c0, d, need);
                  const DType dt = g.dtype();
                  const int64_t B = d.B, H = d.H;
                  Tensor dG = empty({d.T, B, 4 * H}, dt), dw = need[1] ? empty({4 * H, H}, dt) : Tensor();
                  Tensor dh0 = need[2] && h0.defined() ? empty({B, H}, dt) : Tensor();
                  Tensor dc0 = need[3] && c0.defined() ? empty({B, H}, dt) : Tensor();
                  const Tensor dh = empty({B, H}, dt), dc = empty({B, H}, dt), dc_next = empty({B, H}, dt);
                  const Tensor wp = lstm_rows::packed_w(d, true, w);
                  const Tensor& wb = wp.defined() ? wp : w;
                  dispatch(dt, [&](auto zero) {
                    using T = decltype(zero);
                    const auto ptr = [](const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
                    lstm_rows::on_row_parts(d, [&](int64_t r0, int64_t r1) {
                      backward_rows(d, g.data<T>(), wb.data<T>(), acts.data<T>(), cs.data<T>(), c_start.data<T>(),
                                    dG.data<T>(), dh.data<T>(), dc.data<T>(), dc_next.data<T>(), ptr(dh0), ptr(dc0),
                                    r0, r1);
                    });
                    if (dw.defined()) lstm_rows::w_hh_grad(d, dG.data<T>(), o.data<T>(), ptr(h0), dw.data<T>());
                  });
                  return std::vector<Tensor>{need[0] ? dG : Tensor(), dw, dh0, dc0};
                },
                Backward::Differentiable);
}

Tensor lstm_layer(const Tensor& x, const Tensor& w_ih, const Tensor& bias, const Tensor& w_hh, const Tensor& h0,
                  const Tensor& c0) {
  check_layer_inputs(x, w_ih, bias, w_hh, h0, c0);
  const Dims d{x.size(0), x.size(1), w_hh.size(1)};
  const DType dt = x.dtype();
  const int64_t T = d.T, B = d.B, H = d.H, I = x.size(2);
  // The projection's rows as the recurrence's parts read them, each part its own at each step, once
  // the rows are split; otherwise one product over all T B rows first.
  const bool by_parts = lstm_rows::split_rows(d);
  const Tensor xp = empty({T, B, 4 * H}, dt);
  Tensor out = empty({T + 1, B, H}, dt), acts = empty({T, B, 4 * H}, dt), cs = empty({T, B, H}, dt);
  const Tensor c_start = c0.defined() ? c0 : zeros({B, H}, dt);
  {
    const Tensor G = empty({B, 4 * H}, dt);
    const Tensor wp = lstm_rows::packed_w(d, false, w_hh), wip = lstm_rows::packed_w_ih(d, false, w_ih);
    const Tensor &w = wp.defined() ? wp : w_hh, &wi = wip.defined() ? wip : w_ih;
    dispatch(dt, [&](auto zero) {
      using T = decltype(zero);
      const T* h = h0.defined() ? h0.data<T>() : nullptr;
      Projection<T> p;
      p.x = x.data<T>(), p.w = wi.data<T>(), p.bias = bias.defined() ? bias.data<T>() : nullptr, p.I = I;
      p.xp = xp.data<T>();
      if (!by_parts) lstm_rows::input_forward(d, I, d.T * B, p.x, p.w, p.bias, p.xp);
      lstm_rows::on_row_parts(d, [&](int64_t r0, int64_t r1) {
        forward_rows(d, xp.data<T>(), w.data<T>(), h, c_start.data<T>(), G.data<T>(), acts.data<T>(), cs.data<T>(),
                     out.data<T>(), r0, r1, by_parts ? &p : nullptr);
      });
    });
  }
  return record(
      "LstmLayerBackward", out, {x, w_ih, bias, w_hh, h0, c0},
      [x = saved(x), w_ih = saved(w_ih), bias = saved(bias), w = saved(w_hh), h0 = saved(h0), c0 = saved(c0), c_start,
       acts, cs, o = saved_output(out), d, I, by_parts](const Tensor& g, const Needs& need) {
        const int64_t T = d.T, B = d.B, H = d.H;
        if (grad_enabled()) {
          // The projection recorded, then the recurrence's recorded gradients on top of it.
          const Tensor x2 = reshape(x, {T * B, I});
          const Tensor xp = reshape(linear(x2, w_ih, bias), {T, B, 4 * H});
          const std::vector<Tensor> r = recorded_grads(g, xp, w, h0, c0, d, {true, need[3], need[4], need[5]});
          const Tensor dxp = reshape(r[0], {T * B, 4 * H});
          return std::vector<Tensor>{need[0] ? reshape(matmul(dxp, w_ih), {T, B, I}) : Tensor(),
                                     need[1] ? matmul(transpose(dxp, 0, 1), x2) : Tensor(),
                                     need[2] && bias.defined() ? sum(dxp, {0}) : Tensor(), r[1], r[2], r[3]};
        }
        const DType dt = g.dtype();
        Tensor dG = empty({T, B, 4 * H}, dt), dw = need[3] ? empty({4 * H, H}, dt) : Tensor();
        Tensor dx = need[0] ? empty({T, B, I}, dt) : Tensor(), dw_ih = need[1] ? empty({4 * H, I}, dt) : Tensor();
        Tensor db = need[2] && bias.defined() ? empty({4 * H}, dt) : Tensor();
        Tensor dh0 = need[4] && h0.defined() ? empty({B, H}, dt) : Tensor();
        Tensor dc0 = need[5] && c0.defined() ? empty({B, H}, dt) : Tensor();
        const Tensor dh = empty({B, H}, dt), dc = empty({B, H}, dt), dc_next = empty({B, H}, dt);
        const Tensor wp = lstm_rows::packed_w(d, true, w);
        const Tensor wip = dx.defined() ? lstm_rows::packed_w_ih(d, true, w_ih) : Tensor();
        const Tensor &wb = wp.defined() ? wp : w, &wib = wip.defined() ? wip : w_ih;
        dispatch(dt, [&](auto zero) {
          using T = decltype(zero);
          const auto ptr = [](const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
          Projection<T> p;
          p.w = wib.data<T>(), p.I = I, p.dx = ptr(dx);
          lstm_rows::on_row_parts(d, [&](int64_t r0, int64_t r1) {
            backward_rows(d, g.data<T>(), wb.data<T>(), acts.data<T>(), cs.data<T>(), c_start.data<T>(), dG.data<T>(),
                          dh.data<T>(), dc.data<T>(), dc_next.data<T>(), ptr(dh0), ptr(dc0), r0, r1,
                          by_parts ? &p : nullptr);
          });
          if (dx.defined() && !by_parts) lstm_rows::input_backward(d, I, d.T * B, dG.data<T>(), p.w, dx.data<T>());
          if (dw.defined()) lstm_rows::w_hh_grad(d, dG.data<T>(), o.data<T>(), ptr(h0), dw.data<T>());
          // dW_ih (4H, I) = dG^T x over all T B rows, db = the sum of dG's rows: as linear's backward.
          if (dw_ih.defined()) {
            k::GemmShape s;
            s.trans_a = true, s.m = 4 * H, s.n = I, s.k = d.T * B;
            k::gemm(s, dG.data<T>(), x.data<T>(), dw_ih.data<T>());
          }
          if (db.defined()) k::reduce(k::ReduceOp::Sum, 1, d.T * B, 4 * H, dG.data<T>(), db.data<T>());
        });
        return std::vector<Tensor>{dx, dw_ih, db, dw, dh0, dc0};
      },
      Backward::Differentiable);
}

}  // namespace normlab::autograd
