// LayerNormLSTM: parameters and LayerNorm children, input checks, and the loop over layers (one input
// GEMM and LayerNorm per layer, then all the steps in one op: autograd::ln_lstm_recurrence).
#include "nn/ln_lstm.h"

#include <cmath>

#include "base/format.h"
#include "nn/init.h"

namespace normlab::nn {

using autograd::dtype_name;
using autograd::shape_str;

LayerNormLSTM::LayerNormLSTM(int64_t input_size, int64_t hidden_size, Generator& gen, const LayerNormLSTMOptions& o)
    : input_size_(input_size), hidden_size_(hidden_size), o_(o) {
  if (input_size < 1 || hidden_size < 1 || o.num_layers < 1)
    throw Error("LayerNormLSTM: expected input_size, hidden_size and num_layers >= 1, got input_size=" +
                std::to_string(input_size) + ", hidden_size=" + std::to_string(hidden_size) +
                ", num_layers=" + std::to_string(o.num_layers));
  const int64_t H = hidden_size;
  for (int64_t k = 0; k < o.num_layers; ++k) {
    const std::string s = "_l" + std::to_string(k);
    Layer l;
    l.w_ih = register_parameter("weight_ih" + s, autograd::empty({4 * H, k == 0 ? input_size : H}, o.dtype));
    l.w_hh = register_parameter("weight_hh" + s, autograd::empty({4 * H, H}, o.dtype));
    l.b = register_parameter("bias" + s, autograd::empty({4 * H}, o.dtype));
    layers_.push_back(l);
  }
  // As nn::LSTM: the layers' own parameters in order, U(-1/sqrt(H), 1/sqrt(H)).
  const double bound = 1 / std::sqrt(static_cast<double>(H));
  for (const Tensor& p : parameters()) init::uniform_(p, -bound, bound, gen);
  for (int64_t k = 0; k < o.num_layers; ++k) {
    const std::string s = "_l" + std::to_string(k);
    Layer& l = layers_[k];
    l.ln_ih = register_module("ln_ih" + s, std::make_shared<LayerNorm>(Shape{4 * H}, o.eps, true, false, o.dtype));
    l.ln_hh = register_module("ln_hh" + s, std::make_shared<LayerNorm>(Shape{4 * H}, o.eps, true, false, o.dtype));
    l.ln_c = register_module("ln_c" + s, std::make_shared<LayerNorm>(Shape{H}, o.eps, true, true, o.dtype));
  }
}

Tensor LayerNormLSTM::forward(const Tensor& x) { return forward_with_state(x).output; }

LSTMOutput LayerNormLSTM::forward_with_state(const Tensor& x, const Tensor& h0, const Tensor& c0) {
  using namespace autograd;
  const Tensor xt = lstm_time_major_input(repr(), x, h0, c0, input_size_, hidden_size_, o_.num_layers, o_.batch_first,
                                          layers_[0].w_ih.dtype());
  const int64_t T = xt.size(0), B = xt.size(1), H = hidden_size_;
  const double eps = o_.eps;

  Tensor seq = xt;
  std::vector<Tensor> h_last, c_last;
  for (int64_t k = 0; k < o_.num_layers; ++k) {
    const Layer& l = layers_[k];
    // LN_ih(x W_ih^T) + b for all T steps: the bias is the LayerNorm's shift.
    const Tensor xp = reshape(layer_norm(linear(reshape(seq, {T * B, seq.size(2)}), l.w_ih), {4 * H},
                                         l.ln_ih->weight(), l.b, eps),
                              {T, B, 4 * H});
    // All T steps in one op: out (T + 1, B, H) holds h_0 .. h_{T-1}, then c_{T-1}. Without h0 the
    // start is zero and the first step skips the hidden term (LN_hh(0) = 0).
    const Tensor out = ln_lstm_recurrence(xp, l.w_hh, l.ln_hh->weight(), l.ln_c->weight(), l.ln_c->bias(),
                                          h0.defined() ? select(h0, 0, k) : Tensor(),
                                          c0.defined() ? select(c0, 0, k) : Tensor(), eps);
    seq = narrow(out, 0, 0, T);  // (T, B, H)
    h_last.push_back(select(out, 0, T - 1));
    c_last.push_back(select(out, 0, T));
  }
  return {o_.batch_first ? transpose(seq, 0, 1) : seq, stack(h_last, 0), stack(c_last, 0)};
}

std::string LayerNormLSTM::repr() const {
  std::string r = "LayerNormLSTM(" + std::to_string(input_size_) + ", " + std::to_string(hidden_size_);
  if (o_.num_layers != 1) r += ", num_layers=" + std::to_string(o_.num_layers);
  if (o_.batch_first) r += ", batch_first=True";
  if (o_.eps != 1e-5) r += ", eps=" + base::py_float(o_.eps);
  return r + ")";
}

}  // namespace normlab::nn
