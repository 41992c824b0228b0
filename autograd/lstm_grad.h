// The LSTM steps' double backward written out: the vector-Jacobian product of each step's backward
// formula, once, over a value type V: double (one element, the fused loop of a pass that
// differentiates no further) or Tensor (recorded ops, so a pass can differentiate it again).
#pragma once
#include <cmath>

#include "autograd/elementwise.h"
#include "autograd/shape_ops.h"

namespace normlab::autograd::lstm_grad {

inline double sigmoid_of(double x) { return 1 / (1 + std::exp(-x)); }
inline double tanh_of(double x) { return std::tanh(x); }
inline Tensor sigmoid_of(const Tensor& x) { return sigmoid(x); }
inline Tensor tanh_of(const Tensor& x) { return tanh(x); }

/// One step's inputs: the pre-activations of the four gates, c_prev, and the gradients that reached
/// the step's outputs: (dh, dc) for the cell (h = o tanh(c), c), (d_o, dc) for the gates half (o, c).
template <class V>
struct StepIn {
  V Gi, Gf, Gg, Go, cp, d1, dc;  // d1: dh (cell) or d_o (gates)
};

/// The cotangents of the step's first derivatives dG = [dGi | dGf | dGg | dGo] and dc_prev.
template <class V>
struct StepCot {
  V ai, af, ag, ao, acp;
};

/// The gradients of L = <ai, dGi> + <af, dGf> + <ag, dGg> + <ao, dGo> + <acp, dc_prev> with respect
/// to the step's inputs.
template <class V>
struct StepGrad {
  V Gi, Gf, Gg, Go, cp, d1, dc;
};

/// With i, f, o = sigmoid(G.), g = tanh(Gg), s. = sigmoid' = .(1 - .), ug = 1 - g^2, and for the
/// cell c = f cp + i g, t = tanh(c), u = 1 - t^2, dct = dc + dh o u (the gates half: dct = dc, no t),
/// the first derivatives are
///   dGi = dct g si, dGf = dct cp sf, dGg = dct i ug, dGo = dh t so (gates: d_o so), dc_prev = dct f.
/// Their vector-Jacobian product, by the chain rule through dct and t:
///   Q   = ai g si + af cp sf + ag i ug + acp f                 (= dL/d dct)
///   d/d dc = Q,   d/d dh = Q o u + ao t so   (gates: d/d d_o = ao so)
///   Lt  = ao dh so - 2 Q dh o t,  Lc = Lt u                     (gates: Lc = 0)
///   Li  = dct (ai g (1 - 2i) + ag ug) + Lc g
///   Lg  = dct (ai si - 2 ag i g) + Lc i
///   Lf  = dct (af cp (1 - 2f) + acp) + Lc cp
///   Lo  = ao dh t (1 - 2o) + Q dh u                              (gates: ao d_o (1 - 2o))
///   d/d cp = dct af sf + Lc f,   d/d G. = L. s. (d/d Gg = Lg ug).
template <class V>
StepGrad<V> step_double_backward(bool cell, const StepIn<V>& in, const StepCot<V>& a) {
  const V i = sigmoid_of(in.Gi), f = sigmoid_of(in.Gf), g = tanh_of(in.Gg), o = sigmoid_of(in.Go);
  const V si = i * (1.0 - i), sf = f * (1.0 - f), so = o * (1.0 - o), ug = 1.0 - g * g;
  const V Q = a.ai * g * si + a.af * in.cp * sf + a.ag * i * ug + a.acp * f;
  StepGrad<V> r;
  V dct = in.dc, Lc, Lo;
  if (cell) {
    const V t = tanh_of(f * in.cp + i * g), u = 1.0 - t * t, dh = in.d1;
    dct = in.dc + dh * o * u;
    r.d1 = Q * o * u + a.ao * t * so;
    Lc = (a.ao * dh * so - 2.0 * Q * dh * o * t) * u;
    Lo = a.ao * dh * t * (1.0 - 2.0 * o) + Q * dh * u;
  } else {
    r.d1 = a.ao * so;
    Lo = a.ao * in.d1 * (1.0 - 2.0 * o);
  }
  V Li = dct * (a.ai * g * (1.0 - 2.0 * i) + a.ag * ug), Lg = dct * (a.ai * si - 2.0 * a.ag * i * g);
  V Lf = dct * (a.af * in.cp * (1.0 - 2.0 * f) + a.acp), Lcp = dct * a.af * sf;
  if (cell) Li = Li + Lc * g, Lg = Lg + Lc * i, Lf = Lf + Lc * in.cp, Lcp = Lcp + Lc * f;
  r.Gi = Li * si, r.Gf = Lf * sf, r.Gg = Lg * ug, r.Go = Lo * so, r.cp = Lcp, r.dc = Q;
  return r;
}

/// lstm_output's: h = o tanh(y), d_o = dh t, dy = dh o u (t = tanh(y), u = 1 - t^2). For cotangents
/// (a_o, a_y) of (d_o, dy): d/d dh = a_o t + a_y o u, d/d o = a_y dh u, d/d y = dh (a_o - 2 a_y o t) u.
template <class V>
void output_double_backward(const V& o, const V& y, const V& dh, const V& a_o, const V& a_y, V& g_o, V& g_y,
                            V& g_dh) {
  const V t = tanh_of(y), u = 1.0 - t * t;
  g_dh = a_o * t + a_y * o * u;
  g_o = a_y * dh * u;
  g_y = dh * (a_o - 2.0 * a_y * o * t) * u;
}

/// The gates' first derivative in recorded ops (kernels/lstm.h's formula), for the create_graph
/// backwards that write the steps out: i, f, g, o the activations, cp = c_prev, dct the gradient of
/// c and d_o that of o, all (B, H). Returns dG = [dct g i (1 - i) | dct cp f (1 - f) |
/// dct i (1 - g^2) | d_o o (1 - o)] (B, 4H); dc_prev is dct f.
inline Tensor gates_grad(const Tensor& dct, const Tensor& d_o, const Tensor& i, const Tensor& f, const Tensor& g,
                         const Tensor& o, const Tensor& cp) {
  return cat({dct * g * i * (1.0 - i), dct * cp * f * (1.0 - f), dct * i * (1.0 - g * g), d_o * o * (1.0 - o)}, 1);
}

}  // namespace normlab::autograd::lstm_grad
