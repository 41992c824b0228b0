// One LSTM time step as one differentiable op (the fused cell kernel, autograd/kernels/lstm.h):
// nn::LSTM runs it once per step and layer. And the step in two halves, for cells that normalize c
// before the output tanh (the LayerNorm LSTM). In a create_graph pass the backward formula is computed
// again with recorded ops (from the gates' activations), so it can be differentiated.
#pragma once
#include "autograd/tensor.h"

namespace normlab::autograd {

/// gates (B, 4H): the summed pre-activations x W_ih^T + b_ih + h_prev W_hh^T + b_hh, blocks
/// [i | f | g | o] of H per row (PyTorch's order); c_prev (B, H), the same dtype. With
/// i = sigmoid(G_i), f = sigmoid(G_f), g = tanh(G_g), o = sigmoid(G_o):
///   c = f c_prev + i g,  h = o tanh(c).
/// Returns the step's state as one tensor (2, B, H): [0] is h, [1] is c, so that one node with one
/// output carries both. select(state, 0, 0) gives h and select(state, 0, 1) gives c (autograd/
/// shape_ops.h), views of the state's storage (dim 0); the gradients of both flow back through the
/// one backward node.
Tensor lstm_cell(const Tensor& gates, const Tensor& c_prev);

/// The first half: gates and c_prev as lstm_cell; returns (2, B, H) with [0] = o = sigmoid(G_o) (the
/// output gate's activation) and [1] = c = f c_prev + i g, to be read with select as lstm_cell's.
Tensor lstm_gates(const Tensor& gates, const Tensor& c_prev);
/// The second half: h = o tanh(y) for o and y of one shape (e.g. y = LN(c)).
Tensor lstm_output(const Tensor& o, const Tensor& y);

}  // namespace normlab::autograd
