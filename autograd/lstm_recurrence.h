// One LSTM layer's recurrence over all its time steps as one differentiable op, with or without the
// input projection before it: per step the hidden GEMM and the fused cell (autograd/kernels/lstm.h).
// The batch's rows are independent through the whole recurrence, so parts of the rows run on their
// own threads, each through every step, with no synchronization between steps (a step's work alone
// is too small to share between cores).
#pragma once
#include "autograd/tensor.h"

namespace normlab::autograd {

/// xp (T, B, 4H): each step's input projection x_t W_ih^T + b_ih + b_hh, blocks [i | f | g | o] of
/// H per row (PyTorch's order); w_hh (4H, H); h0 and c0 (B, H), or undefined for zeros; one dtype.
/// For t = 0 .. T-1, with h_{-1} = h0 and c_{-1} = c0:
///   G_t = xp_t + h_{t-1} W_hh^T,  i = sigmoid(G_i), f = sigmoid(G_f), g = tanh(G_g), o = sigmoid(G_o),
///   c_t = f c_{t-1} + i g,  h_t = o tanh(c_t).
/// Returns (T + 1, B, H): rows 0 .. T-1 are h_0 .. h_{T-1}, row T is c_{T-1} (read them with narrow
/// and select). The values are those of the step-by-step composition (xp_t + linear(h, w_hh), then
/// lstm_cell), except that W_hh's gradient is one product over all steps (K = T B) rather than a sum
/// of T products (the same sum in another order). W_hh always gets a gradient (zeros when T = 1
/// without h0). From 16 rows on, W_hh is packed for the GEMM once per forward and once per backward
/// (kernels::gemm_pack_b), not at every step. Results do not depend on the thread count: from 2 x 16
/// rows on, every part's products take the blocked GEMM (kernels/gemm.h), whose sums do not depend
/// on the rows' split. A create_graph backward recomputes the steps with recorded ops, so it can be
/// differentiated again.
Tensor lstm_recurrence(const Tensor& xp, const Tensor& w_hh, const Tensor& h0, const Tensor& c0);

/// A whole LSTM layer: the input projection and the recurrence as one op. x (T, B, I), w_ih
/// (4H, I), bias (4H) (b_ih + b_hh) or undefined, w_hh (4H, H), h0 and c0 (B, H) or undefined; one
/// dtype. Returns lstm_recurrence(xp, w_hh, h0, c0) for xp = x W_ih^T + bias (T, B, 4H), the
/// composition's values (W_ih's gradient and the bias's are, as linear's, one product and one sum
/// over all T B rows). From 2 x 16 rows on, each part of the rows computes its own rows of xp at
/// each step, and of x's gradient, so that they never move between cores (the projection alone,
/// a product of few multiply-adds per byte, is not worth splitting, and the part that reads a row
/// would otherwise get it from the core that wrote it); fewer rows are projected as one product
/// over all T B rows. Results do not depend on the thread count; a create_graph backward records
/// the projection and the recurrence's steps, so it can be differentiated again.
Tensor lstm_layer(const Tensor& x, const Tensor& w_ih, const Tensor& bias, const Tensor& w_hh, const Tensor& h0,
                  const Tensor& c0);

}  // namespace normlab::autograd
