// LSTM: a multi-layer long short-term memory network over sequences (PyTorch 1.13's nn.LSTM: its
// parameters, names, init, gate order and repr), one fused cell op per step and layer.
#pragma once
#include <cstdint>
#include <string>

#include "nn/module.h"

namespace normlab::nn {

/// LSTM's options, PyTorch's names and defaults.
struct LSTMOptions {
  int64_t num_layers = 1;  ///< stacked layers: layer k > 0 reads layer k-1's hidden states
  bool bias = true;        ///< b_ih and b_hh
  bool batch_first = false;  ///< input and output (B, T, *) instead of (T, B, *)
  DType dtype = DType::Float32;  ///< PyTorch's factory argument (Float64 for gradient checks)
};

/// The results of LSTM::forward_with_state.
struct LSTMOutput {
  Tensor output;  ///< the last layer's h at every step: (B, T, H) batch_first, else (T, B, H)
  Tensor h_n;     ///< each layer's last h: (num_layers, B, H)
  Tensor c_n;     ///< each layer's last c: (num_layers, B, H)
};

/// Checks an LSTM module's forward arguments and returns x time-major.
/// The checks every LSTM module (LSTM, LayerNormLSTM, BatchNormLSTM) makes of its forward's
/// arguments: x (B, T, input_size) batch_first or (T, B, input_size) with at least one step, in the
/// parameters' dtype; h0 and c0 undefined or (num_layers, B, hidden_size) of that dtype. Errors start
/// with `who` (the module's repr) and name the expected and the given shape. Returns x time-major,
/// (T, B, input_size), a view when it already is.
Tensor lstm_time_major_input(const std::string& who, const Tensor& x, const Tensor& h0, const Tensor& c0,
                             int64_t input_size, int64_t hidden_size, int64_t num_layers, bool batch_first,
                             DType dtype);

/// A multi-layer LSTM, PyTorch's nn.LSTM without dropout, bidirectional or projection variants.
/// For each layer k and step t, with x_t the input (k = 0) or layer k-1's h_t, and H = hidden_size:
///   G = x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh      (B, 4H), blocks [i | f | g | o]
///   i, f, o = sigmoid(G_i, G_f, G_o), g = tanh(G_g)
///   c_t = f c_{t-1} + i g,  h_t = o tanh(c_t)
/// h_0 and c_0 are zeros unless given. Per layer, the input projections of all T steps are one GEMM
/// ((T B, in) x W_ih^T, the biases added there); the steps then run as one op
/// (autograd::lstm_recurrence: per step the GEMM h_{t-1} W_hh^T and the fused cell, parts of the
/// batch's rows on their own threads). No dropout between layers, no bidirectional or
/// projection variants; the input must be batched (3-D).
class LSTM : public Module {
 public:
  /// An LSTM of input_size features per step and H = hidden_size, its parameters drawn from gen.
  /// Parameters per layer k, in PyTorch's order and names: weight_ih_l{k} (4H, input_size for k = 0,
  /// else H), weight_hh_l{k} (4H, H), and with bias bias_ih_l{k}, bias_hh_l{k} (4H), each drawn in
  /// that order from gen as PyTorch's reset_parameters: U(-1/sqrt(H), 1/sqrt(H)). Throws for
  /// input_size < 1, hidden_size < 1 or num_layers < 1.
  LSTM(int64_t input_size, int64_t hidden_size, Generator& gen, const LSTMOptions& o = {});

  /// x (B, T, input_size) batch_first or (T, B, input_size) -> the output sequence (see LSTMOutput).
  Tensor forward(const Tensor& x) override;
  /// The output sequence and the last states; h0 and c0 (num_layers, B, H) are the initial states
  /// (undefined: zeros; each may be given without the other). Wrong ranks, sizes or dtypes are an
  /// error naming the expected and the given shape.
  LSTMOutput forward_with_state(const Tensor& x, const Tensor& h0 = Tensor(), const Tensor& c0 = Tensor());
  /// "LSTM(28, 128, batch_first=True)", "LSTM(5, 4, num_layers=2, bias=False)", as PyTorch prints it.
  std::string repr() const override;

  int64_t input_size() const { return input_size_; }  ///< Features per input step.
  int64_t hidden_size() const { return hidden_size_; }  ///< H, the hidden state size.
  const LSTMOptions& options() const { return o_; }  ///< The options given.
  /// Layer k's parameters (biases undefined without bias).
  const Tensor& weight_ih(int64_t k) const { return layers_.at(k).w_ih; }
  const Tensor& weight_hh(int64_t k) const { return layers_.at(k).w_hh; }  ///< Layer k's W_hh, (4H, H).
  const Tensor& bias_ih(int64_t k) const { return layers_.at(k).b_ih; }  ///< Layer k's b_ih, (4H).
  const Tensor& bias_hh(int64_t k) const { return layers_.at(k).b_hh; }  ///< Layer k's b_hh, (4H).

 private:
  struct Layer {
    Tensor w_ih, w_hh, b_ih, b_hh;
  };
  int64_t input_size_, hidden_size_;
  LSTMOptions o_;
  std::vector<Layer> layers_;
};

}  // namespace normlab::nn
