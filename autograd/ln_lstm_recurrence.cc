// The LayerNorm LSTM recurrence op: checks, the forward and backward of parts of the batch's rows
// through all steps (one parallel job each way, autograd/lstm_rows.h), the parameters' gradients as
// sums over all steps' rows, and the create_graph backward of recorded ops.
#include "autograd/ln_lstm_recurrence.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/lstm.h"
#include "autograd/lstm_grad.h"
#include "autograd/kernels/norm.h"
#include "autograd/lstm_rows.h"
#include "autograd/matmul.h"
#include "autograd/norm.h"
#include "autograd/reduce.h"
#include "autograd/shape_ops.h"
#include "base/format.h"

namespace normlab::autograd {

namespace k = kernels;
using lstm_rows::Dims;

namespace {

// Row statistics of a LayerNorm over T B rows (kernels/norm.h): mean, its rounding error, 1 / std.
template <typename T>
struct Stats {
  T *mean, *mean_lo, *rstd;
  Stats at(int64_t row) const { return {mean + row, mean_lo + row, rstd + row}; }
};

// What the forward saves for the backward, all (T, B, *): A_t = h_{t-1} W_hh^T (4H) and its row
// statistics (rows of steps without h unused), the gates' activations (4H), c_t (H) and its
// statistics, y_t = gamma_c LN(c_t) + beta_c (H).
template <typename T>
struct Saved {
  T *A, *acts, *cs, *ys;
  Stats<T> sa, sc;
};

// The tensors behind Saved: A, acts (T, B, 4H); cs, ys (T, B, H); sa, sc (3, T, B): mean, mean_lo,
// rstd of the two LayerNorms' rows.
struct SavedTensors {
  Tensor A, acts, cs, ys, sa, sc;
  SavedTensors(const Dims& d, DType dt)
      : A(empty({d.T, d.B, 4 * d.H}, dt)), acts(empty({d.T, d.B, 4 * d.H}, dt)), cs(empty({d.T, d.B, d.H}, dt)),
        ys(empty({d.T, d.B, d.H}, dt)), sa(empty({3, d.T, d.B}, dt)), sc(empty({3, d.T, d.B}, dt)) {}
  template <typename T>
  Saved<T> ptrs() const {
    const auto stats = [](const Tensor& s) {
      const int64_t rows = s.size(1) * s.size(2);
      return Stats<T>{s.data<T>(), s.data<T>() + rows, s.data<T>() + 2 * rows};
    };
    return Saved<T>{A.data<T>(), acts.data<T>(), cs.data<T>(), ys.data<T>(), stats(sa), stats(sc)};
  }
};

// The forward of rows r0 .. r1-1 through all steps. xp (T, B, 4H), w (4H, H) (or packed by
// lstm_rows::packed_w for the forward), gh (4H), gc, bc (H), h0 (B, H) or null, c0 (B, H) (zeros
// when the op got none); writes sv's arrays and out (T + 1, B, H); G (B, 4H) is scratch.
template <typename T>
void forward_rows(const Dims& d, double eps, const T* xp, const T* w, const T* gh, const T* gc, const T* bc,
                  const T* h0, const T* c0, const Saved<T>& sv, T* G, T* out, int64_t r0, int64_t r1) {
  const int64_t B = d.B, H = d.H, G4 = 4 * H, n = r1 - r0;
  G += r0 * G4;
  for (int64_t t = 0; t < d.T; ++t) {
    const int64_t at = t * B + r0;  // the part's first row at step t
    const T* h_prev = t == 0 ? (h0 ? h0 + r0 * H : nullptr) : out + (at - B) * H;
    const T* gates = xp + at * G4;
    if (h_prev) {  // A (n, 4H) = h_{t-1} W_hh^T; G = gh LN(A) + xp_t, xp_t as each row's shift
      lstm_rows::hidden_forward(d, n, h_prev, w, static_cast<const T*>(nullptr), sv.A + at * G4);
      for (int64_t r = 0; r < n; ++r) {
        const Stats<T> s = sv.sa.at(at + r);
        k::layer_norm_forward(1, G4, sv.A + (at + r) * G4, gh, xp + (at + r) * G4, eps, G + r * G4, s.mean,
                              s.mean_lo, s.rstd);
      }
      gates = G;
    }
    const T* c_prev = t == 0 ? c0 + r0 * H : sv.cs + (at - B) * H;
    T* acts = sv.acts + at * G4;
    k::lstm_gates_forward(n, H, gates, c_prev, acts, sv.cs + at * H);
    const Stats<T> s = sv.sc.at(at);
    k::layer_norm_forward(n, H, sv.cs + at * H, gc, bc, eps, sv.ys + at * H, s.mean, s.mean_lo, s.rstd);
    for (int64_t r = 0; r < n; ++r)  // h = o tanh(y), o the row's last block of acts
      k::lstm_output_forward(H, acts + r * G4 + 3 * H, sv.ys + (at + r) * H, out + (at + r) * H);
  }
  std::memcpy(out + (d.T * B + r0) * H, sv.cs + ((d.T - 1) * B + r0) * H, static_cast<size_t>(n * H) * sizeof(T));
}

// Scratch of the backward, (B, H) each: dh, dc and dc_next (the gradients of h_t, c_t, c_{t-1}),
// d_o (of the o gate's activation) and dcy (of c_t through y_t, then in total).
template <typename T>
struct Scratch {
  T *dh, *dc, *dc_next, *d_o, *dcy;
};

// The backward of rows r0 .. r1-1 through all steps, t = T-1 down to 0, from g (T + 1, B, H) (the
// gradients of h_0 .. h_{T-1} and of c_{T-1}):
//   dh_t = g_t + dA_{t+1} W_hh (g_{T-1} alone at the last step),  dc_{T-1} = g_T,
//   d_o = dh tanh(y),  dy = dh o (1 - tanh(y)^2)                         (kernels/lstm.h's output)
//   dc_t += LN_c's input gradient of dy,  then the gates' backward: dG_t, dc_{t-1}
//   dA_t = LN_hh's input gradient of dG_t (gain gh), where the step had h_{t-1},
// and at the end dh0 = dA_0 W_hh, dc0 = dc_{-1} where wanted (null: not). Writes dG (T, B, 4H) (the
// gradient of xp), dA (T, B, 4H) and dY (T, B, H) (of the y_t); w as lstm_rows::packed_w
// gives it for the backward.
template <typename T>
void backward_rows(const Dims& d, const T* g, const T* w, const T* gh, const T* gc, const T* h0, const T* c0,
                   const Saved<T>& sv, Scratch<T> sc, T* dG, T* dA, T* dY, T* dh0, T* dc0, int64_t r0, int64_t r1) {
  const int64_t B = d.B, H = d.H, G4 = 4 * H, n = r1 - r0;
  const size_t bytes = static_cast<size_t>(n * H) * sizeof(T);
  for (T** p : {&sc.dh, &sc.dc, &sc.dc_next, &sc.d_o, &sc.dcy}) *p += r0 * H;
  std::memcpy(sc.dh, g + ((d.T - 1) * B + r0) * H, bytes);
  std::memcpy(sc.dc, g + (d.T * B + r0) * H, bytes);
  for (int64_t t = d.T - 1; t >= 0; --t) {
    const int64_t at = t * B + r0;
    if (t < d.T - 1) {
      lstm_rows::hidden_backward(d, n, dA + (at + B) * G4, w, g + at * H, sc.dh);  // dh = dA_{t+1} W_hh + g_t
    }
    const T* acts = sv.acts + at * G4;
    for (int64_t r = 0; r < n; ++r)
      k::lstm_output_backward(H, sc.dh + r * H, acts + r * G4 + 3 * H, sv.ys + (at + r) * H, sc.d_o + r * H,
                              dY + (at + r) * H);
    const Stats<T> s = sv.sc.at(at);
    k::layer_norm_backward(n, H, dY + at * H, sv.cs + at * H, s.mean, s.mean_lo, s.rstd, gc, sc.dcy, nullptr,
                           nullptr);
    k::axpy(n * H, 1.0, sc.dc, sc.dcy);  // the total gradient of c_t: through y_t and from step t+1
    const T* c_prev = t == 0 ? c0 + r0 * H : sv.cs + (at - B) * H;
    k::lstm_gates_backward(n, H, sc.d_o, sc.dcy, acts, c_prev, dG + at * G4, t > 0 || dc0 ? sc.dc_next : nullptr);
    if (t > 0 || h0) {
      const Stats<T> a = sv.sa.at(at);
      k::layer_norm_backward(n, G4, dG + at * G4, sv.A + at * G4, a.mean, a.mean_lo, a.rstd, gh, dA + at * G4,
                             nullptr, nullptr);
    }
    std::swap(sc.dc, sc.dc_next);
  }
  if (dc0) std::memcpy(dc0 + r0 * H, sc.dc, bytes);
  if (dh0) lstm_rows::hidden_backward(d, n, dA + r0 * G4, w, static_cast<const T*>(nullptr), dh0 + r0 * H);
}

// A LayerNorm's 1 / std of each row of x, recorded: (B, n) -> (B, 1).
Tensor rstd_of(const Tensor& x, double eps) { return rdiv(1.0, sqrt(var(x, {1}, false, true) + eps)); }

// LayerNorm's input gradient from gy = the gradient of x-hat: r (gy - mean(gy) - xhat mean(gy xhat)).
Tensor ln_input_grad(const Tensor& gy, const Tensor& xhat, const Tensor& r) {
  return r * (gy - mean(gy, {1}, true) - xhat * mean(gy * xhat, {1}, true));
}

// The gradients in a create_graph pass: the steps recomputed with recorded ops from the saved
// inputs, then the backward above written with them, so that every gradient is a recorded function
// of the inputs and can be differentiated again.
std::vector<Tensor> recorded_grads(const Tensor& g, const std::vector<Tensor>& in, const Dims& d, double eps,
                                   const Needs& need) {
  const Tensor &xp = in[0], &w = in[1], &gh = in[2], &gc = in[3], &bc = in[4], &h0 = in[5], &c0 = in[6];
  const int64_t T = d.T, H = d.H;
  const Tensor wt = transpose(w, 0, 1);
  struct Step {
    Tensor h_prev, c_prev, i, f, gg, o, ahat, ra, chat, rc, ty;
  };
  std::vector<Step> st(static_cast<size_t>(T));
  Tensor h = h0, c = c0.defined() ? c0 : zeros({d.B, H}, xp.dtype());
  for (int64_t t = 0; t < T; ++t) {
    Step& s = st[static_cast<size_t>(t)];
    s.h_prev = h, s.c_prev = c;
    Tensor G = select(xp, 0, t);
    if (h.defined()) {
      const Tensor A = matmul(h, wt);
      s.ahat = layer_norm(A, {4 * H}, Tensor(), Tensor(), eps), s.ra = rstd_of(A, eps);
      G = G + gh * s.ahat;
    }
    s.i = sigmoid(narrow(G, 1, 0, H)), s.f = sigmoid(narrow(G, 1, H, H));
    s.gg = tanh(narrow(G, 1, 2 * H, H)), s.o = sigmoid(narrow(G, 1, 3 * H, H));
    c = s.f * c + s.i * s.gg;
    s.chat = layer_norm(c, {H}, Tensor(), Tensor(), eps), s.rc = rstd_of(c, eps);
    s.ty = tanh(gc * s.chat + bc);
    h = s.o * s.ty;
  }
  const auto add_to = [](Tensor& acc, const Tensor& term) { acc = acc.defined() ? acc + term : term; };
  std::vector<Tensor> dG(static_cast<size_t>(T)), dA(static_cast<size_t>(T));
  Tensor dh = select(g, 0, T - 1), dc = select(g, 0, T), dw, dgh, dgc, dbc;
  for (int64_t t = T - 1; t >= 0; --t) {
    const Step& s = st[static_cast<size_t>(t)];
    if (t < T - 1) dh = select(g, 0, t) + matmul(dA[static_cast<size_t>(t + 1)], w);
    const Tensor d_o = dh * s.ty, dy = dh * s.o * (1.0 - s.ty * s.ty);
    add_to(dgc, sum(dy * s.chat, {0}));
    add_to(dbc, sum(dy, {0}));
    const Tensor dct = dc + ln_input_grad(dy * gc, s.chat, s.rc);
    const Tensor dGt = lstm_grad::gates_grad(dct, d_o, s.i, s.f, s.gg, s.o, s.c_prev);
    dG[static_cast<size_t>(t)] = dGt;
    if (s.h_prev.defined()) {
      add_to(dgh, sum(dGt * s.ahat, {0}));
      const Tensor dAt = ln_input_grad(dGt * gh, s.ahat, s.ra);
      dA[static_cast<size_t>(t)] = dAt;
      if (need[1]) add_to(dw, matmul(transpose(dAt, 0, 1), s.h_prev));
    }
    dc = dct * s.f;
  }
  if (need[1] && !dw.defined()) dw = zeros({4 * H, H}, xp.dtype());
  if (need[2] && !dgh.defined()) dgh = zeros({4 * H}, xp.dtype());
  return {need[0] ? stack(dG, 0) : Tensor(),
          need[1] ? dw : Tensor(),
          need[2] ? dgh : Tensor(),
          need[3] ? dgc : Tensor(),
          need[4] ? dbc : Tensor(),
          need[5] && h0.defined() ? matmul(dA[0], w) : Tensor(),
          need[6] && c0.defined() ? dc : Tensor()};
}

void check_inputs(const Tensor& xp, const Tensor& w_hh, const Tensor& gamma_hh, const Tensor& gamma_c,
                  const Tensor& beta_c, const Tensor& h0, const Tensor& c0, double eps) {
  const std::string op = "ln_lstm_recurrence";
  check(xp.defined() && w_hh.defined() && gamma_hh.defined() && gamma_c.defined() && beta_c.defined(),
        [&] { return op + ": xp, w_hh, gamma_hh, gamma_c and beta_c must be defined tensors"; });
  const Shape& xs = xp.shape();
  if (xs.size() != 3 || xs[0] < 1 || xs[2] < 4 || xs[2] % 4 != 0)
    throw Error(op + ": expected xp of shape (T, B, 4H) with T >= 1 and H >= 1, got " + shape_str(xs));
  const int64_t B = xs[1], H = xs[2] / 4;
  const std::pair<const Tensor*, const char*> all[] = {{&w_hh, "w_hh"},       {&gamma_hh, "gamma_hh"},
                                                       {&gamma_c, "gamma_c"}, {&beta_c, "beta_c"},
                                                       {&h0, "h0"},           {&c0, "c0"}};
  const Shape want[] = {{4 * H, H}, {4 * H}, {H}, {H}, {B, H}, {B, H}};
  for (size_t i = 0; i < std::size(all); ++i) {
    const auto& [t, name] = all[i];
    if (t->defined() && t->shape() != want[i])
      throw Error(op + ": expected " + name + " of shape " + shape_str(want[i]) + " for xp of shape " +
                  shape_str(xs) + ", got " + shape_str(t->shape()));
    if (t->defined() && t->dtype() != xp.dtype())
      throw Error(op + ": expected " + name + " to have xp's dtype " + dtype_name(xp.dtype()) + ", got " +
                  dtype_name(t->dtype()));
  }
  if (!(eps >= 0) || !std::isfinite(eps))
    throw Error(op + ": eps must be a finite number >= 0, got " + base::py_float(eps));
}

}  // namespace

Tensor ln_lstm_recurrence(const Tensor& xp, const Tensor& w_hh, const Tensor& gamma_hh, const Tensor& gamma_c,
                          const Tensor& beta_c, const Tensor& h0, const Tensor& c0, double eps) {
  check_inputs(xp, w_hh, gamma_hh, gamma_c, beta_c, h0, c0, eps);
  const Dims d{xp.size(0), xp.size(1), xp.size(2) / 4};
  const DType dt = xp.dtype();
  const int64_t B = d.B, G4 = 4 * d.H;
  Tensor out = empty({d.T + 1, B, d.H}, dt);
  const SavedTensors st(d, dt);
  const Tensor c_start = c0.defined() ? c0 : zeros({B, d.H}, dt);
  {
    const Tensor G = empty({B, G4}, dt);
    const Tensor wp = lstm_rows::packed_w(d, false, w_hh);
    const Tensor& w = wp.defined() ? wp : w_hh;
    dispatch(dt, [&](auto zero) {
      using T = decltype(zero);
      const Saved<T> sv = st.ptrs<T>();
      const T* h = h0.defined() ? h0.data<T>() : nullptr;
      lstm_rows::on_row_parts(d, [&](int64_t r0, int64_t r1) {
        forward_rows(d, eps, xp.data<T>(), w.data<T>(), gamma_hh.data<T>(), gamma_c.data<T>(), beta_c.data<T>(), h,
                     c_start.data<T>(), sv, G.data<T>(), out.data<T>(), r0, r1);
      });
    });
  }
  return record(
      "LnLstmRecurrenceBackward", out, {xp, w_hh, gamma_hh, gamma_c, beta_c, h0, c0},
      [in = std::vector<Tensor>{saved(xp), saved(w_hh), saved(gamma_hh), saved(gamma_c), saved(beta_c), saved(h0),
                                saved(c0)},
       c_start, st, o = saved_output(out), d, eps](const Tensor& g, const Needs& need) {
        if (grad_enabled()) return recorded_grads(g, in, d, eps, need);
        const Tensor &w = in[1], &h0 = in[5], &c0 = in[6];
        const DType dt = g.dtype();
        const int64_t steps = d.T, B = d.B, H = d.H, G4 = 4 * H;
        const Tensor dG = empty({steps, B, G4}, dt), dA = empty({steps, B, G4}, dt), dY = empty({steps, B, H}, dt);
        const Tensor dw = need[1] ? empty({G4, H}, dt) : Tensor(), dgh = need[2] ? empty({G4}, dt) : Tensor();
        const Tensor dgc = need[3] ? empty({H}, dt) : Tensor(), dbc = need[4] ? empty({H}, dt) : Tensor();
        const Tensor dh0 = need[5] && h0.defined() ? empty({B, H}, dt) : Tensor();
        const Tensor dc0 = need[6] && c0.defined() ? empty({B, H}, dt) : Tensor();
        const Tensor scratch = empty({5, B, H}, dt);
        const Tensor wp = lstm_rows::packed_w(d, true, w);
        const Tensor& wb = wp.defined() ? wp : w;
        dispatch(dt, [&](auto zero) {
          using T = decltype(zero);
          const auto ptr = [](const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
          const Saved<T> sv = st.ptrs<T>();
          T* s = scratch.data<T>();
          const Scratch<T> sc{s, s + B * H, s + 2 * B * H, s + 3 * B * H, s + 4 * B * H};
          lstm_rows::on_row_parts(d, [&](int64_t r0, int64_t r1) {
            backward_rows(d, g.data<T>(), wb.data<T>(), in[2].data<T>(), in[3].data<T>(), ptr(h0), c_start.data<T>(),
                          sv, sc, dG.data<T>(), dA.data<T>(), dY.data<T>(), ptr(dh0), ptr(dc0), r0, r1);
          });
          // The parameters' sums over all steps' rows, in one order whatever the split: W_hh's and
          // gamma_hh's over the steps that had h_{t-1} (from t = 1, or 0 with h0).
          if (dw.defined()) lstm_rows::w_hh_grad(d, dA.data<T>(), o.data<T>(), ptr(h0), dw.data<T>());
          if (dgh.defined()) {
            const int64_t t0 = h0.defined() ? 0 : 1, rows = (steps - t0) * B;
            if (rows > 0) {
              const Stats<T> a = sv.sa.at(t0 * B);
              k::layer_norm_backward(rows, G4, dG.data<T>() + t0 * B * G4, sv.A + t0 * B * G4, a.mean, a.mean_lo,
                                     a.rstd, in[2].data<T>(), nullptr, dgh.data<T>(), nullptr);
            } else {
              k::fill(G4, T(0), dgh.data<T>());
            }
          }
          if (dgc.defined() || dbc.defined())
            k::layer_norm_backward(steps * B, H, dY.data<T>(), sv.cs, sv.sc.mean, sv.sc.mean_lo, sv.sc.rstd,
                                   in[3].data<T>(), nullptr, ptr(dgc), ptr(dbc));
        });
        return std::vector<Tensor>{need[0] ? dG : Tensor(), dw, dgh, dgc, dbc, dh0, dc0};
      },
      Backward::Differentiable);
}

}  // namespace normlab::autograd
