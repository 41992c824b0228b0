// One LSTM layer's recurrence over all its time steps as one differentiable op: per step the hidden
// GEMM and the fused cell (autograd/kernels/lstm.h). The batch's rows are independent through the
// whole recurrence, so parts of the rows run on their own threads, each through every step, with no
// synchronization between steps (a step's work alone is too small to share between cores).
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

}  // namespace normlab::autograd
