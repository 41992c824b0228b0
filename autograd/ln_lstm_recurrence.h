// The LayerNorm LSTM's recurrence (Ba, Kiros and Hinton, 2016) over all its time steps as one
// differentiable op: per step the hidden GEMM, its LayerNorm, the gates and cell update, the cell's
// LayerNorm and the output. Each row's LayerNorms are its own, so as in lstm_recurrence parts of the
// batch's rows run on their own threads, each through every step.
#pragma once
#include "autograd/tensor.h"

namespace normlab::autograd {

/// xp (T, B, 4H): each step's input term (nn::LayerNormLSTM: LN_ih(x_t W_ih^T) + b), blocks
/// [i | f | g | o] of H per row; w_hh (4H, H); gamma_hh (4H): the hidden LayerNorm's gain;
/// gamma_c, beta_c (H): the cell LayerNorm's gain and shift; h0 and c0 (B, H), or undefined for
/// zeros; one dtype; eps > 0. With LN(v) = (v - mean(v)) / sqrt(var(v) + eps) over each row (the
/// biased variance), for t = 0 .. T-1, h_{-1} = h0 and c_{-1} = c0:
///   A_t = h_{t-1} W_hh^T,  G_t = xp_t + gamma_hh LN(A_t)   (G_t = xp_t when h0 is undefined, t = 0),
///   i = sigmoid(G_i), f = sigmoid(G_f), g = tanh(G_g), o = sigmoid(G_o),
///   c_t = f c_{t-1} + i g,  h_t = o tanh(gamma_c LN(c_t) + beta_c).
/// Returns (T + 1, B, H): rows 0 .. T-1 are h_0 .. h_{T-1}, row T is c_{T-1} (as lstm_recurrence).
/// The values are those of the step-by-step composition (xp_t + layer_norm(linear(h, w_hh)), then
/// lstm_gates, layer_norm of c and lstm_output) up to rounding; the gradients of W_hh, gamma_hh,
/// gamma_c and beta_c are each one sum over all steps' rows (zeros for W_hh and gamma_hh when T = 1
/// without h0, as a zero h would give). Results do not depend on the thread count (the row split as
/// lstm_recurrence's; the parameters' sums run over all rows in one fixed order). A create_graph
/// backward recomputes the steps with recorded ops, so it can be differentiated again.
Tensor ln_lstm_recurrence(const Tensor& xp, const Tensor& w_hh, const Tensor& gamma_hh, const Tensor& gamma_c,
                          const Tensor& beta_c, const Tensor& h0, const Tensor& c0, double eps);

}  // namespace normlab::autograd
