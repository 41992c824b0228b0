// LSTM: parameter setup with PyTorch's names and init, input checks, and the layer-by-layer loop (each
// layer's input projection and time steps one op, autograd::lstm_layer).
#include "nn/lstm.h"

#include <cmath>
#include <vector>

#include "nn/init.h"

namespace normlab::nn {

using autograd::dtype_name;
using autograd::shape_str;

LSTM::LSTM(int64_t input_size, int64_t hidden_size, Generator& gen, const LSTMOptions& o)
    : input_size_(input_size), hidden_size_(hidden_size), o_(o) {
  if (input_size < 1 || hidden_size < 1 || o.num_layers < 1)
    throw Error("LSTM: expected input_size, hidden_size and num_layers >= 1, got input_size=" +
                std::to_string(input_size) + ", hidden_size=" + std::to_string(hidden_size) +
                ", num_layers=" + std::to_string(o.num_layers));
  const int64_t H = hidden_size;
  const double bound = 1 / std::sqrt(static_cast<double>(H));
  for (int64_t k = 0; k < o.num_layers; ++k) {
    const std::string s = "_l" + std::to_string(k);
    Layer l;
    l.w_ih = register_parameter("weight_ih" + s, autograd::empty({4 * H, k == 0 ? input_size : H}, o.dtype));
    l.w_hh = register_parameter("weight_hh" + s, autograd::empty({4 * H, H}, o.dtype));
    if (o.bias) {
      l.b_ih = register_parameter("bias_ih" + s, autograd::empty({4 * H}, o.dtype));
      l.b_hh = register_parameter("bias_hh" + s, autograd::empty({4 * H}, o.dtype));
    }
    layers_.push_back(l);
  }
  // PyTorch's reset_parameters: every parameter in order, U(-1/sqrt(H), 1/sqrt(H)).
  for (const Tensor& p : parameters()) init::uniform_(p, -bound, bound, gen);
}

Tensor lstm_time_major_input(const std::string& who, const Tensor& x, const Tensor& h0, const Tensor& c0,
                             int64_t input_size, int64_t hidden_size, int64_t num_layers, bool batch_first,
                             DType dtype) {
  const std::string layout = batch_first ? "(B, T, " : "(T, B, ";
  if (!x.defined() || x.dim() != 3 || x.size(2) != input_size)
    throw Error(who + ": expected input of shape " + layout + std::to_string(input_size) + "), got " +
                (x.defined() ? shape_str(x.shape()) : std::string("an undefined tensor")));
  if (x.dtype() != dtype)
    throw Error(who + ": the input is " + dtype_name(x.dtype()) + " but the parameters are " + dtype_name(dtype));
  const Tensor xt = batch_first ? autograd::transpose(x, 0, 1) : x;
  const int64_t B = xt.size(1);
  if (xt.size(0) < 1) throw Error(who + ": expected a sequence of at least one step, got input of shape " + shape_str(x.shape()));
  for (const auto& [state, name] : {std::pair{h0, "h0"}, std::pair{c0, "c0"}}) {
    if (!state.defined()) continue;
    const Shape want = {num_layers, B, hidden_size};
    if (state.shape() != want)
      throw Error(who + ": expected " + name + " of shape " + shape_str(want) + " (num_layers, batch, hidden_size), got " +
                  shape_str(state.shape()));
    if (state.dtype() != dtype)
      throw Error(who + ": " + name + " is " + dtype_name(state.dtype()) + " but the input is " + dtype_name(dtype));
  }
  return xt;
}

Tensor LSTM::forward(const Tensor& x) { return forward_with_state(x).output; }

LSTMOutput LSTM::forward_with_state(const Tensor& x, const Tensor& h0, const Tensor& c0) {
  using namespace autograd;
  // Time-major inside: each step's rows (B, *) are then contiguous, a view of dim 0.
  const Tensor xt = lstm_time_major_input(repr(), x, h0, c0, input_size_, hidden_size_, o_.num_layers, o_.batch_first,
                                          layers_[0].w_ih.dtype());
  const int64_t T = xt.size(0);

  Tensor seq = xt;  // (T, B, in): the current layer's input sequence
  std::vector<Tensor> h_last, c_last;
  for (int64_t k = 0; k < o_.num_layers; ++k) {
    const Layer& l = layers_[k];
    // The input projections (T B, in) x W_ih^T + (b_ih + b_hh) and all T steps in one op: out
    // (T + 1, B, H) holds h_0 .. h_{T-1}, then c_{T-1}.
    const Tensor bias = o_.bias ? l.b_ih + l.b_hh : Tensor();
    const Tensor out = lstm_layer(seq, l.w_ih, bias, l.w_hh, h0.defined() ? select(h0, 0, k) : Tensor(),
                                  c0.defined() ? select(c0, 0, k) : Tensor());
    seq = narrow(out, 0, 0, T);  // (T, B, H)
    h_last.push_back(select(out, 0, T - 1));
    c_last.push_back(select(out, 0, T));
  }
  return {o_.batch_first ? transpose(seq, 0, 1) : seq, stack(h_last, 0), stack(c_last, 0)};
}

std::string LSTM::repr() const {
  std::string r = "LSTM(" + std::to_string(input_size_) + ", " + std::to_string(hidden_size_);
  if (o_.num_layers != 1) r += ", num_layers=" + std::to_string(o_.num_layers);
  if (!o_.bias) r += ", bias=False";
  if (o_.batch_first) r += ", batch_first=True";
  return r + ")";
}

}  // namespace normlab::nn
